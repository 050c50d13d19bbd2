/**
 * The one error envelope every failure becomes, and the error a handler throws to ask for a retry.
 * @module
 */

import { maxTimerDelayMs } from './internal/abort.js';

/** The failure kinds this library produces; middleware may add its own strings. */
export type DispatchErrorKind =
  | 'not_found'
  | 'schema'
  | 'timeout'
  | 'transient'
  | 'internal'
  | 'budget_exceeded'
  | 'circuit_open'
  | 'cancelled'
  | 'idempotency_conflict'
  | 'tool_error'
  | 'store_unavailable'
  | 'idempotency_result_unavailable'
  | 'rate_limited'
  | 'overloaded'
  | 'outcome_unknown'
  | 'protocol'
  | 'approval_required'
  | 'approval_denied'
  | 'tool_contract'
  | (string & {});

/**
 * Where an unknown outcome came from: `attempt_timeout` (the attempt ran past its deadline),
 * `handler_unknown` (the handler threw `OutcomeUnknownError`), `connection_lost` (the connection
 * to a remote tool, such as an MCP server or its process, was lost while the call ran),
 * `lease_lost` (the key's leader lost its lease mid-call), `leader_crashed` (a leader left a
 * `running` receipt and no lease) or `store_reset` (Redis came back empty).
 */
export type OutcomeWindow =
  | 'attempt_timeout'
  | 'handler_unknown'
  | 'connection_lost'
  | 'lease_lost'
  | 'leader_crashed'
  | 'store_reset';

/** What an `approval_required` envelope carries: the token a person approves or denies. */
export interface ApprovalTicket {
  /** The token: resume with `dispatch(name, args, { approval: token })`. Never show it to a model. */
  readonly token: string;
  /** The tool the token is bound to. */
  readonly tool: string;
  /** The call that asked. */
  readonly callId: string;
  /** Why approval is needed. */
  readonly reason: string;
  /** When the token expires, in milliseconds since the epoch. */
  readonly expiresAt: number;
}

/** The three JSON-RPC 2.0 error codes an envelope maps to. */
export type JsonRpcErrorCode = -32601 | -32602 | -32603;

/** A JSON-RPC 2.0 error object, as `DispatchError.toJsonRpcError()` returns it. */
export interface JsonRpcError {
  /** The JSON-RPC error code. */
  code: JsonRpcErrorCode;
  /** A message fit for the model: no stack trace. */
  message: string;
  /** The envelope's kind and attempt count. */
  data: JsonRpcErrorData;
}

/** The `data` member of a `JsonRpcError`. */
export interface JsonRpcErrorData {
  /** The envelope's kind. */
  kind: DispatchErrorKind;
  /** Handler attempts made before the failure. */
  attempts: number;
  /** When set, how long to wait before trying again, in milliseconds. */
  retryAfterMs?: number;
  /** For `outcome_unknown`: where the outcome was lost. */
  window?: OutcomeWindow;
}

/** An envelope as plain JSON, as `DispatchError.toJSON()` returns it. */
export interface DispatchErrorJson {
  /** Always `false`. */
  ok: false;
  /** What went wrong. */
  kind: DispatchErrorKind;
  /** A message fit for the model. */
  message: string;
  /** Handler attempts made before the failure. */
  attempts: number;
  /** The JSON-RPC 2.0 error code. */
  jsonrpcCode: JsonRpcErrorCode;
  /** When set, how long to wait before trying again, in milliseconds. */
  retryAfterMs?: number;
  /** For `outcome_unknown`: where the outcome was lost. */
  window?: OutcomeWindow;
  /** For `approval_required`: the token and what it is bound to. */
  approval?: ApprovalTicket;
}

