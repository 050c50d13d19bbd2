/**
 * The types every layer shares: tools, dispatch options, the context, middleware and outcomes.
 * @module
 */

import type { Budget } from './budget.js';
import type { Clock } from './clock.js';
import type { DispatchError, DispatchErrorKind, OutcomeWindow } from './errors.js';

import type { Redactor } from './redact.js';
import type { StandardSchemaV1 } from './standard-schema.js';

/** What a handler receives beside its parsed args. */
export interface ToolContext {
  /** Fires when this attempt times out or the caller aborts; pass it to `fetch` and friends. */
  readonly signal: AbortSignal;
  /** The attempt number, 1-based. */
  readonly attempt: number;
  /** The caller's idempotency key, if it gave one. */
  readonly idempotencyKey: string | undefined;
  /** The id of this dispatch, the same for every attempt. */
  readonly callId: string;
  /**
   * When this attempt times out, in ms since the epoch; `Infinity` without a deadline. For a tool
   * with an idle `timeout`, the latest it may end (`totalMs` from its start): silence ends it sooner.
   */
  readonly deadline: number;
  /**
   * Reports progress to the caller's `onProgress`; a no-op when nobody listens. For a tool with an
   * idle `timeout`, each report also moves the attempt's deadline back to `idleMs` from now.
   */
  readonly progress: (progress: number, total?: number, message?: string) => void;
}

/** One progress report of a handler, as `DispatchOptions.onProgress` receives it. */
export interface ProgressUpdate {
  /** Progress so far, in any unit that grows. */
  progress: number;
  /** The progress value at completion, when known. */
  total?: number;
  /** A short human-readable note. */
  message?: string;
}

/** A tool handler: parsed args in, a result (or a promise of one) out. */
export type ToolHandler<Args = unknown, Result = unknown> = (
  args: Args,
  ctx: ToolContext,
) => Result | Promise<Result>;

/** What a tool's `reconcile` answers: whether the action whose outcome was lost took effect. */
export type ReconcileVerdict<Result = unknown> =
  | 'committed'
  | 'not_committed'
  | 'unknown'
  | {
      /** It took effect. */
      status: 'committed';
      /** What the call returns, as the handler would have. @default undefined */
      result?: Result;
      /** What showed it (an id, a row), kept on the receipt. */
      evidence?: unknown;
    }
  | {
      /** It did not take effect, or nobody can tell. */
      status: 'not_committed' | 'unknown';
      /** What showed it, kept on the receipt. */
      evidence?: unknown;
    };

/** What a tool's `reconcile` receives beside the call's args. */
export interface ReconcileContext {
  /** The caller's idempotency key, if it gave one: look the action up by it. */
  readonly idempotencyKey: string | undefined;
  /** The id of this dispatch. */
  readonly callId: string;
  /** The attempt whose outcome was lost. */
  readonly attempt: number;
  /** Where the outcome was lost. */
  readonly window: OutcomeWindow;
  /** Aborts at `reconcileTimeoutMs` or when the caller aborts. */
  readonly signal: AbortSignal;
}

/** Asks the backend whether an action whose outcome was lost took effect. */
export type Reconcile<Args = unknown, Result = unknown> = (
  args: Args,
  ctx: ReconcileContext,
) => ReconcileVerdict<Result> | Promise<ReconcileVerdict<Result>>;

/**
 * What `ToolRegistry.register` takes; the handler's args are inferred from `inputSchema`. A layer
 * that reads a field of its own merges it in and declares it (`declareToolField`).
 */
