/**
 * The one JSON-safe renderer, for log records, tool messages and wire payloads.
 * @module
 */

import { describeThrown, withoutStackFrames } from './errors.js';

/** Options for `toJsonSafe`. */
export interface JsonSafeOptions {
  /** How deeply to follow nested values; deeper ones become `"[Too deep]"` or are left out. @default 32 */
  maxDepth?: number;
  /**
   * How an `Error` is rendered: `{ name, message }`, or its message alone. Never its stack.
   * @default 'object'
   */
  errors?: 'object' | 'message';
  /** What replaces a circular, too deep or unreadable value: a marker, or nothing. @default 'marker' */
  unrenderable?: 'marker' | 'omit';
  /** Object keys left out at every depth (e.g. `cause` and `stack` in a log line). @default none */
  dropKeys?: ReadonlySet<string>;
}

/**
 * A copy of `value` made only of plain JSON values, which round-trips through `JSON.stringify`
 * unchanged; never throws (an unreadable field becomes `"[Unreadable: <message>]"`).
 *
 * @example
 * toJsonSafe({ n: 10n, at: new Date(0), error: new Error('x') });
 * // { n: '10', at: '1970-01-01T00:00:00.000Z', error: { name: 'Error', message: 'x' } }
 */
export function toJsonSafe(value: unknown, options: JsonSafeOptions = {}): unknown {
  const settings = settingsOf(options);
  const read = readTop(value, settings);
  return read.ok ? read.value : unreadable(read.error, settings);
}

/**
 * What `readJsonSafe` gives: the JSON-safe copy, or what the value threw when read as a whole.
 * @internal
 */
export type JsonSafeRead = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * `toJsonSafe`, except that a value unreadable as a whole is reported rather than replaced.
 * @internal
 */
export function readJsonSafe(value: unknown, options: JsonSafeOptions = {}): JsonSafeRead {
  return readTop(value, settingsOf(options));
}

function settingsOf(options: JsonSafeOptions): Settings {
  return {
    maxDepth: options.maxDepth ?? 32,
    errorsAsMessage: options.errors === 'message',
    markers: options.unrenderable !== 'omit',
    dropKeys: options.dropKeys,
  };
}

function readTop(value: unknown, settings: Settings): JsonSafeRead {
  if (typeof value !== 'object' || value === null || settings.maxDepth <= 0) {
    return { ok: true, value: render(value, 0, [], settings, true) };
  }
  try {
    return { ok: true, value: renderObject(value, 0, [value], settings, true) };
  } catch (error) {
    return { ok: false, error };
  }
}

const longestReason = 200;

// The marker for a value that threw when read: what it threw, on one line, never a stack frame.
function unreadable(error: unknown, settings: Settings): string | undefined {
  if (!settings.markers) return undefined;
  const reason = describeThrown(error).replace(/\s+/g, ' ').trim() || 'unknown error';
  return `[Unreadable: ${reason.length > longestReason ? `${reason.slice(0, longestReason)}…` : reason}]`;
}

interface Settings {
  readonly maxDepth: number;
  readonly errorsAsMessage: boolean;
  readonly markers: boolean;
  readonly dropKeys: ReadonlySet<string> | undefined;
}

function render(
  value: unknown,
  depth: number,
  ancestors: object[],
  settings: Settings,
  useToJson: boolean,
): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : String(value);
    case 'bigint':
      return value.toString();
    case 'object':
      break;
    default:
      return undefined;
  }
  if (value === null) return null;
  if (ancestors.includes(value)) return settings.markers ? '[Circular]' : undefined;
  if (depth >= settings.maxDepth) return settings.markers ? '[Too deep]' : undefined;
  ancestors.push(value);
  try {
    return renderObject(value, depth, ancestors, settings, useToJson);
  } catch (error) {
    // A throwing toJSON or proxy trap (or a stack too small for a huge maxDepth): say what it
    // threw rather than fail, and let the value's siblings render.
    return unreadable(error, settings);
  } finally {
    ancestors.pop();
  }
}

function renderObject(
  value: object,
  depth: number,
  ancestors: object[],
  settings: Settings,
  useToJson: boolean,
): unknown {
  // What a toJSON returned is rendered as it is, so a toJSON that returns its own object ends.
  const inner = (item: unknown, fromToJson = false) =>
    render(item, depth + 1, ancestors, settings, !fromToJson);
  if (value instanceof Error) {
    const message = withoutStackFrames(String(value.message));
    return settings.errorsAsMessage ? message : { name: value.name, message };
  }
  if (useToJson && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    return inner((value as { toJSON: () => unknown }).toJSON(), true);
  }
  // Each element and field is read on its own, so one throwing getter costs only its own slot.
  const field = (source: object, key: PropertyKey): unknown => {
    try {
      return inner((source as Record<PropertyKey, unknown>)[key]);
    } catch (error) {
      return unreadable(error, settings);
    }
  };
  if (Array.isArray(value)) {
    try {
      return value.map((item) => inner(item) ?? null);
    } catch {
      // An element's getter threw: read them one at a time, so only that one is marked.
      return Array.from({ length: value.length }, (_, i) => field(value, i) ?? null);
    }
  }
  if (value instanceof Map)
    return Array.from(value, ([key, item]) => [inner(key) ?? null, inner(item) ?? null]);
  if (value instanceof Set) return Array.from(value, (item) => inner(item) ?? null);
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    if (settings.dropKeys?.has(key)) continue;
    const item = field(value, key);
    // defineProperty, so a "__proto__" key stays a plain field and never swaps the prototype.
    if (item !== undefined) {
      Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true });
    }
  }
  return copy;
}
