/**
 * The innermost step of every dispatcher: one attempt of the resolved tool's handler.
 * @module
 */

import { DispatchError, describeThrown, isDispatchError, toDispatchError } from './errors.js';
import { neverAborted, noop, onAbort, raceAbort } from './internal/abort.js';
import { budgetExceeded, cancelled, failedAttempt } from './internal/failures.js';
import { progressUnder, trackAttempt, type Limit, type LimitWaiter } from './internal/limits.js';
import { hostDenialOf } from './internal/host-denial.js';
import { parseJsonArgs } from './internal/raw-json-args.js';
import { isThenable } from './internal/thenable.js';
import { isLocalBudget, type Budget } from './budget.js';
import { classifyRateLimit } from './rate-limit-signals.js';
import { attemptCost } from './internal/cost.js';
import { reconcileFirst } from './internal/reconcile.js';
import type {
  DispatchContext,
  DispatchOptions,
  ProgressUpdate,
  Tool,
  ToolContext,
  ToolHandler,
} from './types.js';

/** What the attempt step reads of a context beyond `DispatchContext`: the dispatcher's contexts have it. */
interface LimitedContext extends DispatchContext {
  readonly currentLimit: Limit | undefined;
  readonly baseSignal: AbortSignal;
}

/** How an attempt ended: failed with the envelope `error`, or succeeded (`ctx.outcome` holds it). */
export type AttemptSettled = (failed: boolean, error?: unknown) => void;

/**
 * Runs one attempt (parse, charge, count, call the handler) and records a success in
 * `ctx.outcome`; rejects with the envelope, at once when the deadline or a stop ends it.
 */
export function runAttempt(ctx: DispatchContext): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    attempt(ctx, (failed, error) => (failed ? reject(error) : resolve()));
  });
}

/** `runAttempt` without a promise: calls `settled` once, always later, never before this returns. */
export function attempt(ctx: DispatchContext, settled: AttemptSettled): void {
  const { tool } = ctx;
  if (tool === undefined) {
    const error = new DispatchError(
      'internal',
      'No tool was resolved for this call: the stack needs toolLookup(registry)',
      { attempts: ctx.attempt },
    );
    return failLater(settled, error);
  }
  // A stack without the schema layer still hands the handler its args, never the JSON text.
  const badJson = parseJsonArgs(ctx);
  if (badJson !== undefined) return failLater(settled, badJson);
  // A call a person refused never runs, even in a stack without the approval gate.
  const refused = hostDenialOf(ctx);
  if (refused !== undefined) return failLater(settled, refused);
  const limited = ctx as LimitedContext;
  const limit = limited.currentLimit;
  const base = limit === undefined ? (limited.baseSignal ?? ctx.signal) : neverAborted;
  const stopped = stopOf(ctx, limit, base);
  if (stopped !== undefined) return failLater(settled, stopped);
  // A limit that ends while this attempt runs waits for its outcome (see untilLimitEnds).
  if (limit !== undefined) settled = trackAttempt(limit, settled);
  const { budget } = ctx;
  if (budget !== undefined && !isLocalBudget(budget)) {
    return attemptOnSharedBudget(ctx, tool, limit, base, budget, settled);
  }
  attemptWith(ctx, tool, limit, base, false, settled);
}

// Takes the attempt's cost from `budget`; an attempt that costs nothing takes nothing.
function charge(ctx: DispatchContext, budget: Budget): boolean | Promise<boolean> {
  const units = attemptCost(ctx);
  return units === 0 || budget.tryConsume(units);
}

function failLater(settled: AttemptSettled, error: unknown): void {
  queueMicrotask(() => settled(true, error));
}

// Why the attempt may not run, if something already stopped it.
function stopOf(
  ctx: DispatchContext,
  limit: Limit | undefined,
  base: AbortSignal,
): DispatchError | undefined {
  if (limit !== undefined) return limit.error;
  return base !== neverAborted && base.aborted ? cancelled(ctx, base) : undefined;
}

