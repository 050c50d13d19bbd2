/**
 * Redaction: one redactor that replaces secrets (API keys, tokens, private keys) in text and in
 * any JSON-like value with `[REDACTED:<name>]`.
 * @module
 */

import { DispatchError, isDispatchError, type ApprovalTicket } from './errors.js';
import { redactBuiltinSecrets } from './secret-scanner.js';
import { optionKeys, rejectUnknownKeys } from './internal/options.js';

/** A pattern of your own: a regular expression, or one with the name its matches are shown by. */
export type RedactPattern =
  | RegExp
  | {
      /** The name in the marker: `[REDACTED:<name>]`. */
      readonly name: string;
      /** What to find (global or not; it is searched globally). */
      readonly pattern: RegExp;
    };

/** Options for `createRedactor`. */
export interface RedactorOptions {
  /**
   * Your own patterns, applied after the built-ins; a plain `RegExp`'s matches read
   * `[REDACTED:custom]`. Keep them linear: no nested quantifiers.
   * @default []
   */
  patterns?: readonly RedactPattern[];
  /**
   * Apply the built-in patterns (docs/policy.md lists them): API keys (`sk-…`), cloud keys (AWS,
   * Google, Azure), JWTs, `Bearer`/`Basic` credentials, GitHub, GitLab, Slack, Stripe, npm, PyPI
   * and Hugging Face tokens, the passwords of `scheme://user:password@` URLs and PEM private keys.
   * @default true
   */
  builtins?: boolean;
}

const redactorOptionKeys = optionKeys<RedactorOptions>({ patterns: true, builtins: true });

/** Replaces secrets in text and values. */
export interface Redactor {
  /** `text` with every match replaced by `[REDACTED:<name>]`. */
  redact(text: string): string;
  /**
   * `value` with every string in it redacted, as every renderer would show it, copied only where
   * something changed: plain objects and arrays field by field; an error (message, stack, cause,
   * its own fields) as an error of its class; a `Map` or `Set` as a new one; a value with `toJSON`
   * (a `URL`, a `Date`) as what `toJSON` returned, redacted; a class instance as a copy with the
   * same prototype. An envelope keeps its kind, `window` and `approval` with its message redacted.
   */
  redactValue<Value>(value: Value): Value;
}

const maxDepth = 64;

/**
 * Makes a redactor: the built-in secret patterns plus yours. A match becomes
 * `[REDACTED:<name>]`. Give it to `createDispatcher(stack, { redact })` and results, envelope
 * messages, model copies, spills and every event are redacted. It finds secrets by their shape:
 * personal data (names, emails) is not recognised.
 *
 * @throws TypeError for a pattern that is not a `RegExp` (or `{ name, pattern }`) or a bad `builtins`.
 * @example
 * const redact = createRedactor({ patterns: [/acme_[a-z0-9]{24}/] });
 * redact.redact('key: sk-abcdefghijklmnopqrstuvwx'); // 'key: [REDACTED:api_key]'
 */
export function createRedactor(options: RedactorOptions = {}): Redactor {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`createRedactor() options must be an object, got ${String(options)}`);
  }
  rejectUnknownKeys('createRedactor', options, redactorOptionKeys);
  const { patterns = [], builtins = true } = options;
  if (typeof builtins !== 'boolean')
    throw new TypeError(`builtins must be a boolean, got ${String(builtins)}`);
  if (!Array.isArray(patterns)) throw new TypeError('patterns must be an array of RegExps');
  const own = patterns.map(ownPattern);
  const redact = (text: string): string => {
    let redacted = builtins ? redactBuiltinSecrets(text) : text;
    for (const { regex, replacement } of own) redacted = redacted.replace(regex, replacement);
    return redacted;
  };
  const redactValue = <Value>(value: Value): Value => redactIn(value, redact, new Map(), 0) as Value;
  return { redact, redactValue };
}

