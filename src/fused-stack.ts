// The default stack, fused: the eight layers' happy path run as plain calls, one promise per call.
//
// Through the onion every layer that must see the outcome (error mapping, the slot release,
// retry, the deadline) chains a promise of its own, and each costs a microtask turn: on a busy
// fan-out that is most of what a dispatch costs. A stack made of exactly the default layers is
// run here instead, from the layers' own parts (src/internal/layer-parts.ts), as long as the call
// stays on the common path: a free slot, no idempotency key, a synchronous validator, a first
// attempt that succeeds. Anything else continues through the onion from the layer it reached,
// so queueing, deduplication and every retry after the first keep a single implementation.

import { callHandler, followResult, handlerFailure } from './attempt.js';
import { systemClock } from './clock.js';
import type { CallContext } from './context.js';
import { maxTimerDelayMs } from './internal/abort.js';
import type { DispatchError } from './errors.js';
import { AttemptAbort } from './internal/attempt-abort.js';
import { failedAttempt } from './internal/failures.js';
import { partsOf, type LayerKind, type LayerParts } from './internal/layer-parts.js';
import {
  composeWithAttempt,
  failWith,
  reportWhenSettled,
  type Finish,
  type Report,
  type StackRunner,
} from './stack-runner.js';
import type { Middleware, Outcome } from './types.js';

const defaultOrder: readonly LayerKind[] = [
  'errorMapping',
  'toolLookup',
  'schemaValidation',
  'budgetGuard',
  'idempotency',
  'concurrencyLimit',
  'retry',
  'timeout',
];

/** What `fuseDefaultStack` needs to know of the dispatcher. */
export interface FuseOptions {
  /** Whether `ctx.startedAt` is read from the system clock. */
  startedOnSystemClock: boolean;
}

type PartsOf<Kind extends LayerKind> = Extract<LayerParts, { kind: Kind }>;

/**
 * A runner equivalent to composing `stack` when it is exactly the default stack's layers in the
 * default order; `undefined` for any other stack.
 */
export function fuseDefaultStack(
  stack: readonly Middleware[],
  finish: Finish,
  { startedOnSystemClock }: FuseOptions,
): StackRunner | undefined {
  if (stack.length !== defaultOrder.length) return undefined;
  const parts = stack.map(partsOf);
  if (!parts.every((part, i) => part?.kind === defaultOrder[i])) return undefined;
  const tool = parts[1] as PartsOf<'toolLookup'>;
  const schema = parts[2] as PartsOf<'schemaValidation'>;
  const budget = parts[3] as PartsOf<'budgetGuard'>;
  const { semaphore } = parts[5] as PartsOf<'concurrencyLimit'>;
  const retry = parts[6] as PartsOf<'retry'>;
  const timeout = parts[7] as PartsOf<'timeout'>;

  // The first attempt starts right after the dispatch does, in the same synchronous run, so on
  // one clock its deadline counts from the dispatch's start: one clock read per call, not two.
  const sharedStart = startedOnSystemClock && timeout.clock === systemClock;

  // The onion from a given layer inward, for calls that leave the common path there.
  const onionFrom = (index: number) => composeWithAttempt(stack.slice(index));
  const fromBudget = onionFrom(3);
  const fromIdempotency = onionFrom(4);
  const fromConcurrency = onionFrom(5);
  const fromRetry = onionFrom(6);
  const fromTimeout = onionFrom(7);

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
      started = timeout.startDeadline(ctx, ms, sharedStart ? ctx.startedAt : undefined);
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
    let checked: ReturnType<PartsOf<'schemaValidation'>['check']>;
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
