// The innermost step of every dispatcher: one attempt of the resolved tool's handler.

import { DispatchError, describeThrown, isDispatchError, toDispatchError } from './errors.js';
import { neverAborted, raceAbort } from './internal/abort.js';
import { AttemptAbort, abortSourceOf, type AbortSource } from './internal/attempt-abort.js';
import { budgetExceeded, cancelled, failedAttempt } from './internal/failures.js';
import { isLocalBudget, type Budget } from './budget.js';
import type {
  DispatchContext,
  DispatchOptions,
  ProgressUpdate,
  Tool,
  ToolContext,
  ToolHandler,
} from './types.js';

/**
 * Runs one attempt: takes a budget unit, counts the attempt, emits `dispatch.attempt`, calls the
 * handler with the current signal and records a success in `ctx.outcome`. A handler failure is
 * rejected as an envelope (`transient` for a `TransientError`, otherwise `internal`); an abort
 * ends the attempt at once and the handler's late outcome is ignored.
 */
export function runAttempt(ctx: DispatchContext): Promise<void> {
  const { tool } = ctx;
  if (tool === undefined) {
    return Promise.reject(
      new DispatchError(
        'internal',
        'No tool was resolved for this call: the stack needs toolLookup(registry)',
        { attempts: ctx.attempt },
      ),
    );
  }
  const source = abortSourceOf(ctx);
  const { budget } = ctx;
  if (budget !== undefined && !isLocalBudget(budget)) return attemptOnSharedBudget(ctx, tool, source, budget);
  return attemptWith(ctx, tool, source, false);
}

// A budget that may answer with a promise: the unit is taken first, and the attempt starts only
// once it is, under the abort source it was asked for.
function attemptOnSharedBudget(
  ctx: DispatchContext,
  tool: Tool,
  source: AbortSource,
  budget: Budget,
): Promise<void> {
  if (source.aborted) return Promise.reject(cancelled(ctx, ctx.signal));
  let taken: boolean | Promise<boolean>;
  try {
    taken = budget.tryConsume(1);
  } catch (error) {
    return Promise.reject(error);
  }
  if (taken === true) return attemptWith(ctx, tool, source, true);
  if (!isThenable(taken)) return Promise.reject(budgetExceeded(ctx));
  const charged = adoptResult(taken).then(
    (ok) => {
      if (ok !== true) throw budgetExceeded(ctx);
    },
    (error: unknown) => {
      throw budgetUnavailable(ctx, error);
    },
  );
  // Not claimed while the store answers: a timeout layer outside races this wait itself.
  const waited =
    source instanceof AttemptAbort || source === neverAborted
      ? charged
      : raceAbort(charged, source, () => cancelled(ctx, source));
  return waited.then(() => {
    // The deadline passed, or the caller left, while the unit was being taken.
    if (source.aborted) throw cancelled(ctx, ctx.signal);
    return attemptWith(ctx, tool, source, true);
  });
}

function attemptWith(ctx: DispatchContext, tool: Tool, source: AbortSource, charged: boolean): Promise<void> {
  // Right inside a timeout layer, this step settles the attempt for it (see AttemptAbort).
  const claimed = source instanceof AttemptAbort && source.claimable && source.owner === 'none';
  if (claimed) source.own('attempt');
  let returned: unknown;
  try {
    returned = callHandler(ctx, tool, source, charged);
  } catch (error) {
    if (claimed && !source.end()) return Promise.reject(source.interruption);
    return Promise.reject(error);
  }
  const attempt = ctx.attempt;
  if (!mayBeThenable(returned)) {
    if (claimed && !source.end()) return Promise.reject(source.interruption);
    ctx.outcome = { ok: true, result: returned, attempts: attempt };
    return Promise.resolve();
  }
  if (claimed) {
    return new Promise<void>((resolve, reject) => {
      try {
        followResult(
          returned,
          (result) => {
            if (!source.end()) return;
            ctx.outcome = { ok: true, result, attempts: attempt };
            resolve();
          },
          (error: unknown) => {
            if (source.end()) reject(failedAttempt(ctx, handlerFailure(error, attempt)));
          },
        );
      } catch (error) {
        reject(source.end() ? failedAttempt(ctx, handlerFailure(error, attempt)) : source.interruption);
        return;
      }
      if (source.ended) reject(source.interruption);
      else source.own('attempt', reject);
    });
  }
  const settled = adoptResult(returned);
  // A failure after the attempt was aborted is late: it is no longer this attempt's outcome.
  const fail = (error: unknown) => {
    const failure = handlerFailure(error, attempt);
    throw source.aborted ? failure : failedAttempt(ctx, failure);
  };
  if (source instanceof AttemptAbort) {
    // A layer between us and the timeout races the attempt; a late outcome is not recorded.
    return builtInThen.call(
      settled,
      (result) => {
        if (!source.aborted) ctx.outcome = { ok: true, result, attempts: attempt };
      },
      fail,
    ) as Promise<void>;
  }
  const record = (result: unknown) => {
    ctx.outcome = { ok: true, result, attempts: attempt };
  };
  if (source === neverAborted) return builtInThen.call(settled, record, fail) as Promise<void>;
  return raceAbort(builtInThen.call(settled, undefined, fail), source, () =>
    failedAttempt(ctx, cancelled(ctx, source)),
  ).then(record);
}