function ownPattern(pattern: RedactPattern, index: number): { regex: RegExp; replacement: string } {
  const [name, regex] =
    pattern instanceof RegExp
      ? ['custom', pattern]
      : typeof pattern === 'object' && pattern !== null
        ? [pattern.name, pattern.pattern]
        : [undefined, undefined];
  if (!(regex instanceof RegExp) || typeof name !== 'string' || !/^[\w.-]{1,64}$/.test(name)) {
    throw new TypeError(
      `patterns[${index}] must be a RegExp or { name, pattern } with a word name, got ${String(pattern)}`,
    );
  }
  // Global, so every match is replaced; sticky would stop at the first gap.
  const flags = regex.flags.includes('g') ? regex.flags.replace('y', '') : `${regex.flags.replace('y', '')}g`;
  return { regex: new RegExp(regex.source, flags), replacement: `[REDACTED:${name}]` };
}

function redactIn(
  value: unknown,
  redact: (text: string) => string,
  seen: Map<object, unknown>,
  depth: number,
): unknown {
  if (typeof value === 'string') return redact(value);
  if (typeof value !== 'object' || value === null) return value;
  const copied = seen.get(value);
  if (copied !== undefined) return copied;
  if (isDispatchError(value)) return redactEnvelope(value, redact);
  // Too deep to walk: the value is still shown, as JSON text that is redacted whole.
  if (depth >= maxDepth) return redactDeep(value, redact);
  if (Array.isArray(value)) return redactArray(value, redact, seen, depth);
  const prototype = Object.getPrototypeOf(value) as object | null;
  if (prototype === Object.prototype || prototype === null) {
    return redactFields(value, prototype, redact, seen, depth);
  }
  return redactInstance(value, prototype, redact, seen, depth);
}

// A value that is not a plain object or array, redacted as the renderers see it: the model's text
// and `toJsonSafe` read an error's name and message, a Map's entries, what `toJSON` returns and
// an instance's own fields; a span reads `JSON.stringify`'s text. Each keeps its kind where it
// can (an error stays an error of its class, a Map a Map); nothing to redact keeps the value.
function redactInstance(
  value: object,
  prototype: object,
  redact: (text: string) => string,
  seen: Map<object, unknown>,
  depth: number,
): unknown {
  // Bytes render as numbers, never as text a pattern could find.
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) return value;
  if (value instanceof String) {
    const text = String(value);
    const redacted = redact(text);
    return redacted === text ? value : redacted;
  }
  if (value instanceof Error) return redactError(value, prototype, redact, seen, depth);
  if (value instanceof Map) return redactMap(value, redact, seen, depth);
  if (value instanceof Set) {
    seen.set(value, value);
    const items = [...value];
    const redacted = redactArray(items, redact, seen, depth);
    return redacted === items ? value : remember(seen, value, new Set(redacted as unknown[]));
  }
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') {
    // What JSON.stringify and toJsonSafe render: the value stays unless that held a secret.
    seen.set(value, value);
    let json: unknown;
    try {
      json = toJSON.call(value);
    } catch {
      // The renderers cannot show it whole either; its own fields are what is left to redact.
      return redactFields(value, prototype, redact, seen, depth);
    }
    const redacted = redactIn(json, redact, seen, depth + 1);
    return redacted === json ? value : remember(seen, value, redacted);
  }
  return redactFields(value, prototype, redact, seen, depth);
}

function remember(seen: Map<object, unknown>, value: object, copy: unknown): unknown {
  seen.set(value, copy);
  return copy;
}

