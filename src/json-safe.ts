// The one JSON-safe renderer: what a log record, a tool message or a wire payload carries of any
// value a handler or a layer produced, whatever that value is.

import { withoutStackFrames } from './errors.js';

/** Options for `toJsonSafe`. */
export interface JsonSafeOptions {
  /**
   * How deeply to follow nested values; deeper ones become `"[Too deep]"` or are left out.
   * @default 32
   */
  maxDepth?: number;
  /**
   * How an `Error` is rendered: `{ name, message }`, or its message alone. Never its stack.
   * @default 'object'
   */
  errors?: 'object' | 'message';
  /**
   * What stands in for a value that is its own ancestor, one nested too deeply, or one that
   * throws when read: a marker string (`"[Circular]"`, `"[Too deep]"`, its `[object …]` tag),
   * or nothing (the field is left out).
   * @default 'marker'
   */
  unrenderable?: 'marker' | 'omit';
  /**
   * Object keys left out at every depth (e.g. `cause` and `stack` in a log line).
   * @default none
   */
  dropKeys?: ReadonlySet<string>;
}

/**
 * A copy of `value` made only of plain JSON values, which round-trips through `JSON.stringify`
 * unchanged: bigints and non-finite numbers become strings, `toJSON` is honoured (a `Date` is its
 * ISO string), a `Map` becomes an array of `[key, value]` pairs and a `Set` an array, errors lose
 * their stack; functions, symbols and `undefined` are left out of objects (and `null` in arrays),
 * as `JSON.stringify` would. Never throws, whatever getters, `toJSON`s or proxies it meets;
 * `undefined` only for a value JSON has no form for.
 *
 * @example
 * toJsonSafe({ n: 10n, at: new Date(0), error: new Error('x') });
 * // { n: '10', at: '1970-01-01T00:00:00.000Z', error: { name: 'Error', message: 'x' } }
 */
export function toJsonSafe(value: unknown, options: JsonSafeOptions = {}): unknown {
  const settings: Settings = {
    maxDepth: options.maxDepth ?? 32,
    errorsAsMessage: options.errors === 'message',
    markers: options.unrenderable !== 'omit',
    dropKeys: options.dropKeys,
  };
  return render(value, 0, [], settings, true);
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
  } catch {
    // A throwing getter, toJSON or proxy trap: say what it was rather than fail.
    return settings.markers ? Object.prototype.toString.call(value) : undefined;
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
  if (Array.isArray(value)) return value.map((item) => inner(item) ?? null);
  if (value instanceof Map)
    return Array.from(value, ([key, item]) => [inner(key) ?? null, inner(item) ?? null]);
  if (value instanceof Set) return Array.from(value, (item) => inner(item) ?? null);
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    if (settings.dropKeys?.has(key)) continue;
    const item = inner((value as Record<string, unknown>)[key]);
    // defineProperty, so a "__proto__" key stays a plain field and never swaps the prototype.
    if (item !== undefined) {
      Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true });
    }
  }
  return copy;
}