/** Options for `new DispatchError(...)`. */
export interface DispatchErrorOptions {
  /** Handler attempts made before the failure. @default 0 */
  attempts?: number;
  /** The original error, kept for logs and never shown to the model. */
  cause?: unknown;
  /** The JSON-RPC code: -32601, -32602 or -32603. @default derived from `kind` */
  jsonrpcCode?: JsonRpcErrorCode;
  /** A hint for when trying again may succeed, in milliseconds (e.g. an open circuit); capped at 2^31 − 1. */
  retryAfterMs?: number;
  /** For `outcome_unknown`: where the outcome was lost. */
  window?: OutcomeWindow;
  /** For `approval_required`: the token a person approves or denies. */
  approval?: ApprovalTicket;
}

const codeByKind: Readonly<Record<string, JsonRpcErrorCode>> = {
  not_found: -32601,
  schema: -32602,
  idempotency_conflict: -32602,
};

/**
 * The JSON-RPC code for a failure kind: -32601 for `not_found`, -32602 for `schema` and
 * `idempotency_conflict`, -32603 for everything else.
 *
 * @example
 * jsonRpcCodeFor('schema'); // -32602
 */
export function jsonRpcCodeFor(kind: DispatchErrorKind): JsonRpcErrorCode {
  return Object.hasOwn(codeByKind, kind) ? (codeByKind[kind] as JsonRpcErrorCode) : -32603;
}

// A wait past a timer's range (`Infinity` included) is capped to it: JSON writes Infinity as null.
function finiteWait(retryAfterMs: number | undefined): number | undefined {
  return retryAfterMs === undefined ? undefined : Math.min(retryAfterMs, maxTimerDelayMs);
}

const dispatchErrorBrand = Symbol.for('tool-dispatcher.DispatchError');

/**
 * The failure envelope a dispatch resolves to; it is returned, never thrown to the caller.
 *
 * @example
 * const outcome = await dispatcher.dispatch('search.web', { query: 'x' });
 * if (!outcome.ok) console.log(outcome.kind, outcome.attempts, outcome.toJsonRpcError());
 */
export class DispatchError extends Error {
  /** Always `false`: tells an envelope from a success. */
  readonly ok = false as const;
  /** What went wrong, as one of a small set of strings. */
  readonly kind: DispatchErrorKind;
  /** Handler attempts made before the failure. */
  readonly attempts: number;
  /** The JSON-RPC 2.0 error code for `kind`. */
  readonly jsonrpcCode: JsonRpcErrorCode;
  /** When set, how long to wait before trying again, in milliseconds. */
  readonly retryAfterMs: number | undefined;
  /** For `outcome_unknown`: where the outcome was lost; `undefined` for other kinds. */
  readonly window: OutcomeWindow | undefined;
  /** For `approval_required`: the token a person approves or denies (never in `message`). */
  readonly approval?: ApprovalTicket;

