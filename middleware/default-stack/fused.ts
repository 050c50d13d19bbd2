// The default stack, fused: the eight layers' happy path run as plain calls, one promise per call.
//
// Through the onion every layer that must see the outcome (error mapping, the slot release,
// retry, the deadline) chains a promise of its own, and each costs a microtask turn: on a busy
// fan-out that is most of what a dispatch costs. defaultStack() registers its layers with this
// runner (src/stack-runner.ts), which runs them from their own parts as long as the call stays
// on the common path: a free slot, no idempotency key, a synchronous validator, a first attempt
// that succeeds. Anything else continues through the onion from the layer it reached, so
// queueing, deduplication and every retry after the first keep a single implementation.

import { callHandler, followResult, handlerFailure } from '../../src/attempt.js';
import { isLocalBudget } from '../../src/budget.js';
import { systemClock } from '../../src/clock.js';
import type { CallContext } from '../../src/context.js';
import type { DispatchError } from '../../src/errors.js';
import { maxTimerDelayMs } from '../../src/internal/abort.js';
import { AttemptAbort } from '../../src/internal/attempt-abort.js';
import { failedAttempt } from '../../src/internal/failures.js';
import {
  composeWithAttempt,
  failWith,
  reportWhenSettled,
  type Finish,
  type FusedRunnerFactory,
  type FusedRunnerOptions,
  type Report,
  type StackRunner,
} from '../../src/stack-runner.js';
import type { DispatchContext, Middleware, Outcome } from '../../src/types.js';
import type { FifoSemaphore } from '../concurrency-limit/fifo-semaphore.js';
import type { RetryParts } from '../retry.js';
import type { TimeoutParts } from '../timeout/index.js';

/** A step that may fail a call: the envelope, or `undefined` to go on. */
type Check = (ctx: DispatchContext) => DispatchError | undefined;

/** The default stack's layers, by name, and the parts of each that the runner calls. */
export interface DefaultStackParts {
  readonly errorMapping: Middleware;
  readonly toolLookup: { readonly layer: Middleware; readonly lookup: Check };
  readonly schemaValidation: {
    readonly layer: Middleware;
    readonly check: (ctx: DispatchContext) => DispatchError | undefined | Promise<DispatchError | undefined>;
  };
  readonly budgetGuard: { readonly layer: Middleware; readonly check: Check };
  readonly idempotency: Middleware;
  readonly concurrencyLimit: {
    readonly layer: Middleware;
    readonly semaphore: FifoSemaphore;
    readonly withPermit: ((ctx: DispatchContext, next: () => Promise<void>) => Promise<void>) | undefined;
  };
  readonly retry: RetryParts;
  readonly timeout: TimeoutParts;
}

/**
 * The runner of the default stack: equivalent to composing its layers as an onion around the
 * attempt step, and faster on the common path.
 */
export function fusedDefaultStack(parts: DefaultStackParts): FusedRunnerFactory {
  return (finish, options) => fuse(parts, finish, options);
}