export interface ToolDefinition<Schema extends StandardSchemaV1 = StandardSchemaV1, Result = unknown> {
  /** Unique name of dotted lowercase segments, such as `db.get_user`. */
  name: string;
  /** What the tool does, for the model. @default '' */
  description?: string;
  /** Validates the args: a zod schema or any Standard Schema v1 validator. */
  inputSchema: Schema;
  /** Runs the tool with the parsed args. */
  handler: ToolHandler<StandardSchemaV1.InferOutput<Schema>, Result>;
  /** Whether running it twice is harmless (only such tools retry a timeout). @default false */
  idempotent?: boolean;
  /** Per-attempt timeout in milliseconds; `Infinity` for none. @default 30_000 (the timeout layer's) */
  timeoutMs?: number;
  /**
   * An idle timeout instead of `timeoutMs` (not both), for a handler that reports progress: each
   * attempt ends `idleMs` after its start or its last `ctx.progress(...)` report, and never runs
   * past `totalMs` from its start. A caller's `timeoutMs` caps `totalMs`.
   * @default undefined (`timeoutMs`)
   * @example
   * timeout: { idleMs: 5_000, totalMs: 60_000 },
   * handler: async ({ id }, ctx) => {
   *   for await (const page of exportPages(id, { signal: ctx.signal })) ctx.progress(page.number);
   * },
   */
  timeout?: ToolTimeout;
  /** What one attempt costs in budget units: a number, or a function of the parsed args. @default 1 */
  cost?: number | ((args: StandardSchemaV1.InferOutput<Schema>) => number);
  /**
   * Asked once, before any retry, whether an attempt whose outcome is unknown took effect.
   * @default undefined (an unknown outcome stays as it is)
   * @example
   * reconcile: async (args, { idempotencyKey, signal }) => {
   *   const charge = await bank.findCharge(idempotencyKey, { signal });
   *   return charge ? { status: 'committed', result: charge } : 'not_committed';
   * }
   */
  reconcile?: Reconcile<StandardSchemaV1.InferOutput<Schema>, Result>;
  /** How long `reconcile` may take, in milliseconds; past it the verdict is `unknown`. @default 10_000 */
  reconcileTimeoutMs?: number;
  /** Whether a host should run it as a long-running task (MCP Tasks). @default false */
  task?: boolean;
  /** MCP tool annotations (`readOnlyHint`, `destructiveHint`…); `importMcpTools` fills them. */
  annotations?: ToolAnnotations;
  /** Validates a success (any Standard Schema); a result that breaks it fails with `tool_contract`. */
  outputSchema?: StandardSchemaV1;
}

/** A tool's idle timeout (`ToolDefinition.timeout`): progress keeps an attempt alive, silence ends it. */
export interface ToolTimeout {
  /** How long an attempt may go without a `ctx.progress` report, in ms (from its start at first). */
  readonly idleMs: number;
  /** The longest an attempt may run however often it reports, in ms from its start; `>= idleMs`. */
  readonly totalMs: number;
}

/** MCP tool annotations: hints a server gives about a tool (they may be wrong). */
export interface ToolAnnotations {
  /** A human-readable title. */
  readonly title?: string;
  /** The tool changes nothing. */
  readonly readOnlyHint?: boolean;
  /** The tool may destroy or overwrite data. */
  readonly destructiveHint?: boolean;
  /** Calling it twice with the same args has no further effect. */
  readonly idempotentHint?: boolean;
  /** The tool reaches an open world (the web, other people). */
  readonly openWorldHint?: boolean;
  /** Other hints, kept as given. */
  readonly [hint: string]: unknown;
}

/** A registered tool as the dispatcher sees it. */
export interface Tool {
  /** Unique name. */
  readonly name: string;
  /** What the tool does. */
  readonly description: string;
  /** The validator for its args. */
  readonly inputSchema: StandardSchemaV1;
  /** The handler, taking args already parsed by `inputSchema`. */
  readonly handler: ToolHandler<never>;
  /** Whether running it twice is harmless. */
  readonly idempotent: boolean;
  /** Its own per-attempt timeout, or `undefined` to use the timeout layer's default. */
  readonly timeoutMs: number | undefined;
  /** Its idle timeout, in place of `timeoutMs`, if it has one. */
  readonly timeout?: ToolTimeout | undefined;
  /** What one attempt costs (a number or a function of the args); `undefined` for 1. */
  readonly cost: number | ((args: never) => number) | undefined;
  /** Asks whether an action whose outcome was lost took effect (see `ToolDefinition`). */
  readonly reconcile?: Reconcile<never> | undefined;
  /** How long `reconcile` may take, in milliseconds. */
  readonly reconcileTimeoutMs?: number;
  /** Whether hosts should run it as a long-running task (MCP Tasks). */
  readonly task: boolean;
  /** Its MCP annotations, if any. */
  readonly annotations?: ToolAnnotations | undefined;
  /** The validator of its successes, if any. */
  readonly outputSchema?: StandardSchemaV1 | undefined;
}

/** Per-call options of `dispatch`. */
export interface DispatchOptions {
  /**
   * Per-attempt timeout for this call, overriding the tool's `timeoutMs`; `Infinity` for none. A
   * tool's idle `timeout` keeps its idle time, its total capped at this.
   */
  timeoutMs?: number;
  /** Deduplicates calls that share it (see the idempotency layer); the dispatcher never invents one. */
  idempotencyKey?: string;
  /** Tool-call budget: a number for this call alone, or a shared `createBudget(n)`. */
  budget?: number | Budget;
  /** Aborts the call: queue waits, backoffs and the running attempt end at once. */
  signal?: AbortSignal;
  /** An id for this call (e.g. the model's tool-call id); generated when omitted. */
  callId?: string;
  /** The tool name model-facing messages quote (a wire name). @default the name passed to `dispatch` */
  displayName?: string;
  /** Receives the handler's `ctx.progress(...)` reports; a listener that throws is ignored. */
  onProgress?: (update: ProgressUpdate) => void;
  /** Who the call is for (a customer, a workspace): layers may key their limits on it. */
  tenant?: string;
  /** How long the idempotency layer serves this call's success again, in ms. @default its `ttlMs` */
  idempotencyTtlMs?: number;
  /**
   * Resumes a call that `approvalGate` paused: its token, `{ approvedBy }` from the host, or
   * `{ deniedBy, reason? }` when a person in the host refused it: the gate then answers
   * `approval_denied` (and the call never runs, gate or not), so every layer outside it sees it.
   */
  approval?:
    | string
    | {
        /** Who approved the call in the host (a person, or the host's own approval flow). */
        approvedBy: string;
      }
    | {
        /** Who refused the call in the host (a person, or the host's own approval flow). */
        deniedBy: string;
        /** Why, in words the model may read. @default 'a reviewer denied it' */
        reason?: string;
      };
}