// A budget that may answer with a promise: the unit is taken first, and the attempt starts only
// once it is, still inside its limits (the wait ends when they do).
function attemptOnSharedBudget(
  ctx: DispatchContext,
  tool: Tool,
  limit: Limit | undefined,
  base: AbortSignal,
  budget: Budget,
  settled: AttemptSettled,
): void {
  let taken: boolean | Promise<boolean>;
  try {
    taken = charge(ctx, budget);
  } catch (error) {
    return failLater(settled, error);
  }
  if (taken === true) return attemptWith(ctx, tool, limit, base, true, settled);
  if (!isThenable(taken)) return failLater(settled, budgetExceeded(ctx));
  const charged = adoptResult(taken).then(
    (ok) => {
      if (ok !== true) throw budgetExceeded(ctx);
    },
    (error: unknown) => {
      throw budgetUnavailable(ctx, error);
    },
  );
  const signal = limit === undefined ? base : limit.signal;
  raceAbort(charged, signal, () => cancelled(ctx, signal)).then(
    () => {
      const stopped = stopOf(ctx, limit, base);
      if (stopped !== undefined) settled(true, stopped);
      else attemptWith(ctx, tool, limit, base, true, settled);
    },
    (error: unknown) => settled(true, error),
  );
}

function attemptWith(
  ctx: DispatchContext,
  tool: Tool,
  limit: Limit | undefined,
  base: AbortSignal,
  charged: boolean,
  settled: AttemptSettled,
): void {
  let run: AttemptContext;
  let returned: unknown;
  try {
    run = startAttempt(ctx, limit, base, charged);
    // Reconcile before retry: only an attempt whose handler started can have acted.
    if (tool.reconcile !== undefined) settled = reconcileFirst(ctx, tool, run.attempt, settled);
    returned = callHandler(ctx, tool, run);
  } catch (error) {
    return failLater(settled, error);
  }
  if (!mayBeThenable(returned)) {
    // The handler may have stopped its own call while it ran.
    const stopped = stopOf(ctx, limit, base);
    if (stopped !== undefined) return failLater(settled, failedAttempt(ctx, stopped));
    ctx.outcome = { ok: true, result: returned, attempts: run.attempt };
    return queueMicrotask(() => settled(false));
  }
  if (limit === undefined && base === neverAborted) {
    // Nothing can stop this attempt: it ends with the handler.
    const attempt = run.attempt;
    return followOrFail(
      returned,
      (result) => {
        ctx.outcome = { ok: true, result, attempts: attempt };
        settled(false);
      },
      (error: unknown) => settled(true, failedAttempt(ctx, handlerFailure(error, attempt))),
    );
  }
  run.settle(ctx, returned, settled);
}

// followResult, where a promise whose species cannot be built fails the attempt.
function followOrFail(
  returned: unknown,
  onFulfilled: (value: unknown) => void,
  onRejected: (reason: unknown) => void,
): void {
  try {
    followResult(returned, onFulfilled, onRejected);
  } catch (error) {
    queueMicrotask(() => onRejected(error));
  }
}

// Charges the budget (unless `charged`), counts the attempt and emits `dispatch.attempt`; throws
// the envelope when it cannot start. A promise from a budget marked local fails closed.
function startAttempt(
  ctx: DispatchContext,
  limit: Limit | undefined,
  base: AbortSignal,
  charged: boolean,
): AttemptContext {
  if (!charged && ctx.budget !== undefined) {
    const taken = charge(ctx, ctx.budget);
    if (taken !== true) {
      if (isThenable(taken)) {
        taken.then(undefined, noop);
        throw budgetUnavailable(
          ctx,
          new TypeError('the budget answered with a promise where an answer was due at once'),
        );
      }
      throw budgetExceeded(ctx);
    }
  }
  const attempt = ++ctx.attempt;
  ctx.emit('dispatch.attempt');
  // An observer of that event may have stopped the call; the handler is then not started.
  const stopped = stopOf(ctx, limit, base);
  if (stopped !== undefined) throw stopped;
  return new AttemptContext(ctx, attempt, limit, base);
}