function fuse(
  parts: DefaultStackParts,
  finish: Finish,
  { startsWithDispatch }: FusedRunnerOptions,
): StackRunner {
  const { toolLookup: tool, schemaValidation: schema, budgetGuard: budget, retry, timeout } = parts;
  const { semaphore, withPermit } = parts.concurrencyLimit;

  // A first attempt that starts in the same synchronous run as the dispatch (always, unless
  // layers in front of this group deferred it) counts its deadline from the dispatch's start on
  // one clock: one clock read per call, not two.
  const sharedStart = startsWithDispatch && timeout.clock === systemClock;

  // The onion from a given layer inward, for calls that leave the common path there.
  const fromBudget = composeWithAttempt([
    budget.layer,
    parts.idempotency,
    parts.concurrencyLimit.layer,
    retry.layer,
    timeout.layer,
  ]);
  const fromIdempotency = composeWithAttempt([
    parts.idempotency,
    parts.concurrencyLimit.layer,
    retry.layer,
    timeout.layer,
  ]);
  const fromConcurrency = composeWithAttempt([parts.concurrencyLimit.layer, retry.layer, timeout.layer]);
  const fromRetry = composeWithAttempt([retry.layer, timeout.layer]);
  const fromTimeout = composeWithAttempt([timeout.layer]);

  const settle = (ctx: CallContext, running: Promise<unknown>, report: Report): void =>
    reportWhenSettled(ctx, running, finish, report);
  const fail = (ctx: CallContext, error: unknown): Outcome => failWith(ctx, error, finish);
  // An outcome known while dispatch() still runs is reported a microtask later, as through the
  // onion: its events never fire inside the dispatch() call (a listener that dispatches again
  // must not nest, call after call), and a caller that aborts in the same turn is heard first.
  const failSoon = (ctx: CallContext, error: unknown, report: Report): void => {
    queueMicrotask(() => report(fail(ctx, error)));
  };
  // The same, for calls holding a slot of the concurrency layer.
  const succeedHolding = (ctx: CallContext): Outcome => {
    semaphore.release();
    return finish(ctx);
  };
  const failHolding = (ctx: CallContext, error: unknown): Outcome => {
    semaphore.release();
    return fail(ctx, error);
  };
  const settleHolding = (ctx: CallContext, running: Promise<unknown>, report: Report): void => {
    running.then(
      () => report(succeedHolding(ctx)),
      (error: unknown) => report(failHolding(ctx, error)),
    );
  };

  const afterValidation = (ctx: CallContext, report: Report): void => {
    const spent = budget.check(ctx);
    if (spent !== undefined) return failSoon(ctx, spent, report);
    if (ctx.options.idempotencyKey !== undefined) return settle(ctx, fromIdempotency(ctx), report);
    if (!semaphore.tryAcquire()) return settle(ctx, fromConcurrency(ctx), report);
    // A fleet-wide pool answers through the onion: its permit is held across the attempts.
    if (withPermit !== undefined)
      return settleHolding(
        ctx,
        withPermit(ctx, () => fromRetry(ctx) as Promise<void>),
        report,
      );
    // A budget that may answer with a promise is taken by the onion's attempt step, which waits.
    if (ctx.budget !== undefined && !isLocalBudget(ctx.budget))
      return settleHolding(ctx, fromRetry(ctx), report);
    let ms: number;
    try {
      ms = timeout.deadlineMs(ctx);
    } catch (error) {
      // Inside the onion this is the timeout layer failing the first attempt, which retry sees.
      return failedLater(ctx, error, report);
    }
    if (ms > maxTimerDelayMs) return settleHolding(ctx, fromRetry(ctx), report);
    firstAttempt(ctx, ms, report);
  };

  // The first attempt failed: retry decides whether the onion runs the next ones.
  const failed = (ctx: CallContext, error: unknown, report: Report): void => {
    let rest: Promise<void>;
    try {
      rest = retry.afterFailure(ctx, () => fromTimeout(ctx) as Promise<void>, 1, error);
    } catch (final) {
      return report(failHolding(ctx, final));
    }
    settleHolding(ctx, rest, report);
  };

  // A failure known while the attempt is still starting (or from inside a deadline's timer or an
  // abort listener) is taken up a microtask later, as the onion would: retry then decides after
  // the caller has had its turn to abort and after the attempt's signal has aborted, never
  // inside dispatch() itself.
  const failedLater = (ctx: CallContext, error: unknown, report: Report): void => {
    queueMicrotask(() => failed(ctx, error, report));
  };

  // The first attempt, inside its deadline and holding a slot; a failure goes to retry.
  const firstAttempt = (ctx: CallContext, ms: number, report: Report): void => {
    let started: AttemptAbort | DispatchError;
    try {
      started = timeout.startDeadline(ctx, ms, sharedStart && ctx.inStartingRun ? ctx.startedAt : undefined);
    } catch (error) {
      return failedLater(ctx, error, report);
    }
    if (!(started instanceof AttemptAbort)) return failedLater(ctx, started, report);
    const source = started;
    source.own('attempt');
    let returned: unknown;
    try {
      returned = callHandler(ctx, ctx.tool as NonNullable<CallContext['tool']>, source);
    } catch (error) {
      return failedLater(ctx, source.end() ? error : source.interruption, report);
    }
    const attempt = ctx.attempt;
    // A plain value goes the same way as a promise: it is reported a promise turn later, never
    // inside the dispatch() call.
    try {
      followResult(
        returned,
        (result) => {
          if (!source.end()) return;
          ctx.outcome = { ok: true, result, attempts: attempt };
          report(succeedHolding(ctx));
        },
        (error: unknown) => {
          if (source.end()) failed(ctx, failedAttempt(ctx, handlerFailure(error, attempt)), report);
        },
      );
    } catch (error) {
      return failedLater(
        ctx,
        source.end() ? failedAttempt(ctx, handlerFailure(error, attempt)) : source.interruption,
        report,
      );
    }
    if (source.ended) return failedLater(ctx, source.interruption, report);
    // A deadline or an abort ends the attempt from a timer or a listener.
    source.own('attempt', (interruption) => failedLater(ctx, interruption, report));
  };

  return function runFusedStack(ctx: CallContext, report: Report): void {
    let checked: ReturnType<DefaultStackParts['schemaValidation']['check']>;
    try {
      checked = tool.lookup(ctx) ?? schema.check(ctx);
      if (checked === undefined) return afterValidation(ctx, report);
    } catch (error) {
      // Only steps before the slot is taken can throw here; later ones catch their own.
      return failSoon(ctx, error, report);
    }
    if (!(checked instanceof Promise)) return failSoon(ctx, checked, report);
    settle(
      ctx,
      checked.then((problem) => (problem === undefined ? fromBudget(ctx) : Promise.reject(problem))),
      report,
    );
  };
}
