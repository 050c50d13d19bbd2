/**
 * Logging: writes one structured, JSON-safe record per event of a dispatch to any leveled logger.
 * @module
 */

import { toJsonSafe, type JsonSafeOptions } from '../src/json-safe.js';
import { optionKeys, optionsObject, requireFunction } from './kit.js';
import { ignoreRejection, isJsonParseError } from './internal-kit.js';
import type { DispatchContext, DispatchEvent, Middleware, Next } from '../src/types.js';
import { trusted } from '../src/internal/trusted.js';

/** A log level, lowest first: `debug`, `info`, `warn`, `error`. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Any logger with the four leveled methods: `console`, pino, winston, bunyan… */
export interface Logger {
  /** Writes a debug record. */
  debug(record: LogRecord): unknown;
  /** Writes an info record. */
  info(record: LogRecord): unknown;
  /** Writes a warning record. */
  warn(record: LogRecord): unknown;
  /** Writes an error record. */
  error(record: LogRecord): unknown;
}

/** One log record: plain JSON values only, never a `cause` or a stack. */
export interface LogRecord {
  /** The event type, e.g. `dispatch.retry`. */
  readonly event: string;
  /** The requested tool name. */
  readonly tool: string;
  /** The dispatch's id. */
  readonly callId: string;
  /** Attempts made when the event happened. */
  readonly attempt: number;
  /** Milliseconds since the dispatch started. */
  readonly durationMs: number;
  /** The failure kind, for events that have one (`dispatch.retry`, `dispatch.failure`). */
  readonly kind?: string;
  /** The event's other details (`delayMs`, `timeoutMs`, `key`, `queued`, `message`…). */
  readonly [detail: string]: unknown;
}

/** Options for `logging`. */
export interface LoggingOptions {
  /** Where records go: any object with `debug`, `info`, `warn` and `error` methods. */
  logger: Logger;
  /** The lowest level written; records below it are dropped before they are built. @default 'debug' */
  level?: LogLevel;
  /** Per-event level overrides, merged over the defaults. @default {} */
  levels?: Partial<Record<string, LogLevel>>;
  /** The time source for `durationMs` when an event carries none. @default () => Date.now() */
  now?: () => number;
  /** Log as they are the failure messages that may quote the call's arguments. @default false */
  recordArguments?: boolean;
}

const loggingOptionKeys = optionKeys<LoggingOptions>({
  logger: true,
  level: true,
  levels: true,
  now: true,
  recordArguments: true,
});

let loggingLayers = 0;

const rank: Readonly<Record<LogLevel, number>> = { debug: 0, info: 1, warn: 2, error: 3 };

const defaultLevels: Readonly<Record<string, LogLevel>> = {
  'dispatch.attempt': 'debug',
  'dispatch.attempt_failed': 'debug',
  'dispatch.retry': 'warn',
  'dispatch.timeout': 'warn',
  'dispatch.success': 'info',
  'dispatch.failure': 'error',
  'concurrency.queued': 'debug',
  'concurrency.acquired': 'debug',
  'idempotency.hit': 'debug',
  'idempotency.lease_lost': 'warn',
  'idempotency.store_error': 'warn',
  'receipt.failed': 'error',
  'concurrency.lease_lost': 'warn',
  'circuit.open': 'warn',
  'circuit.half_open': 'info',
  'circuit.close': 'info',
};

// Fields the record sets itself, and fields that must never reach a log line.
const ownFields = new Set(['type', 'event', 'tool', 'callId', 'attempt', 'durationMs', 'kind']);
const droppedFields = new Set(['cause', 'stack']);
// Log lines keep an error's message, drop what cannot be rendered, and never carry a cause.
const logSafe: JsonSafeOptions = {
  maxDepth: 8,
  errors: 'message',
  unrenderable: 'omit',
  dropKeys: droppedFields,
};

/**
 * Writes one plain-JSON record per event of each dispatch it sees, as a single object argument
 * (`{ event, tool, callId, attempt, durationMs, kind?, ...details }`); a throwing logger is ignored.
 *
 * @example
 * import pino from 'pino';
 * createDispatcher([logging({ logger: pino(), level: 'info' }), ...defaultStack({ registry })]);
 */