function callHandler(ctx: DispatchContext, tool: Tool, run: AttemptContext): unknown {
  try {
    return (tool.handler as ToolHandler<unknown>)(ctx.args, run);
  } catch (error) {
    run.finish();
    throw failedAttempt(ctx, handlerFailure(error, run.attempt));
  }
}

// The built-in `then`, as `await` uses it: a handler's promise may carry a `then` of its own,
// which could throw or call back before it returns.
const builtInThen = Promise.prototype.then as (
  this: Promise<unknown>,
  onFulfilled?: ((value: unknown) => unknown) | undefined,
  onRejected?: ((reason: unknown) => unknown) | undefined,
) => Promise<unknown>;

// What a handler returned, as a native promise; a `then` or `constructor` that throws rejects it.
function adoptResult(returned: unknown): Promise<unknown> {
  try {
    return Promise.resolve(returned);
  } catch (error) {
    return Promise.reject(error);
  }
}

// Calls back when what a handler returned settles, always later; throws only when the promise's
// species cannot be built (a hostile subclass).
function followResult(
  returned: unknown,
  onFulfilled: (value: unknown) => void,
  onRejected: (reason: unknown) => void,
): void {
  void builtInThen.call(adoptResult(returned), onFulfilled, onRejected);
}

/** The envelope of a shared budget that could not answer: the attempt fails closed, before its handler. */
function budgetUnavailable(ctx: DispatchContext, error: unknown): DispatchError {
  if (isDispatchError(error)) return error;
  const message = `The tool-call budget could not be charged: ${describeThrown(error)}`;
  return new DispatchError('store_unavailable', message, { attempts: ctx.attempt, cause: error });
}

/** Whether a handler's return value must go through `Promise.resolve`: it may be a thenable. */
function mayBeThenable(value: unknown): boolean {
  // typeof only: `instanceof` would ask a proxy for its prototype, and a hostile one throws.
  return (typeof value === 'object' && value !== null) || typeof value === 'function';
}

// What a handler is given: own enumerable fields only, so `{ ...ctx }` keeps them all. Inside a
// limit the signal is the attempt's own, built on first read; it never fires after the attempt.
class AttemptContext implements ToolContext, LimitWaiter {
  declare readonly signal: AbortSignal;
  readonly idempotencyKey: string | undefined;
  readonly callId: string;
  readonly deadline: number;
  readonly progress: ToolContext['progress'];
  readonly #limit: Limit | undefined;
  readonly #dispatch: DispatchContext;
  readonly #base: AbortSignal;
  #controller: AbortController | undefined = undefined;
  #ended = false;
  #stopReason: unknown = undefined;
  #stopped = false;
  #settled: AttemptSettled = noop;
  #unwatch: () => void = noop;

  /** Whether `ctx` is an AttemptContext whose signal is its attempt's own. */
  static hasAttemptSignal(ctx: unknown): boolean {
    return typeof ctx === 'object' && ctx !== null && #limit in ctx && ctx.#limit !== undefined;
  }

  static readonly #lazySignal: PropertyDescriptor = {
    get(this: AttemptContext): AbortSignal {
      if (this.#controller === undefined) {
        this.#controller = new AbortController();
        if (this.#stopped) this.#controller.abort(this.#stopReason);
      }
      return this.#controller.signal;
    },
    enumerable: true,
    configurable: false,
  };