  /**
   * Makes an envelope; middleware uses this to fail a dispatch with its own kind.
   * @throws TypeError for a `jsonrpcCode` other than the three, or a bad `attempts` or `retryAfterMs`.
   */
  constructor(kind: DispatchErrorKind, message: string, options: DispatchErrorOptions = {}) {
    super(
      withoutStackFrames(String(message)),
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = 'DispatchError';
    const { attempts = 0, jsonrpcCode = jsonRpcCodeFor(kind), retryAfterMs, window } = options;
    // Every kind maps to one of the three codes (SPEC §4), whoever makes the envelope.
    if (jsonrpcCode !== -32601 && jsonrpcCode !== -32602 && jsonrpcCode !== -32603) {
      throw new TypeError(`jsonrpcCode must be -32601, -32602 or -32603, got ${String(jsonrpcCode)}`);
    }
    if (!Number.isInteger(attempts) || attempts < 0) {
      throw new TypeError(`attempts must be an integer >= 0, got ${String(attempts)}`);
    }
    if (retryAfterMs !== undefined && !(retryAfterMs >= 0)) {
      throw new TypeError(`retryAfterMs must be a number >= 0, got ${String(retryAfterMs)}`);
    }
    this.kind = kind;
    this.attempts = attempts;
    this.jsonrpcCode = jsonrpcCode;
    this.retryAfterMs = finiteWait(retryAfterMs);
    this.window = window;
    if (options.approval !== undefined) this.approval = options.approval;
  }

  /** This envelope as a JSON-RPC 2.0 error object, with no stack trace. */
  toJsonRpcError(): JsonRpcError {
    const data: JsonRpcErrorData = { kind: this.kind, attempts: this.attempts };
    if (this.retryAfterMs !== undefined) data.retryAfterMs = this.retryAfterMs;
    if (this.window !== undefined) data.window = this.window;
    return { code: this.jsonrpcCode, message: this.message, data };
  }

  /** The envelope's plain fields, so `JSON.stringify` never walks `cause` or a stack. */
  toJSON(): DispatchErrorJson {
    const json: DispatchErrorJson = {
      ok: false,
      kind: this.kind,
      message: this.message,
      attempts: this.attempts,
      jsonrpcCode: this.jsonrpcCode,
    };
    if (this.retryAfterMs !== undefined) json.retryAfterMs = this.retryAfterMs;
    if (this.window !== undefined) json.window = this.window;
    if (this.approval !== undefined) json.approval = this.approval;
    for (const name of declaredOutcomeFields) {
      const value = (this as unknown as Record<string, unknown>)[name];
      if (value !== undefined) (json as unknown as Record<string, unknown>)[name] = value;
    }
    return json;
  }
}

// The envelope's own fields, which no layer may declare again.
const coreOutcomeFields: ReadonlySet<string> = new Set([
  'ok',
  'kind',
  'message',
  'attempts',
  'jsonrpcCode',
  'retryAfterMs',
  'window',
  'approval',
  'name',
  'stack',
  'cause',
  'result',
  'reconciled',
  'modelCopy',
]);
const declaredOutcomeFields = new Set<string>();

/**
 * Declares a field a layer puts on outcomes (`outcome.<name>`), when the layer's module loads: a
 * `DispatchError`'s `toJSON` then carries it, and `withMessage` copies it. Merge the field's type
 * into `DispatchSuccess`, `DispatchError` and `DispatchErrorJson` beside the call. A success is a
 * plain object, so JSON carries its fields anyway.
 *
 * @example
 * declare module 'tool-dispatcher' {
 *   interface DispatchError { readonly servedBy?: string }
 *   interface DispatchErrorJson { servedBy?: string }
 * }
 * declareOutcomeField('servedBy');
 */
export function declareOutcomeField(name: string): void {
  if (typeof name !== 'string' || !/^[A-Za-z_$][\w$]*$/.test(name)) {
    throw new TypeError(`name must be an identifier, got ${String(name)}`);
  }
  if (coreOutcomeFields.has(name)) throw new TypeError(`name "${name}" is one of the envelope's own fields`);
  declaredOutcomeFields.add(name);
}

/**
 * A copy of `error` that says `message`: its kind, attempts, code, wait, window, approval, cause
 * and every field a layer declared (`declareOutcomeField`) kept, for a layer that adds why it
 * stopped (retry: "not retried: the retry budget is spent").
 *
 * @example
 * throw withMessage(failure, `${failure.message} (not retried: the retry budget is spent)`);
 */
export function withMessage(error: DispatchError, message: string): DispatchError {
  const copy = new DispatchError(error.kind, message, {
    attempts: error.attempts,
    jsonrpcCode: error.jsonrpcCode,
    ...(error.cause === undefined ? {} : { cause: error.cause }),
    ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
    ...(error.window === undefined ? {} : { window: error.window }),
    ...(error.approval === undefined ? {} : { approval: error.approval }),
  });
  for (const name of declaredOutcomeFields) {
    const value = (error as unknown as Record<string, unknown>)[name];
    if (value !== undefined) (copy as unknown as Record<string, unknown>)[name] = value;
  }
  return copy;
}

// A brand on the prototype lets two copies of the package recognise each other's envelopes.
Object.defineProperty(DispatchError.prototype, dispatchErrorBrand, { value: true });

/**
 * Whether a value is a `DispatchError`, including one made by another copy of this package.
 *
 * @example
 * if (isDispatchError(outcome)) console.log(outcome.kind);
 */
export function isDispatchError(value: unknown): value is DispatchError {
  if (typeof value !== 'object' || value === null) return false;
  try {
    return value instanceof DispatchError || (value as Record<symbol, unknown>)[dispatchErrorBrand] === true;
  } catch {
    // A hostile proxy is not an envelope.
    return false;
  }
}

/** Options for `new TransientError(...)`. */
export interface TransientErrorOptions {
  /** The least time to wait before the next attempt, in milliseconds (e.g. a `Retry-After`); capped at 2^31 − 1. */
  retryAfterMs?: number;
  /** The backend refused for its rate limit or quota (a 429); never a breaker failure. @default false */
  rateLimited?: boolean;
  /** The underlying error. */
  cause?: unknown;
}

/**
 * The error a handler throws to say "this may work if tried again"; the retry layer retries it.
 *
 * @example
 * if (response.status === 503) throw new TransientError('search backend busy', { retryAfterMs: 500 });
 */
export class TransientError extends Error {
  /** The least time to wait before the next attempt, in milliseconds. */
  readonly retryAfterMs: number | undefined;
  /** Whether the backend refused for its rate limit or quota. */
  readonly rateLimited: boolean;

