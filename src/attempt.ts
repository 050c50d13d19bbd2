/**
 * The innermost step of every dispatcher: one attempt of the resolved tool's handler.
 * @module
 */

import type { Budget } from './budget.js';
import type { CallContext } from './context.js';
import { DispatchError, describeThrown, isDispatchError, toDispatchError } from './errors.js';
import { neverAborted, noop, onAbort, raceAbort } from './internal/abort.js';
import { attemptCost } from './internal/cost.js';
import { budgetExceeded, cancelled, failedAttempt } from './internal/failures.js';
import { hostDenialOf } from './internal/host-denial.js';
import { AttemptInFlight, progressUnder, type Limit, type LimitWaiter } from './internal/limits.js';
import { parseJsonArgs } from './internal/raw-json-args.js';
import { reconcileFailure } from './internal/reconcile.js';
import { ignoreRejection } from './internal/thenable.js';
import { classifyRateLimit } from './rate-limit-signals.js';
import type { DispatchOptions, ProgressUpdate, Tool, ToolContext, ToolHandler } from './types.js';

/**
 * Runs one attempt of `ctx.tool`'s handler: checks that it may start, takes its cost from the
 * budget, counts it, calls the handler and records a success in `ctx.outcome`. Rejects with the
 * envelope, at once when the limit it runs under (or, with none, `ctx.signal`) ends first.
 */
export function runAttempt(ctx: CallContext): Promise<void> {
  let inFlight: AttemptInFlight | undefined;
  try {
    const { tool } = ctx;
    if (tool === undefined) {
      const message = 'No tool was resolved for this call: the stack needs toolLookup(registry)';
      throw new DispatchError('internal', message, { attempts: ctx.attempt });
    }
    // A stack without the schema layer still hands the handler its args, never the JSON text, and
    // a call a person refused never runs, even in a stack without the approval gate.
    const refused = parseJsonArgs(ctx) ?? hostDenialOf(ctx);
    if (refused !== undefined) throw refused;
    // Under a limit the attempt ends with it; otherwise with the signal a layer set, or the caller's.
    const limit = ctx.currentLimit;
    const base = limit === undefined ? ctx.baseSignal : neverAborted;
    throwIfStopped(ctx, limit, base);
    // A limit that ends while this attempt runs waits for its outcome (see untilLimitEnds).
    inFlight = limit === undefined ? undefined : new AttemptInFlight(limit);
    const { budget } = ctx;
    // A budget that answers yes at once lets the attempt start in the same turn.
    const taken = budget === undefined || charge(ctx, budget);
    if (taken === true) return startHandler(ctx, tool, limit, base, inFlight);
    const charged = inFlight;
    return chargedLater(ctx, taken, limit, base).then(
      () => startHandler(ctx, tool, limit, base, charged),
      (error: unknown) => {
        charged?.end(true, error);
        throw error;
      },
    );
  } catch (error) {
    inFlight?.end(true, error);
    return Promise.reject(error);
  }
}

// Counts the attempt and calls the handler; settles as the attempt ends, having recorded a
// success in `ctx.outcome` and ended `inFlight` (after `reconcile`, for a tool that has one).
function startHandler(
  ctx: CallContext,
  tool: Tool,
  limit: Limit | undefined,
  base: AbortSignal,
  inFlight: AttemptInFlight | undefined,
): Promise<void> {
  const attempt = ++ctx.attempt;
  ctx.emit('dispatch.attempt');
  const reconcile = tool.reconcile;
  let settled: Promise<void>;
  try {
    // An observer of that event may have stopped the call; the handler is then not started.
    throwIfStopped(ctx, limit, base);
  } catch (error) {
    inFlight?.end(true, error);
    return Promise.reject(error);
  }
  const run = new AttemptContext(ctx, attempt, limit, base);
  try {
    settled = run.settle(callHandler(ctx, tool, run), reconcile === undefined ? inFlight : undefined);
  } catch (error) {
    if (reconcile === undefined) {
      inFlight?.end(true, error);
      return Promise.reject(error);
    }
    settled = Promise.reject(error);
  }
  if (reconcile === undefined) return settled;
  // Reconcile before retry: only an attempt whose handler started can have acted.
  return settled
    .then(undefined, (error: unknown) => reconcileFailure(ctx, tool, attempt, error))
    .then(
      () => inFlight?.end(false, undefined),
      (error: unknown) => {
        inFlight?.end(true, error);
        throw error;
      },
    );
}

// Why the attempt may not run, if something already stopped it.
function stopOf(ctx: CallContext, limit: Limit | undefined, base: AbortSignal): DispatchError | undefined {
  if (limit !== undefined) return limit.error;
  return base !== neverAborted && base.aborted ? cancelled(ctx, base) : undefined;
}

function throwIfStopped(ctx: CallContext, limit: Limit | undefined, base: AbortSignal): void {
  const stopped = stopOf(ctx, limit, base);
  if (stopped !== undefined) throw stopped;
}

// Takes the attempt's cost from `budget`; an attempt that costs nothing takes nothing.
function charge(ctx: CallContext, budget: Budget): boolean | Promise<boolean> {
  const units = attemptCost(ctx);
  return units === 0 || budget.tryConsume(units);
}

// A budget that said no, or answers later: its answer is awaited inside the attempt's limits.
async function chargedLater(
  ctx: CallContext,
  taken: false | Promise<boolean>,
  limit: Limit | undefined,
  base: AbortSignal,
): Promise<void> {
  if (taken === false) throw budgetExceeded(ctx);
  const signal = limit === undefined ? base : limit.signal;
  await raceAbort(takenLater(ctx, taken), signal, () => cancelled(ctx, signal));
  throwIfStopped(ctx, limit, base);
}