  constructor(
    dispatch: DispatchContext,
    readonly attempt: number,
    limit: Limit | undefined,
    base: AbortSignal,
  ) {
    this.#dispatch = dispatch;
    this.#base = base;
    const { options } = dispatch;
    this.idempotencyKey = options.idempotencyKey;
    this.callId = dispatch.callId;
    this.deadline = dispatch.deadline ?? Infinity;
    this.progress = progressUnder(
      limit,
      options.onProgress === undefined ? ignoreProgress : progressTo(options.onProgress),
    );
    this.#limit = limit;
    if (limit === undefined) (this as { signal: AbortSignal }).signal = base;
    else Object.defineProperty(this, 'signal', AttemptContext.#lazySignal);
  }

  /** Settles once with what the handler returned, or at once when the limit ends first. */
  settle(ctx: DispatchContext, returned: unknown, settled: AttemptSettled): void {
    const attempt = this.attempt;
    this.#settled = settled;
    const limit = this.#limit;
    if (limit?.error !== undefined) {
      // The handler stopped its own call while it ran; its late outcome is nobody's.
      adoptResult(returned).then(undefined, noop);
      return this.limitEnded(limit.error, limit.reason);
    }
    if (limit !== undefined) limit.wait(this);
    else {
      const base = this.#base;
      this.#unwatch = onAbort(base, () => this.limitEnded(cancelled(ctx, base), base.reason));
    }
    followOrFail(
      returned,
      (result) => {
        if (!this.finish()) return;
        ctx.outcome = { ok: true, result, attempts: attempt };
        settled(false);
      },
      (error: unknown) => {
        if (this.finish()) settled(true, failedAttempt(ctx, handlerFailure(error, attempt)));
      },
    );
  }

  /** The limit ended (or the signal aborted) while the attempt ran: it fails at once. */
  limitEnded(error: DispatchError, reason: unknown): void {
    if (!this.finish()) return;
    this.#stopped = true;
    this.#stopReason = reason;
    const failure = failedAttempt(this.#dispatch, error);
    this.#controller?.abort(reason);
    // Whoever ran the attempt takes it up once the signal has aborted, never inside a timer or
    // an abort listener.
    const settled = this.#settled;
    queueMicrotask(() => settled(true, failure));
  }

  /** Ends the attempt; false when it had already ended. */
  finish(): boolean {
    if (this.#ended) return false;
    this.#ended = true;
    this.#limit?.unwait(this);
    this.#unwatch();
    return true;
  }
}

// The progress of a call nobody listens to; `hasProgressListener` knows it by identity, so it is
// its own function and not the shared `noop`.
function ignoreProgress(): void {}

/**
 * Whether `ctx.signal` belongs to this attempt alone and never fires once it has ended, so a
 * handler may hand it to a client that never removes its listeners.
 *
 * @example
 * const signal = signalEndsWithAttempt(ctx) ? ctx.signal : linkedCopyOf(ctx.signal);
 */
export function signalEndsWithAttempt(ctx: ToolContext): boolean {
  return AttemptContext.hasAttemptSignal(ctx);
}

/**
 * Whether anyone receives the progress a handler reports through `ctx`: the dispatch's
 * `onProgress`, or an idle deadline (a tool's `timeout.idleMs`) that each report moves.
 *
 * @example
 * const onprogress = hasProgressListener(ctx) ? (note) => ctx.progress(note.progress) : undefined;
 */
export function hasProgressListener(ctx: Pick<ToolContext, 'progress'>): boolean {
  return ctx.progress !== ignoreProgress;
}

// A handler's progress report reaches the caller's listener; a listener that throws never
// fails the handler that reported.
function progressTo(listener: NonNullable<DispatchOptions['onProgress']>): ToolContext['progress'] {
  return function progress(value: number, total?: number, message?: string): void {
    if (typeof value !== 'number' || Number.isNaN(value)) return;
    const update: ProgressUpdate = { progress: value };
    if (typeof total === 'number' && !Number.isNaN(total)) update.total = total;
    if (typeof message === 'string') update.message = message;
    try {
      const returned: unknown = listener(update);
      if (isThenable(returned)) returned.then(undefined, noop);
    } catch {
      // Ignored on purpose.
    }
  };
}

// The envelope of a handler's own failure; a `DispatchError` a handler made itself is `internal`,
// never mistaken for this dispatcher's own (a timeout, say).
function handlerFailure(error: unknown, attempts: number): DispatchError {
  if (!isDispatchError(error)) return toDispatchError(classifyRateLimit(error) ?? error, attempts);
  return new DispatchError('internal', describeThrown(error), { attempts, cause: error });
}