  /** Makes a retryable failure. */
  constructor(message: string, options: TransientErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TransientError';
    const { retryAfterMs } = options;
    if (retryAfterMs !== undefined && !(retryAfterMs >= 0)) {
      throw new TypeError(`retryAfterMs must be a number >= 0, got ${String(retryAfterMs)}`);
    }
    this.retryAfterMs = finiteWait(retryAfterMs);
    this.rateLimited = options.rateLimited === true;
  }
}

/** A short, safe description of any thrown value for a model-facing message, never a stack frame. */
export function describeThrown(value: unknown): string {
  try {
    if (value instanceof Error) return withoutStackFrames(String(value.message || value.name));
    if (typeof value === 'string') return withoutStackFrames(value);
    if (typeof value === 'object' && value !== null) {
      // An error serialised across a worker or process boundary: its message, not its stack.
      const { message } = value as { message?: unknown };
      if (typeof message === 'string' && message.length > 0) return withoutStackFrames(message);
      return withoutStackFrames(JSON.stringify(value, dropStacks) ?? String(value));
    }
    return String(value);
  } catch {
    return `a thrown ${typeof value} that cannot be read`;
  }
}

function dropStacks(key: string, value: unknown): unknown {
  return key === 'stack' ? undefined : value;
}

const stackFrameLine = /^\s*at\s+\S/;

/**
 * `text` without its stack-frame lines (`    at fn (file:1:2)`), trimmed.
 *
 * @example
 * withoutStackFrames('db exploded\n    at query (/srv/db.js:10:5)'); // 'db exploded'
 */
export function withoutStackFrames(text: string): string {
  if (!text.includes('\n') && !stackFrameLine.test(text)) return text;
  return text
    .split(/\r?\n/)
    .filter((line) => !stackFrameLine.test(line))
    .join('\n')
    .trim();
}

/** Options for `new ToolError(...)`. */
export interface ToolErrorOptions {
  /** The underlying error, kept for operators and never shown to the model. */
  cause?: unknown;
  /**
   * The kind the call fails with; a tool fronting a remote one reports the caller's mistakes as
   * `not_found`, `schema` or `protocol`, and the remote's own rate limit (MCP's `-32023`) as
   * `rate_limited`. @default 'tool_error'
   */
  kind?: ToolErrorKind;
  /** For `rate_limited`: how long the remote asks to wait, in milliseconds; capped at 2^31 − 1. */
  retryAfterMs?: number;
}

/** The kinds a `ToolError` can fail a call with. */
export type ToolErrorKind = 'tool_error' | 'not_found' | 'schema' | 'protocol' | 'rate_limited';

const toolErrorKinds: ReadonlySet<string> = new Set<ToolErrorKind>([
  'tool_error',
  'not_found',
  'schema',
  'protocol',
  'rate_limited',
]);

/**
 * The error a handler throws for a failure the tool itself reports ("card declined"): kind
 * `tool_error`, never retried, never a breaker failure.
 *
 * @example
 * if (charge.status === 'declined') throw new ToolError('The card was declined');
 */
export class ToolError extends Error {
  /** Makes a failure the tool reports itself. */
  constructor(message: string, options: ToolErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ToolError';
    const { kind = 'tool_error', retryAfterMs } = options;
    if (!toolErrorKinds.has(kind)) {
      throw new TypeError(
        `kind must be tool_error, not_found, schema, protocol or rate_limited, got ${String(kind)}`,
      );
    }
    if (retryAfterMs !== undefined && !(retryAfterMs >= 0)) {
      throw new TypeError(`retryAfterMs must be a number >= 0, got ${String(retryAfterMs)}`);
    }
    this.kind = kind;
    this.retryAfterMs = finiteWait(retryAfterMs);
  }