async function takenLater(ctx: CallContext, taken: Promise<boolean>): Promise<void> {
  let ok: boolean;
  try {
    ok = await taken;
  } catch (error) {
    throw budgetUnavailable(ctx, error);
  }
  if (ok !== true) throw budgetExceeded(ctx);
}

/** The envelope of a shared budget that could not answer: the attempt fails closed, before its handler. */
function budgetUnavailable(ctx: CallContext, error: unknown): DispatchError {
  if (isDispatchError(error)) return error;
  const message = `The tool-call budget could not be charged: ${describeThrown(error)}`;
  return new DispatchError('store_unavailable', message, { attempts: ctx.attempt, cause: error });
}

function callHandler(ctx: CallContext, tool: Tool, run: AttemptContext): unknown {
  try {
    return (tool.handler as ToolHandler<unknown>)(ctx.args, run);
  } catch (error) {
    run.finish();
    throw failedAttempt(ctx, handlerFailure(error, run.attempt));
  }
}

// The built-in `then`, called on a native promise: a promise's own `then` is never called.
const nativeThen = Promise.prototype.then;

/** Whether a handler's return value must be awaited: it may be a thenable. */
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
  readonly #dispatch: CallContext;
  readonly #base: AbortSignal;
  #controller: AbortController | undefined = undefined;
  #ended = false;
  #stopReason: unknown = undefined;
  #stopped = false;
  #succeed: (result: unknown) => void = noop;
  #fail: (failure: DispatchError) => void = noop;
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
    dispatch: CallContext,
    readonly attempt: number,
    limit: Limit | undefined,
    base: AbortSignal,
  ) {
    this.#dispatch = dispatch;
    this.#base = base;
    const { options } = dispatch;
    this.idempotencyKey = options.idempotencyKey;
    this.callId = dispatch.callId;
    this.deadline = dispatch.deadline;
    this.progress = progressUnder(
      limit,
      options.onProgress === undefined ? ignoreProgress : progressTo(options.onProgress),
    );
    this.#limit = limit;
    if (limit === undefined) (this as { signal: AbortSignal }).signal = base;
    else Object.defineProperty(this, 'signal', AttemptContext.#lazySignal);
  }

  /**
   * Settles once what the handler returned has: a success is recorded in the call's `outcome`
   * and `inFlight` (when given) ended, then this resolves; a failure ends `inFlight` (when given)
   * and rejects. The attempt fails instead at once when its limit (or, with none, its signal)
   * ends first, or ended while the handler ran (then it throws, leaving `inFlight` to the caller).
   */
  settle(returned: unknown, inFlight: AttemptInFlight | undefined): Promise<void> {
    const limit = this.#limit;
    const stopped = stopOf(this.#dispatch, limit, this.#base);
    if (stopped !== undefined) {
      this.finish();
      // The handler stopped its own call while it ran; its late outcome is nobody's.
      if (mayBeThenable(returned)) this.#follow(returned);
      this.#stop(limit === undefined ? this.#base.reason : limit.reason);
      throw failedAttempt(this.#dispatch, stopped);
    }
    if (!mayBeThenable(returned)) {
      this.#record(returned, inFlight);
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      this.#succeed = (result) => {
        this.#record(result, inFlight);
        resolve();
      };
      this.#fail = (failure) => {
        inFlight?.end(true, failure);
        reject(failure);
      };
      if (limit !== undefined) limit.wait(this);
      else {
        const base = this.#base;
        this.#unwatch = onAbort(base, () => this.limitEnded(cancelled(this.#dispatch, base), base.reason));
      }
      this.#follow(returned);
    });
  }

  #record(result: unknown, inFlight: AttemptInFlight | undefined): void {
    this.#dispatch.outcome = { ok: true, result, attempts: this.attempt };
    inFlight?.end(false, undefined);
  }

  // Follows what the handler returned as `await` does, with no promise of its own: a native
  // promise through the built-in `then` (never one of its own), anything else thenable a turn
  // later; a `then` or `constructor` that throws fails the attempt.
  #follow(returned: unknown): void {
    let promise: Promise<unknown>;
    try {
      promise = Promise.resolve(returned);
    } catch (error) {
      this.#handlerFailed(error);
      return;
    }
    nativeThen.call(
      promise,
      (result: unknown) => {
        if (this.finish()) this.#succeed(result);
      },
      (error: unknown) => this.#handlerFailed(error),
    );
  }

  #handlerFailed(error: unknown): void {
    if (this.finish()) this.#fail(failedAttempt(this.#dispatch, handlerFailure(error, this.attempt)));
  }

  /** The limit ended (or the signal aborted) while the attempt ran: it fails at once. */
  limitEnded(error: DispatchError, reason: unknown): void {
    if (!this.finish()) return;
    this.#stop(reason);
    // Whoever ran the attempt takes it up once the signal has aborted, in a promise reaction,
    // never inside a timer or an abort listener.
    this.#fail(failedAttempt(this.#dispatch, error));
  }

  /** Ends the attempt; false when it had already ended. */
  finish(): boolean {
    if (this.#ended) return false;
    this.#ended = true;
    this.#limit?.unwait(this);
    this.#unwatch();
    return true;
  }

  #stop(reason: unknown): void {
    this.#stopped = true;
    this.#stopReason = reason;
    this.#controller?.abort(reason);
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
      ignoreRejection(listener(update));
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