/** A success: the handler's result and the attempts it took (0 when served by the idempotency layer). */
export interface DispatchSuccess<Result = unknown> {
  /** Always `true`. */
  readonly ok: true;
  /** What the handler returned. */
  readonly result: Result;
  /** Handler attempts this call made. */
  readonly attempts: number;
  /** Set when the tool's `reconcile` found the action had taken effect after its outcome was lost. */
  readonly reconciled?: {
    /** Where the outcome was lost. */
    readonly window: OutcomeWindow;
  };
  /** The copy of the result a model is shown, when `outputGuard` made one. */
  readonly modelCopy?: ModelCopy;
}

/** The model's copy of a success, as `outputGuard` makes it. */
export interface ModelCopy {
  /** The text to show the model: at most the guard's `maxChars`. */
  readonly text: string;
  /** Whether `text` is a cut of the whole result. */
  readonly truncated: boolean;
  /** The length of the whole rendered result, in characters. */
  readonly originalChars: number;
  /** Where the whole result was spilled, when it was cut and a spill store took it. */
  readonly handle?: string;
}

/** What a dispatch resolves to: a success or a `DispatchError` envelope. */
export type Outcome<Result = unknown> = DispatchSuccess<Result> | DispatchError;

/** The fields every event carries. */
export interface DispatchEventBase {
  /** The requested tool name. */
  readonly tool: string;
  /** The dispatch's id. */
  readonly callId: string;
  /** Attempts made so far. */
  readonly attempt: number;
  /** Event-specific details such as `delayMs`, `kind`, `durationMs`. */
  readonly [detail: string]: unknown;
}

/**
 * The details of every declared event, by `type`: the engine's own `dispatch.*` events, and those
 * each layer merges in from its own module, as the built-in layers do.
 *
 * @example
 * declare module 'tool-dispatcher' {
 *   interface DispatchEventDetails {
 *     'rate_limit.rejected': { readonly retryAfterMs: number };
 *   }
 * }
 */
export interface DispatchEventDetails {
  /** An attempt starts. */
  'dispatch.attempt': Record<never, never>;
  /** An attempt failed; `error` is that attempt's own envelope, whatever happens next. */
  'dispatch.attempt_failed': {
    /** The attempt's failure kind. */
    readonly kind: DispatchErrorKind;
    /** The attempt's envelope (not enumerable, so the event stays plain JSON). */
    readonly error: DispatchError;
  };
  /** An attempt ran past its deadline. */
  'dispatch.timeout': {
    /** The attempt's timeout, in milliseconds: the idle time when `idle`. */
    readonly timeoutMs: number;
    /** Present (`true`) when the attempt went `timeoutMs` without a progress report (an idle timeout). */
    readonly idle?: true;
  };
  /** The call succeeded. */
  'dispatch.success': {
    /** Handler attempts made. */
    readonly attempts: number;
    /** How long the call took, in milliseconds. */
    readonly durationMs: number;
  };
  /** The call failed. */
  'dispatch.failure': {
    /** The envelope's kind. */
    readonly kind: DispatchErrorKind;
    /** Handler attempts made. */
    readonly attempts: number;
    /** The envelope's message. */
    readonly message: string;
    /** How long the call took, in milliseconds. */
    readonly durationMs: number;
  };
}

/** The type of a declared event: the library's own, or one a layer declared. */
export type DispatchEventType = keyof DispatchEventDetails;

/**
 * The declared event of type `Type`, with its details typed.
 *
 * @example
 * const delayOf = (event: DispatchEventOf<'dispatch.retry'>) => event.delayMs;
 */
export type DispatchEventOf<Type extends DispatchEventType> = DispatchEventBase & {
  /** What happened. */
  readonly type: Type;
} & DispatchEventDetails[Type];

/** A declared event, discriminated by `type`. */
export type KnownDispatchEvent = { [Type in DispatchEventType]: DispatchEventOf<Type> }[DispatchEventType];

