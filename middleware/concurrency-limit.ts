// Concurrency limit: at most `max` executions inside this layer at once; the rest queue in FIFO order.

import { Semaphore } from 'async-mutex';
import { onAbort, swallow } from '../src/internal/abort.js';
import { cancelled } from '../src/internal/failures.js';
import { optionsObject, requireInteger } from '../src/internal/options.js';
import type { DispatchContext, Middleware, Next } from '../src/types.js';

/** Options for `concurrencyLimit`. */
export interface ConcurrencyLimitOptions {
  /**
   * The most calls running inside this layer at once, per dispatcher.
   * @default 8
   */
  max?: number;
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
 * and emit `concurrency.queued`. A caller that aborts while waiting leaves at once with
 * `cancelled`. The slot is held across retries and freed as soon as the inner layers settle:
 * after a timeout, even when the handler ignores its signal and never settles.
 *
 * @example
 * createDispatcher([errorMapping(), toolLookup(registry), concurrencyLimit({ max: 4 })]);
 */
export function concurrencyLimit(options?: ConcurrencyLimitOptions): ConcurrencyLimitMiddleware {
  const { max = 8 } = optionsObject('concurrencyLimit', options);
  requireInteger('max', max, 1);
  const semaphore = new Semaphore(max);
  let queued = 0;

  const waitForSlot = (ctx: DispatchContext): Promise<() => void> => {
    const { signal } = ctx;
    if (signal.aborted) return Promise.reject(cancelled(ctx, signal));
    queued += 1;
    ctx.emit('concurrency.queued', { queued, max });
    return new Promise((resolve, reject) => {
      let abandoned = false;
      const unsubscribe = onAbort(signal, () => {
        abandoned = true;
        queued -= 1;
        reject(cancelled(ctx, signal));
      });
      semaphore.acquire().then(([, release]) => {
        // A caller that already left hands its slot straight to the next in line.
        if (abandoned) return release();
        unsubscribe();
        queued -= 1;
        resolve(release);
      }, swallow);
    });
  };

  const middleware = async function concurrencyLimit(
    ctx: DispatchContext,
    next: Next,
  ): Promise<void> {
    const release = semaphore.isLocked()
      ? await waitForSlot(ctx)
      : (await semaphore.acquire())[1];
    try {
      await next();
    } finally {
      release();
    }
  };
  return Object.assign(middleware, {
    load: () => ({ running: max - semaphore.getValue(), queued }),
  });
}