// An object's own enumerable fields redacted, in a copy with the same prototype made only when
// one changed.
function redactFields(
  value: object,
  prototype: object | null,
  redact: (text: string) => string,
  seen: Map<object, unknown>,
  depth: number,
): unknown {
  let copy: Record<string, unknown> | undefined;
  seen.set(value, value);
  for (const key of Object.keys(value)) {
    const field = (value as Record<string, unknown>)[key];
    const redacted = redactIn(field, redact, seen, depth + 1);
    if (redacted === field) continue;
    if (copy === undefined) {
      copy = copyOf(value, prototype);
      seen.set(value, copy);
    }
    Object.defineProperty(copy, key, {
      value: redacted,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return copy ?? value;
}

// A shallow copy: spread for a plain object, so a `__proto__` key stays a field; else each own
// property defined on an object of the same prototype.
function copyOf(value: object, prototype: object | null): Record<string, unknown> {
  if (prototype === Object.prototype) return { ...(value as Record<string, unknown>) };
  const copy = Object.create(prototype) as Record<string, unknown>;
  for (const key of Reflect.ownKeys(value)) {
    const descriptor = Object.getOwnPropertyDescriptor(value, key);
    if (descriptor !== undefined) Object.defineProperty(copy, key, descriptor);
  }
  return copy;
}

// An error's own properties (message, stack, cause and any of its own), enumerable or not: the
// model reads its message, a span its enumerable fields, a log its cause.
function redactError(
  error: Error,
  prototype: object,
  redact: (text: string) => string,
  seen: Map<object, unknown>,
  depth: number,
): unknown {
  seen.set(error, error);
  let copy: Error | undefined;
  const keys = Object.getOwnPropertyNames(error);
  for (const key of keys) {
    const descriptor = Object.getOwnPropertyDescriptor(error, key);
    if (descriptor === undefined || !('value' in descriptor)) continue;
    const redacted = redactIn(descriptor.value, redact, seen, depth + 1);
    if (redacted === descriptor.value) continue;
    if (copy === undefined) {
      copy = copyOf(error, prototype) as unknown as Error;
      seen.set(error, copy);
    }
    Object.defineProperty(copy, key, { ...descriptor, value: redacted });
  }
  return copy ?? error;
}

function redactMap(
  map: Map<unknown, unknown>,
  redact: (text: string) => string,
  seen: Map<object, unknown>,
  depth: number,
): unknown {
  seen.set(map, map);
  let changed = false;
  const entries: [unknown, unknown][] = [];
  for (const [key, item] of map) {
    const redactedKey = redactIn(key, redact, seen, depth + 1);
    const redactedItem = redactIn(item, redact, seen, depth + 1);
    if (redactedKey !== key || redactedItem !== item) changed = true;
    entries.push([redactedKey, redactedItem]);
  }
  return changed ? remember(seen, map, new Map(entries)) : map;
}

function redactArray(
  value: readonly unknown[],
  redact: (text: string) => string,
  seen: Map<object, unknown>,
  depth: number,
): unknown {
  let copy: unknown[] | undefined;
  seen.set(value, value);
  for (let i = 0; i < value.length; i++) {
    const redacted = redactIn(value[i], redact, seen, depth + 1);
    if (redacted === value[i]) continue;
    if (copy === undefined) {
      copy = [...value];
      seen.set(value, copy);
    }
    copy[i] = redacted;
  }
  return copy ?? value;
}

function redactDeep(value: object, redact: (text: string) => string): unknown {
  try {
    const json = JSON.stringify(value);
    return json === undefined ? value : redact(json);
  } catch {
    return '[Unredactable: too deep]';
  }
}

// The same envelope when nothing matched; else a copy with the message (and an approval's reason)
// redacted and no cause.
function redactEnvelope(envelope: DispatchError, redact: (text: string) => string): DispatchError {
  const message = redact(envelope.message);
  const approval = envelope.approval === undefined ? undefined : redactTicket(envelope.approval, redact);
  if (message === envelope.message && approval === envelope.approval) return envelope;
  return new DispatchError(envelope.kind, message, {
    attempts: envelope.attempts,
    jsonrpcCode: envelope.jsonrpcCode,
    ...(envelope.retryAfterMs === undefined ? {} : { retryAfterMs: envelope.retryAfterMs }),
    // `outcome_unknown` says where the outcome was lost: a redacted message must not lose it.
    ...(envelope.window === undefined ? {} : { window: envelope.window }),
    ...(approval === undefined ? {} : { approval }),
  });
}

// The ticket's reason travels further than the message (toJSON, MCP `_meta`, an elicitation
// prompt), so it is redacted too; the token is not text a pattern should touch.
function redactTicket(ticket: ApprovalTicket, redact: (text: string) => string): ApprovalTicket {
  const reason = redact(ticket.reason);
  return reason === ticket.reason ? ticket : { ...ticket, reason };
}
