/**
 * Retry: re-runs the layers inside it after a retryable failure, with jittered exponential backoff.
 * @module
 */

import { systemClock, type Clock } from '../src/clock.js';
import {
  type DispatchError,
  type DispatchErrorKind,
  describeThrown,
  toDispatchError,
} from '../src/errors.js';
import {
  sleep,
  raceAbort,
  withMessage,
  budgetExceeded,
  cancelled,
  optionKeys,
  optionsObject,
  requireFunction,
  requireInteger,
  requireNumber,
  requireClock,
} from './kit.js';
import { trusted } from '../src/internal/trusted.js';
import type { MaybePromise } from '../src/stores.js';
import type { DispatchContext, Middleware, Next } from '../src/types.js';

/**
 * What `retry({ budget })` takes: a budget every first attempt pays into and every retry draws
 * from (`retryBudget()` is one; a budget of your own needs only these two methods).
 */
export interface RetryBudgetLike {
  /** Pays in for the call's first attempt; never waits. A throw is ignored (the static rules hold). */
  deposit(ctx: DispatchContext): void;
  /**
   * Takes one retry's token, and says whether it did. A rejection (a store that cannot answer)
   * lets the retry happen under the static rules, with a `retry.budget_unavailable` event.
   */
  tryWithdraw(ctx: DispatchContext): MaybePromise<boolean>;
}

/** Options for `retry`. */
export interface RetryOptions {
  /** Attempts in total, the first included (not retries). @default 3 */
  maxAttempts?: number;
  /** The wait before the second attempt, before jitter, in milliseconds. @default 100 */
  baseDelayMs?: number;
  /** How much each wait grows: the wait before attempt n+1 is `baseDelayMs × factor^(n−1)`. @default 4 */
  factor?: number;
  /** The random share added to each wait: it is multiplied by `1 + U × jitter`, U in [0, 1). @default 0.5 */
  jitter?: number;
  /** The longest wait, in milliseconds, a `TransientError`'s `retryAfterMs` included. @default 30_000 */
  maxDelayMs?: number;
  /** The source of U, returning a number in [0, 1). @default Math.random */
  random?: () => number;
  /** The timers used to wait. @default systemClock */
  clock?: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
  /** Decides whether a failure is retried. @default isRetryable */
  shouldRetry?: (error: DispatchError, ctx: DispatchContext) => boolean;
  /**
   * A retry budget (`retryBudget({ ratio: 0.2, minPerSecond: 10 })`): a retry `shouldRetry`
   * allows is made only if the budget holds a token; when it is spent the failure is the
   * outcome, its message saying so, and `retry.budget_exhausted` fires.
   * @default undefined (no budget: every retry the rules allow)
   */
  budget?: RetryBudgetLike;
}

const retryOptionKeys = optionKeys<RetryOptions>({
  maxAttempts: true,
  baseDelayMs: true,
  factor: true,
  jitter: true,
  maxDelayMs: true,
  random: true,
  clock: true,
  shouldRetry: true,
  budget: true,
});

/** The clause a failure's message ends with when the retry budget kept it from being retried. */
const budgetSpentClause = '(not retried: the retry budget is spent)';

// The retry layer's event, merged into the core's event map (the engine never emits it).
declare module '../src/types.js' {
  interface DispatchEventDetails {
    /** Retry waits `delayMs` before the next attempt, after a failure of `kind`. */
    'dispatch.retry': {
      /** The backoff before the next attempt, in milliseconds. */
      readonly delayMs: number;
      /** The kind of the failure being retried. */
      readonly kind: DispatchErrorKind;
    };
    /** A retry the rules allowed was not made: the retry budget is spent. */
    'retry.budget_exhausted': {
      /** The kind of the failure that was not retried (the outcome's kind). */
      readonly kind: DispatchErrorKind;
    };
    /** The retry budget could not answer (its store failed): the retry went ahead under the static rules. */
    'retry.budget_unavailable': {
      /** The kind of the failure being retried. */
      readonly kind: DispatchErrorKind;
      /** What the budget failed with, in words. */
      readonly reason: string;
    };
  }
}

/**
 * The default retry decision: `transient` and `store_unavailable` for every tool, `timeout` for
 * idempotent tools only.
 *
 * @example
 * retry({ shouldRetry: (error, ctx) => error.kind === 'rate_limited' || isRetryable(error, ctx) });
 */
export function isRetryable(error: DispatchError, ctx: DispatchContext): boolean {
  if (error.kind === 'transient' || error.kind === 'store_unavailable') return true;
  return error.kind === 'timeout' && ctx.tool?.idempotent === true;
}