/** An event whose `type` no layer declared in `DispatchEventDetails`; it reaches every listener. */
export interface CustomDispatchEvent extends DispatchEventBase {
  /** What happened, in the layer's own namespace (e.g. `rate_limit.wait`). */
  readonly type: string;
}

/**
 * A structured event emitted at a transition of a dispatch, narrowed by `type` with no cast.
 *
 * @example
 * const onEvent = (event: DispatchEvent) => {
 *   if (event.type === 'dispatch.retry') console.log(`retrying in ${event.delayMs} ms`);
 * };
 */
export type DispatchEvent = KnownDispatchEvent;

/** Receives structured events. */
export type EventListener = (event: DispatchEvent) => void;

/** The state of one dispatch, passed to every middleware. */
export interface DispatchContext {
  /** The dispatch's id, the same for every attempt. */
  readonly callId: string;
  /** The tool name as the caller gave it. */
  readonly toolName: string;
  /** The tool, once the lookup layer has found it. */
  tool: Tool | undefined;
  /** The args: raw at first, the parsed value after the schema layer. */
  args: unknown;
  /** The caller's options, as given. */
  readonly options: DispatchOptions;
  /** The budget attempts draw from, if the caller gave one. */
  budget: Budget | undefined;
  /** Handler attempts made so far. */
  attempt: number;
  /**
   * The signal inner layers see: the caller's, ended early by any `limit`; built on first read.
   * To give the layers inside another signal, call `limit({ signal })` and restore it after.
   * Assigning `ctx.signal` is deprecated: it drops the current limit (its deadline still holds),
   * and it stays only for layers written before `limit`.
   */
  signal: AbortSignal;
  /** When the current attempt must end, in ms on its deadline's clock; `Infinity` for none. */
  readonly deadline: number;
  /**
   * Puts limits on the layers inside and returns the function that restores the old ones.
   *
   * @example
   * const restore = ctx.limit({ timeoutMs: 5_000 });
   * try { await next(); } finally { restore(); }
   */
  limit(limits: AttemptLimits): () => void;
  /** The result, once a layer has one: set on success by the attempt, on failure by error mapping. */
  outcome: Outcome | undefined;
  /** Scratch space shared between layers; each layer uses its own key. */
  readonly state: Record<string, unknown>;
  /** When the dispatch started, in milliseconds since the epoch. */
  readonly startedAt: number;
  /** The tool name model-facing messages quote: `options.displayName`, else `toolName`. */
  readonly displayName: string;
  /** Emits a structured event to `onEvent` and `listen`ers; never throws; its own fields win. */
  emit<Type extends DispatchEventType>(
    type: Type,
    ...details: Record<never, never> extends DispatchEventDetails[Type]
      ? [details?: DispatchEventDetails[Type]]
      : [details: DispatchEventDetails[Type]]
  ): void;
  /** Emits an undeclared event of a third-party layer (name it `<layer>.<what>`). */
  emit<Type extends string>(
    type: Type & (Type extends DispatchEventType ? never : unknown),
    details?: Record<string, unknown>,
  ): void;
  /** Adds a listener for this dispatch's events; returns the function that removes it. */
  listen(listener: EventListener): () => void;
  /** The dispatcher's redactor, for a layer that records results or messages. */
  readonly redactor?: Redactor | undefined;
}

/** The clock a deadline is measured and armed on. */
export type DeadlineClock = Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>;

/** What `ctx.limit` takes: the limits for the layers inside, each optional. */
export interface AttemptLimits {
  /** Milliseconds until the attempts inside must end (`timeout`); the earliest deadline wins. */
  readonly timeoutMs?: number;
  /**
   * Milliseconds the attempts inside may go without a `ctx.progress` report: each report moves
   * this deadline to `idleMs` from then, never past `timeoutMs`.
   * @default undefined (no idle deadline)
   */
  readonly idleMs?: number;
  /** The clock `timeoutMs` is measured and armed on. @default systemClock */
  readonly clock?: DeadlineClock;
  /**
   * Why the deadline is what it is, in one short clause the `timeout` envelope's message ends
   * with when this limit's deadline is the one that passes (e.g. `'p99 × 2 of 800 calls'`).
   * @default undefined (the message says only how long the attempt ran)
   */
  readonly explanation?: string;
  /** The signal that stops the layers inside, in place of the current one. */
  readonly signal?: AbortSignal;
}

/** What `next()` returns: a promise that settles when the inner layers have. */
export type Next = () => Promise<void>;

/** A layer of the onion: `next()` runs the inner layers, again once settled (as `retry` does). */
export type Middleware = (ctx: DispatchContext, next: Next) => Promise<void>;

/** A failure kind, re-exported for convenience. */
export type { DispatchErrorKind };
