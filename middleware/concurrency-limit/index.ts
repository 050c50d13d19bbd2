// Concurrency limit: at most `max` executions inside this layer at once; the rest queue in FIFO order.

import { onAbort } from '../../src/internal/abort.js';
import { cancelled } from '../../src/internal/failures.js';
import { FifoSemaphore } from './fifo-semaphore.js';
import { trusted } from '../../src/internal/trusted.js';
import { optionsObject, requireClock, requireInteger } from '../../src/internal/options.js';
import { systemClock, type Clock } from '../../src/clock.js';
import type { DispatchContext, Middleware, Next } from '../../src/types.js';

/** Options for `concurrencyLimit`. */
export interface ConcurrencyLimitOptions {
  /**
   * The most calls running inside this layer at once. The cap belongs to the layer: each
   * `defaultStack()` call makes its own, and dispatchers built from one stack array share it.
   * @default 8
   */
  max?: number;
  /**
   * The time source for `concurrency.acquired`'s `waitedMs`.
   * @default systemClock
   */
  clock?: Pick<Clock, 'now'>;
}

/** How busy a concurrency layer is right now. */
export interface ConcurrencyLoad {
  /** Calls holding a slot. */
  running: number;
  /** Calls waiting for one. */
  queued: number;
}

/** The concurrency middleware, with a look at its semaphore. */
export interface ConcurrencyLimitMiddleware extends Middleware {
  /** Calls running inside the layer and calls waiting for a slot, right now. */
  load(): ConcurrencyLoad;
}

/**
 * Lets at most `max` calls run the layers inside it at once; the others wait in FIFO order
 * and emit `concurrency.queued`, then `concurrency.acquired` (`waitedMs`) when their turn comes. A caller that aborts while waiting leaves the queue at once with
 * `cancelled`. The slot is held across retries and freed as soon as the inner layers settle:
 * after a timeout, even when the handler ignores its signal and never settles.
 *
 * @example
 * createDispatcher([errorMapping(), toolLookup(registry), concurrencyLimit({ max: 4 })]);
 */
export function concurrencyLimit(options?: ConcurrencyLimitOptions): ConcurrencyLimitMiddleware {
  return createConcurrencyLimit(options).layer;
}

/**
 * A concurrency layer and its semaphore, for the default stack's fast runner.
 * @internal
 */
export function createConcurrencyLimit(options?: ConcurrencyLimitOptions): {
  layer: ConcurrencyLimitMiddleware;
  semaphore: FifoSemaphore;
} {
  const { max = 8, clock = systemClock } = optionsObject('concurrencyLimit', options);
  requireInteger('max', max, 1);
  requireClock(clock, ['now']);
  const semaphore = new FifoSemaphore(max);
  const release = () => semaphore.release();
  const releaseAndRethrow = (error: unknown) => {
    semaphore.release();
    throw error;
  };

  const waitForSlot = (ctx: DispatchContext): Promise<void> => {
    const { signal } = ctx;
    if (signal.aborted) return Promise.reject(cancelled(ctx, signal));
    const queuedAt = clock.now();
    return new Promise((resolve, reject) => {
      const leave = semaphore.enqueue(() => {
        unsubscribe();
        ctx.emit('concurrency.acquired', { waitedMs: clock.now() - queuedAt });
        resolve();
      });
      const unsubscribe = onAbort(signal, () => {
        leave();
        reject(cancelled(ctx, signal));
      });
      ctx.emit('concurrency.queued', { queued: semaphore.queued, max });
    });
  };

  const middleware = trusted(function concurrencyLimit(ctx: DispatchContext, next: Next): Promise<void> {
    if (semaphore.tryAcquire()) return next().then(release, releaseAndRethrow);
    return waitForSlot(ctx).then(() => next().then(release, releaseAndRethrow));
  });
  const layer = Object.assign(middleware, {
    load: (): ConcurrencyLoad => ({ running: semaphore.running, queued: semaphore.queued }),
  });
  return { layer, semaphore };
}