/**
 * Runs the inner layers up to `maxAttempts` times, waiting a jittered exponential backoff (or the
 * failure's `retryAfterMs`) before each retry and emitting `dispatch.retry`.
 *
 * @example
 * retry({ maxAttempts: 5, baseDelayMs: 50, random: () => 0 }); // waits 50, 200, 800, 3200 ms
 */
export function retry(options?: RetryOptions): Middleware {
  const {
    maxAttempts = 3,
    baseDelayMs = 100,
    factor = 4,
    jitter = 0.5,
    maxDelayMs = 30_000,
    random = Math.random,
    clock = systemClock,
    shouldRetry = isRetryable,
    budget: retryBudget,
  } = optionsObject('retry', options, retryOptionKeys);
  requireInteger('maxAttempts', maxAttempts, 1);
  requireNumber('baseDelayMs', baseDelayMs, 0);
  requireNumber('factor', factor, 1);
  requireNumber('jitter', jitter, 0);
  requireNumber('maxDelayMs', maxDelayMs, 0, { allowInfinity: true });
  requireFunction('random', random);
  requireFunction('shouldRetry', shouldRetry);
  requireClock(clock, ['setTimeout', 'clearTimeout']);
  if (
    retryBudget !== undefined &&
    (typeof retryBudget !== 'object' ||
      retryBudget === null ||
      typeof retryBudget.deposit !== 'function' ||
      typeof retryBudget.tryWithdraw !== 'function')
  ) {
    throw new TypeError('budget must be a retry budget with deposit() and tryWithdraw() (see retryBudget())');
  }

  const delayBefore = (attempt: number, failure: DispatchError): number => {
    const computed = baseDelayMs * factor ** (attempt - 1) * (1 + random() * jitter);
    return Math.min(maxDelayMs, Math.max(computed, failure.retryAfterMs ?? 0));
  };

  // A failure starts the loop: a call whose first attempt succeeds passes through one reaction.
  const retryAfter = async (ctx: DispatchContext, next: Next, thrown: unknown): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      const failure = toDispatchError(thrown, ctx.attempt);
      if (attempt >= maxAttempts || !shouldRetry(failure, ctx)) throw failure;
      const { signal, budget } = ctx;
      if (signal.aborted) throw cancelled(ctx, signal);
      if (budget !== undefined && !(budget.remaining >= 1)) throw budgetExceeded(ctx, failure);
      // Asked last, so a retry that something else forbids never spends a token.
      if (retryBudget !== undefined && !(await withdrawFor(retryBudget, ctx, failure))) {
        ctx.emit('retry.budget_exhausted', { kind: failure.kind });
        throw withMessage(failure, `${failure.message} ${budgetSpentClause}`);
      }
      const delayMs = delayBefore(attempt, failure);
      ctx.emit('dispatch.retry', { delayMs, kind: failure.kind });
      if (delayMs > 0) await sleep(delayMs, signal, clock, () => cancelled(ctx, signal));
      try {
        await next();
        return;
      } catch (error) {
        thrown = error;
      }
    }
  };

  return trusted(function retry(ctx: DispatchContext, next: Next): Promise<void> {
    if (retryBudget !== undefined) depositFor(retryBudget, ctx);
    let first: Promise<void>;
    try {
      first = next();
    } catch (error) {
      // A `next` that throws (never compose's) is a failed attempt, as it was to an async loop.
      return retryAfter(ctx, next, error);
    }
    return first.then(undefined, (error: unknown) => retryAfter(ctx, next, error));
  });
}

// A budget that throws on a deposit costs that deposit, never the call.
function depositFor(budget: RetryBudgetLike, ctx: DispatchContext): void {
  try {
    budget.deposit(ctx);
  } catch {
    // Ignored on purpose: the withdrawal that follows, if any, says what the budget can do.
  }
}

// Whether the budget lets this retry happen; one that cannot answer lets it (the static rules).
async function withdrawFor(
  budget: RetryBudgetLike,
  ctx: DispatchContext,
  failure: DispatchError,
): Promise<boolean> {
  const { signal } = ctx;
  try {
    return (
      (await raceAbort(Promise.resolve(budget.tryWithdraw(ctx)), signal, () => cancelled(ctx, signal))) ===
      true
    );
  } catch (error) {
    if (signal.aborted) throw cancelled(ctx, signal);
    ctx.emit('retry.budget_unavailable', { kind: failure.kind, reason: describeThrown(error) });
    return true;
  }
}
