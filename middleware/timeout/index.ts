// Timeout: bounds each attempt, aborting the handler's signal when the time is up.

import { systemClock, type Clock } from '../../src/clock.js';
import { DispatchError } from '../../src/errors.js';
import { noop, maxTimerDelayMs, neverAborted, onAbort } from '../../src/internal/abort.js';
import { AttemptAbort, hasLazySignal, type LazySignalContext } from '../../src/internal/attempt-abort.js';
import { DeadlineScheduler, type DeadlineList, type DeadlineNode } from './deadlines.js';
import { cancelled, failedAttempt } from '../../src/internal/failures.js';
import { trusted } from '../../src/internal/trusted.js';
import { optionsObject, requireNumber, requireClock } from '../../src/internal/options.js';
import type { DispatchContext, Middleware, Next } from '../../src/types.js';

/** Options for `timeout`. */
export interface TimeoutOptions {
  /**
   * The per-attempt timeout for tools without their own, in milliseconds; `Infinity` for none.
   * @default 30_000
   */
  defaultMs?: number;
  /**
   * The time source and timers used; an injected clock has its timers set at once.
   * @default systemClock
   */
  clock?: Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>;
}

/**
 * Gives each attempt its own deadline: the call's `timeoutMs`, else the tool's, else
 * `defaultMs`. When it passes, the attempt's signal is aborted, `dispatch.timeout` is emitted and
 * the attempt fails with `timeout` at once, whatever the handler does; its late outcome is
 * ignored. A caller abort ends the attempt at once with `cancelled`. Deadlines beyond a Node
 * timer's range (about 24.8 days) count as none.
 *
 * @example
 * createDispatcher([errorMapping(), toolLookup(registry), retry(), timeout({ defaultMs: 10_000 })]);
 */
export function timeout(options?: TimeoutOptions): Middleware {
  return createTimeout(options).layer;
}

/** What the default stack's fast runner takes from a timeout layer. */
export interface TimeoutParts {
  /** The layer. */
  readonly layer: Middleware;
  /** The clock deadlines are measured on. */
  readonly clock: unknown;
  /** The attempt's deadline in milliseconds; beyond a timer's range it has none. */
  readonly deadlineMs: (ctx: DispatchContext) => number;
  /**
   * Starts the attempt's deadline, measured from `startedAt` (by default the clock's now), or
   * says why the attempt cannot start.
   */
  readonly startDeadline: (
    ctx: DispatchContext,
    ms: number,
    startedAt?: number,
  ) => AttemptAbort | DispatchError;
}

/**
 * A timeout layer and its parts, for the default stack's fast runner.
 * @internal
 */
export function createTimeout(options?: TimeoutOptions): TimeoutParts {
  const { defaultMs = 30_000, clock = systemClock } = optionsObject('timeout', options);
  requireNumber('defaultMs', defaultMs, 0, { exclusive: true, allowInfinity: true });
  requireClock(clock, ['now', 'setTimeout', 'clearTimeout']);
  const deadlines = new DeadlineScheduler(clock);

  // Starts one attempt's deadline and watches the parent signal; see TimedAttempt.
  const startDeadline = (
    ctx: DispatchContext,
    ms: number,
    startedAt?: number,
  ): AttemptAbort | DispatchError => {
    const lazy = hasLazySignal(ctx);
    const base = lazy ? ctx.baseSignal : ctx.signal;
    const previous = lazy ? ctx.abortSource() : undefined;
    const outer = previous instanceof AttemptAbort ? previous : undefined;
    const parent = outer === undefined ? base : outer.signal;
    if (parent !== neverAborted && parent.aborted) return cancelled(ctx, parent);
    const attempt = new TimedAttempt(ctx, ms, startedAt ?? clock.now(), deadlines, lazy, base, outer);
    if (lazy) {
      ctx.setAttemptAbort(attempt);
      attempt.claimable = ctx.innermostLayer === layer;
    } else {
      ctx.signal = attempt.signal;
    }
    deadlines.schedule(attempt);
    if (parent !== neverAborted) {
      attempt.unsubscribe = onAbort(parent, () => {
        attempt.fail(cancelled(ctx, parent), parent.reason);
      });
    }
    return attempt;
  };

  const deadlineMs = (ctx: DispatchContext): number =>
    ctx.options.timeoutMs ?? ctx.tool?.timeoutMs ?? defaultMs;

  const layer = trusted(function timeout(ctx: DispatchContext, next: Next): Promise<void> {
    const ms = deadlineMs(ctx);
    if (ms > maxTimerDelayMs) return next();
    const attempt = startDeadline(ctx, ms);
    if (!(attempt instanceof AttemptAbort)) return Promise.reject(attempt);
    // The attempt step right inside us settles the attempt, deadline included; only when
    // other layers sit in between does this layer race them itself.
    return attempt.settleLayers(next());
  });
  return { layer, clock, deadlineMs, startDeadline };
}

// One attempt under a deadline. Ending it (by its outcome, the deadline or an abort) cancels the
// deadline, stops watching the parent signal and gives the layers inside back exactly the signal
// state they had, whatever a layer between the timeout and the attempt did to `ctx.signal`.
// It is its own deadline node, so an attempt costs one object, not two.
class TimedAttempt extends AttemptAbort implements DeadlineNode {
  unsubscribe: () => void = noop;
  // Attempts the call had made when this deadline started: more means one runs under it.
  readonly attemptsBefore: number;
  cancelled = false;
  list: DeadlineList | undefined = undefined;
  previous: DeadlineNode | undefined = undefined;
  next: DeadlineNode | undefined = undefined;

  constructor(
    private readonly ctx: DispatchContext,
    readonly ms: number,
    startedAt: number,
    private readonly deadlines: DeadlineScheduler,
    private readonly lazy: boolean,
    private readonly base: AbortSignal,
    private readonly outer: AttemptAbort | undefined,
  ) {
    super();
    this.deadline = startedAt + ms;
    this.attemptsBefore = ctx.attempt;
  }

  /** When the deadline passes: the attempt's own deadline, kept once. */
  get at(): number {
    return this.deadline;
  }

  protected override cleanup(): void {
    this.deadlines.cancel(this);
    this.unsubscribe();
    const { ctx } = this;
    if (this.lazy) (ctx as LazySignalContext).restoreSignal(this.base, this.outer);
    else ctx.signal = this.base;
  }

  /** The deadline passed: the attempt fails with `timeout` and its signal aborts. */
  expire(): void {
    if (this.ended) return;
    const { ctx, ms } = this;
    const error = new DispatchError(
      'timeout',
      `"${ctx.displayName}" timed out after ${ms} ms (attempt ${ctx.attempt})`,
      { attempts: ctx.attempt },
    );
    ctx.emit('dispatch.timeout', { timeoutMs: ms });
    this.fail(error, error);
  }

  /** Ends the attempt with `error`, reported as its failure when an attempt had started. */
  fail(error: DispatchError, reason: unknown): void {
    if (this.ended) return;
    if (this.ctx.attempt > this.attemptsBefore) failedAttempt(this.ctx, error);
    this.interrupt(error, reason);
  }
}
