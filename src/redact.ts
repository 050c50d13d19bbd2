/**
 * Redaction: one redactor that replaces secrets (API keys, tokens, private keys) in text and in
 * any JSON-like value with `[REDACTED:<name>]`.
 * @module
 */

import { DispatchError, isDispatchError } from './errors.js';
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
   * Apply the built-in patterns: `sk-…` API keys, AWS `AKIA…`/`ASIA…` key ids, JWTs,
   * `Bearer …` credentials (the word `Bearer` kept), GitHub and Slack tokens, PEM private keys.
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
   * `value` with every string in it redacted: plain objects and arrays are copied only where
   * something changed, an envelope keeps its kind with its message redacted, anything else is
   * returned as it is.
   */
  redactValue<Value>(value: Value): Value;
}

// Each pattern starts with a literal, so the engine skips ahead to where one may match; a token
// pattern then looks behind its literal and matches only where a token starts (not inside a
// longer run of token characters), so each run is scanned from one place: linear in the text.
const token = '[A-Za-z0-9_-]';
const startsToken = (literal: string) => `${literal}(?<!${token}${literal})`;
// A run of token characters taken whole, never given back: a lookahead is atomic, and the
// backreference then consumes what it saw. Without it, a run with no `.` after it would be
// retried at every shorter length.
const wholeRun = (name: string) => `(?=(?<${name}>${token}+))\\k<${name}>`;

const builtinPatterns: readonly (readonly [name: string, source: string])[] = [
  [
    'private_key',
    '-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----[A-Za-z0-9+/=\\s]*(?:-----END[A-Z ]{0,40}PRIVATE KEY-----)?',
  ],
  ['jwt', `${startsToken('eyJ')}${wholeRun('jwt_header')}\\.${wholeRun('jwt_payload')}\\.${token}*`],
  ['api_key', `${startsToken('sk-')}${token}{20,}`],
  ['aws_key', '(?:AKIA|ASIA)(?<![A-Za-z0-9](?:AKIA|ASIA))[A-Z0-9]{16}(?![A-Za-z0-9])'],
  [
    'github_token',
    `(?:${startsToken('gh[pousr]_')}[A-Za-z0-9]{36,}|${startsToken('github_pat_')}[A-Za-z0-9_]{22,})`,
  ],
  ['slack_token', `${startsToken('(?:xox[abposr]|xapp)-')}[A-Za-z0-9-]{10,}`],
  ['bearer', '(?<bearer_word>[Bb]earer\\s{1,8})[A-Za-z0-9._~+/-]{8,}=*'],
];

// One pass for every built-in: the named group that matched names the replacement.
const builtinRegex = new RegExp(
  builtinPatterns.map(([name, source]) => `(?<${name}>${source})`).join('|'),
  'g',
);

function replaceBuiltin(match: string, ...rest: unknown[]): string {
  const groups = rest[rest.length - 1] as Record<string, string | undefined>;
  // `Bearer ` stays: what follows it is the secret.
  if (groups.bearer !== undefined) return `${groups.bearer_word ?? ''}[REDACTED:bearer]`;
  for (const [name] of builtinPatterns) if (groups[name] !== undefined) return `[REDACTED:${name}]`;
  return match;
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
    let redacted = builtins ? text.replace(builtinRegex, replaceBuiltin) : text;
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
  const prototype = Object.getPrototypeOf(value) as unknown;
  if (prototype !== Object.prototype && prototype !== null) return value;
  let copy: Record<string, unknown> | undefined;
  seen.set(value, value);
  for (const key of Object.keys(value)) {
    const field = (value as Record<string, unknown>)[key];
    const redacted = redactIn(field, redact, seen, depth + 1);
    if (redacted === field) continue;
    if (copy === undefined) {
      copy = { ...(value as Record<string, unknown>) };
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

// The same envelope when nothing matched; else a copy with the message redacted and no cause.
function redactEnvelope(envelope: DispatchError, redact: (text: string) => string): DispatchError {
  const message = redact(envelope.message);
  if (message === envelope.message) return envelope;
  return new DispatchError(envelope.kind, message, {
    attempts: envelope.attempts,
    jsonrpcCode: envelope.jsonrpcCode,
    ...(envelope.retryAfterMs === undefined ? {} : { retryAfterMs: envelope.retryAfterMs }),
    ...(envelope.approval === undefined ? {} : { approval: envelope.approval }),
  });
}