  /** The kind the call fails with. */
  readonly kind: ToolErrorKind;
  /** How long the remote asks to wait before trying again, in milliseconds, when it said. */
  readonly retryAfterMs: number | undefined;
}

/**
 * Whether `value` is a JSON parser's error (from any realm), whose message quotes the text it
 * failed on.
 *
 * @example
 * try { JSON.parse('{"ssn": 078') } catch (error) { isJsonParseError(error); } // true
 */
export function isJsonParseError(value: unknown): boolean {
  return (
    value instanceof SyntaxError || (value as { name?: unknown } | null | undefined)?.name === 'SyntaxError'
  );
}

/** Options for `new OutcomeUnknownError(...)`. */
export interface OutcomeUnknownErrorOptions {
  /** The underlying error. */
  cause?: unknown;
  /**
   * Where the outcome was lost: `connection_lost` for a connection that closed while the
   * request ran. @default 'handler_unknown'
   */
  window?: OutcomeWindow;
}

/**
 * Thrown by a handler that cannot know whether its request took effect: kind `outcome_unknown`,
 * never retried unless the tool's `reconcile` finds out.
 *
 * @example
 * throw new OutcomeUnknownError('sent, no answer', { cause: error });
 */
export class OutcomeUnknownError extends Error {
  /** Where the outcome was lost. */
  readonly window: OutcomeWindow;

  /** Makes an unknown outcome. */
  constructor(message: string, options: OutcomeUnknownErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'OutcomeUnknownError';
    const { window = 'handler_unknown' } = options;
    if (!outcomeWindows.has(window)) {
      throw new TypeError(`window must be one of ${[...outcomeWindows].join(', ')}, got ${String(window)}`);
    }
    this.window = window;
  }
}

const outcomeWindows: ReadonlySet<string> = new Set<OutcomeWindow>([
  'attempt_timeout',
  'handler_unknown',
  'connection_lost',
  'lease_lost',
  'leader_crashed',
  'store_reset',
]);

/**
 * Turns anything thrown inside the onion into an envelope (`internal` unless it says otherwise).
 *
 * @example
 * const envelope = toDispatchError(new Error('boom'), 1); // kind 'internal', attempts 1
 */
export function toDispatchError(error: unknown, attempts: number): DispatchError {
  try {
    if (isDispatchError(error)) return error;
    if (error instanceof TransientError) {
      return new DispatchError('transient', error.message, {
        attempts,
        cause: error,
        ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
      });
    }
    if (error instanceof OutcomeUnknownError) {
      return new DispatchError('outcome_unknown', describeThrown(error), {
        attempts,
        cause: error,
        window: error.window ?? 'handler_unknown',
      });
    }
    if (error instanceof ToolError) {
      return new DispatchError(error.kind, describeThrown(error), {
        attempts,
        cause: error,
        ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
      });
    }
    return new DispatchError('internal', describeThrown(error), { attempts, cause: error });
  } catch {
    // Even a value whose every property access throws must become an envelope.
    return new DispatchError('internal', 'The handler failed with a value that cannot be read', {
      attempts,
      cause: error,
    });
  }
}