export function logging(options: LoggingOptions): Middleware {
  const {
    logger,
    level = 'debug',
    levels = {},
    now = () => Date.now(),
    recordArguments = false,
  } = optionsObject('logging', options as LoggingOptions | undefined, loggingOptionKeys);
  if (typeof logger !== 'object' || logger === null) {
    throw new TypeError(
      `logger must be an object with debug, info, warn and error methods, got ${String(logger)}`,
    );
  }
  for (const method of ['debug', 'info', 'warn', 'error'] as const) {
    if (typeof logger[method] !== 'function') throw new TypeError(`logger must have a ${method}() method`);
  }
  if (!Object.hasOwn(rank, level)) {
    throw new TypeError(`level must be one of debug, info, warn, error, got ${String(level)}`);
  }
  if (typeof levels !== 'object' || levels === null) {
    throw new TypeError(`levels must be an object, got ${String(levels)}`);
  }
  for (const [type, mapped] of Object.entries(levels)) {
    if (mapped !== undefined && !Object.hasOwn(rank, mapped)) {
      throw new TypeError(`levels["${type}"] must be one of debug, info, warn, error, got ${String(mapped)}`);
    }
  }
  requireFunction('now', now);
  if (typeof recordArguments !== 'boolean') {
    throw new TypeError(`recordArguments must be a boolean, got ${String(recordArguments)}`);
  }
  const threshold = rank[level];
  const levelOf = (type: string): LogLevel =>
    (Object.hasOwn(levels, type) ? levels[type] : undefined) ??
    (Object.hasOwn(defaultLevels, type) ? defaultLevels[type] : undefined) ??
    'debug';

  // The layer may run once per attempt (inside retry), but listens once per dispatch, to its
  // end: the call's own success or failure is emitted after every layer has settled.
  const listeningKey = `logging#${++loggingLayers}`;

  const write = (ctx: DispatchContext, event: DispatchEvent) => {
    const eventLevel = levelOf(event.type);
    if (rank[eventLevel] < threshold) return;
    try {
      const returned: unknown = logger[eventLevel](toRecord(ctx, event, now, recordArguments));
      ignoreRejection(returned);
    } catch {
      // A broken logger must never break the dispatch it observes.
    }
  };

  return trusted(function logging(ctx: DispatchContext, next: Next): Promise<void> {
    const { state } = ctx;
    if (state[listeningKey] === undefined) {
      state[listeningKey] = true;
      ctx.listen((event) => write(ctx, event));
    }
    return next();
  });
}

function toRecord(
  ctx: DispatchContext,
  event: DispatchEvent,
  now: () => number,
  recordArguments: boolean,
): LogRecord {
  const durationMs =
    typeof event.durationMs === 'number' && Number.isFinite(event.durationMs)
      ? event.durationMs
      : now() - ctx.startedAt;
  const record: Record<string, unknown> = {
    event: String(event.type),
    tool: String(event.tool),
    callId: String(event.callId),
    attempt: event.attempt,
    durationMs,
  };
  if (typeof event.kind === 'string') record.kind = event.kind;
  for (const key of Object.keys(event)) {
    if (ownFields.has(key) || droppedFields.has(key)) continue;
    const value = recordArguments ? event[key] : withoutArgumentText(ctx, event, key);
    setField(record, key, toJsonSafe(value, logSafe));
  }
  return record as unknown as LogRecord;
}

const schemaMessage =
  'The arguments were rejected (the details may quote them and are logged only with recordArguments)';
const parserMessage =
  "The JSON could not be parsed (the parser's message quotes its input and is logged only with " +
  'recordArguments)';

// The detail `key` of `event`, or a fixed text when it is a failure message that may quote the
// arguments: a schema failure's (a JSON parser's excerpt, a validator's received value), or any
// error a JSON parser raised, such as a handler's JSON.parse of an argument.
function withoutArgumentText(ctx: DispatchContext, event: DispatchEvent, key: string): unknown {
  const value = event[key];
  try {
    if (key === 'message' && event.type === 'dispatch.failure') {
      const { outcome } = ctx;
      const cause = outcome?.ok === false && outcome.message === value ? outcome.cause : undefined;
      return isJsonParseError(cause) ? parserMessage : event.kind === 'schema' ? schemaMessage : value;
    }
    if (!(value instanceof Error)) return value;
    if (isJsonParseError(value) || isJsonParseError(value.cause)) return parserMessage;
    return (value as { kind?: unknown }).kind === 'schema' ? schemaMessage : value;
  } catch {
    // A detail that cannot be read is left out rather than risk its text.
    return undefined;
  }
}

// defineProperty, so a field named "__proto__" stays a plain field and never swaps the prototype.
function setField(target: Record<string, unknown>, key: string, value: unknown): void {
  if (value === undefined) return;
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