/**
 * Starts one attempt of `tool` under `source`: takes a budget unit (unless `charged`: the caller
 * took it already), counts the attempt, emits `dispatch.attempt` and calls the handler. Returns
 * what the handler returned; throws the envelope when the attempt cannot start (aborted, budget
 * spent) or the handler throws. A budget whose `tryConsume` answers with a promise must be
 * charged by the caller first (see `isLocalBudget`); one that does so here anyway fails closed.
 */
export function callHandler(ctx: DispatchContext, tool: Tool, source: AbortSource, charged = false): unknown {
  if (source.aborted) throw cancelled(ctx, ctx.signal);
  if (!charged && ctx.budget !== undefined) {
    const taken = ctx.budget.tryConsume(1);
    if (taken !== true) {
      if (isThenable(taken)) {
        (taken as Promise<unknown>).then(undefined, ignoreProgress);
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
  // An observer of that event may have aborted the call; the handler is then not started.
  if (source.aborted) throw cancelled(ctx, ctx.signal);
  const handler = tool.handler as ToolHandler<unknown>;
  try {
    // A handler that declares no context parameter (`(args) => …`) can reach it only through
    // `arguments`: it gets the same fields as prototype getters, which cost nothing until read.
    const toolCtx =
      handler.length === 1
        ? new LeanAttemptContext(source, attempt, ctx)
        : new AttemptContext(source, attempt, ctx);
    return handler(ctx.args, toolCtx);
  } catch (error) {
    throw failedAttempt(ctx, handlerFailure(error, attempt));
  }
}

// The built-in `then`, as `await` uses it: a handler's promise may carry a `then` of its own,
// which could throw or call back before it returns.
const builtInThen = Promise.prototype.then as (
  this: Promise<unknown>,
  onFulfilled?: ((value: unknown) => unknown) | undefined,
  onRejected?: ((reason: unknown) => unknown) | undefined,
) => Promise<unknown>;

/**
 * What a handler returned, as a native promise: any thenable is adopted (a `then` that throws
 * becomes a rejection), and a promise whose `constructor` cannot be read becomes one too.
 */
function adoptResult(returned: unknown): Promise<unknown> {
  try {
    return Promise.resolve(returned);
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * Calls back when what a handler returned settles, always later, never before this returns.
 * Throws only if the promise's species cannot be built, as a hostile subclass may arrange.
 */
export function followResult(
  returned: unknown,
  onFulfilled: (value: unknown) => void,
  onRejected: (reason: unknown) => void,
): void {
  void builtInThen.call(adoptResult(returned), onFulfilled, onRejected);
}

/** The envelope of a shared budget that could not answer: the attempt fails closed, before its handler. */
function budgetUnavailable(ctx: DispatchContext, error: unknown): DispatchError {
  if (isDispatchError(error)) return error;
  return new DispatchError(
    'store_unavailable',
    `The tool-call budget could not be charged: ${describeThrown(error)}`,
    {
      attempts: ctx.attempt,
      cause: error,
    },
  );
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return mayBeThenable(value) && typeof (value as { then?: unknown }).then === 'function';
}

/** Whether a handler's return value must go through `Promise.resolve`: it may be a thenable. */
function mayBeThenable(value: unknown): boolean {
  // typeof only: `instanceof` would ask a proxy for its prototype, and a hostile one throws.
  return (typeof value === 'object' && value !== null) || typeof value === 'function';
}

// What a handler is given. Every field is an own enumerable property, so a handler that passes
// `{ ...ctx }` on (or logs it) keeps them all. The signal of a lazy per-attempt abort is still
// built only when read: an AbortController costs more than the rest of an attempt, so it is an
// own accessor there, defined from one shared descriptor.
// Its link to the dispatch is #private: a handler that logs its context shows only what
// ToolContext promises, never the dispatch's internals or, through them, other calls.
class AttemptContext implements ToolContext {
  declare readonly signal: AbortSignal;
  readonly #source: AttemptAbort | undefined;
  readonly idempotencyKey: string | undefined;
  readonly callId: string;
  readonly deadline: number;
  readonly progress: ToolContext['progress'];

  /** Whether `ctx` is an AttemptContext whose signal is that of an abort owned by its attempt. */
  static hasAttemptSignal(ctx: unknown): boolean {
    return typeof ctx === 'object' && ctx !== null && #source in ctx && endsWithAttempt(ctx.#source);
  }

  static readonly #lazySignal: PropertyDescriptor = {
    get(this: AttemptContext): AbortSignal {
      return (this.#source as AttemptAbort).signal;
    },
    enumerable: true,
    configurable: false,
  };

  constructor(
    source: AbortSignal | AttemptAbort,
    readonly attempt: number,
    ctx: DispatchContext,
  ) {
    const { options } = ctx;
    this.idempotencyKey = options.idempotencyKey;
    this.callId = ctx.callId;
    this.deadline = source instanceof AttemptAbort ? source.deadline : Infinity;
    this.progress = options.onProgress === undefined ? ignoreProgress : progressTo(options.onProgress);
    if (source instanceof AttemptAbort) {
      this.#source = source;
      Object.defineProperty(this, 'signal', AttemptContext.#lazySignal);
    } else {
      this.#source = undefined;
      (this as { signal: AbortSignal }).signal = source;
    }
  }
}

// The context of a handler that declares only its args: every field works, read lazily through
// the prototype, so the attempt builds neither the signal nor a generated call id for it.
class LeanAttemptContext implements ToolContext {
  readonly #source: AbortSignal | AttemptAbort;
  readonly #ctx: DispatchContext;

  constructor(
    source: AbortSignal | AttemptAbort,
    readonly attempt: number,
    ctx: DispatchContext,
  ) {
    this.#source = source;
    this.#ctx = ctx;
  }

  /** Whether `ctx` is a LeanAttemptContext whose signal is that of an abort owned by its attempt. */
  static hasAttemptSignal(ctx: unknown): boolean {
    return typeof ctx === 'object' && ctx !== null && #source in ctx && endsWithAttempt(ctx.#source);
  }

  get signal(): AbortSignal {
    const source = this.#source;
    return source instanceof AttemptAbort ? source.signal : source;
  }

  get idempotencyKey(): string | undefined {
    return this.#ctx.options.idempotencyKey;
  }

  get callId(): string {
    return this.#ctx.callId;
  }

  get deadline(): number {
    const source = this.#source;
    return source instanceof AttemptAbort ? source.deadline : Infinity;
  }

  get progress(): ToolContext['progress'] {
    const { onProgress } = this.#ctx.options;
    return onProgress === undefined ? ignoreProgress : progressTo(onProgress);
  }
}

function ignoreProgress(): void {}

// A claimable abort is made by a timeout layer right outside the attempt step: it lives for
// exactly one attempt and, once that has ended, nothing aborts it any more (see AttemptAbort).
function endsWithAttempt(source: AbortSignal | AttemptAbort | undefined): boolean {
  return source instanceof AttemptAbort && source.claimable;
}

/**
 * Whether `ctx.signal` belongs to this attempt alone and never fires once the attempt has ended,
 * as under a timeout layer right outside it (the default stack): a handler may then give it to a
 * client that never removes its listeners or acts on any later abort, instead of a signal of
 * its own linked to it. False for any other context, so the handler keeps its own.
 *
 * @example
 * const signal = signalEndsWithAttempt(ctx) ? ctx.signal : linkedCopyOf(ctx.signal);
 */
export function signalEndsWithAttempt(ctx: ToolContext): boolean {
  return AttemptContext.hasAttemptSignal(ctx) || LeanAttemptContext.hasAttemptSignal(ctx);
}

/**
 * Whether anyone receives the progress a handler reports through `ctx`: false when the dispatch
 * had no `onProgress`, so a handler that relays progress from elsewhere (a remote MCP tool) need
 * not ask for it at all.
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
      if (typeof (returned as PromiseLike<unknown> | undefined)?.then === 'function') {
        (returned as PromiseLike<unknown>).then(undefined, ignoreProgress);
      }
    } catch {
      // Ignored on purpose.
    }
  };
}

/**
 * The envelope of a handler's own failure: `transient` for a `TransientError`, `tool_error` for a
 * `ToolError`, otherwise `internal`; even a `DispatchError` of kind `timeout` that a handler made
 * itself is `internal`, never mistaken for a timeout of this dispatcher.
 */
export function handlerFailure(error: unknown, attempts: number): DispatchError {
  if (!isDispatchError(error)) return toDispatchError(error, attempts);
  return new DispatchError('internal', describeThrown(error), { attempts, cause: error });
}
