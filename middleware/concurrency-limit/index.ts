/**
 * Concurrency limit: at most `max` executions inside this layer at once; the rest queue in FIFO order.
 * @module
 */

import { isDispatchError, type DispatchError } from '../../src/errors.js';
import { onAbort, cancelled, noop, optionsObject, requireClock, requireInteger } from '../kit.js';
import { keepLeaseAlive, storeUnavailable, type SlotPermit, type SlotStore } from '../../src/stores.js';
import { FifoSemaphore } from './fifo-semaphore.js';
import { trusted } from '../../src/internal/trusted.js';
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
   * A pool of slots shared with other processes (e.g. `redisSlotStore`): a fleet-wide cap on
   * top of `max`. A call takes its local slot first, then a permit from the store, holds both
   * across retries (renewing the permit's lease) and gives both back when the inner layers settle.
   * @default undefined (only the per-process cap)
   * @example
   * concurrencyLimit({ max: 8, store: redisSlotStore(redis, { pool: 'billing-api', max: 16 }) });
   */
  store?: SlotStore;
  /**
   * What a call does when the store cannot hand out a permit (`store_unavailable`): `'fail'`
   * fails it closed, so the fleet cap holds; `'local'` runs it under the per-process cap alone.
   * @default 'fail'
   * @example
   * concurrencyLimit({ max: 4, store: slots, onStoreError: 'local' });
   */
  onStoreError?: 'fail' | 'local';
  /**
   * The time source for `concurrency.acquired`'s `waitedMs`, and the timers that renew a
   * store permit's lease (when it has `setTimeout` and `clearTimeout`).
   * @default systemClock
   */
  clock?: Pick<Clock, 'now'> & Partial<Pick<Clock, 'setTimeout' | 'clearTimeout'>>;
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
  /**
   * With a store: runs `next` under a store permit, for a call that holds its local slot
   * (which the caller frees). Without one: undefined.
   */
  withPermit: ((ctx: DispatchContext, next: Next) => Promise<void>) | undefined;
} {
  const {
    max = 8,
    clock = systemClock,
    store,
    onStoreError = 'fail',
  } = optionsObject('concurrencyLimit', options);
  requireInteger('max', max, 1);
  requireClock(clock, ['now']);
  if (store !== undefined) requireSlotStore(store);
  if (onStoreError !== 'fail' && onStoreError !== 'local') {
    throw new TypeError(`onStoreError must be 'fail' or 'local', got ${String(onStoreError)}`);
  }
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

  const withPermit = store === undefined ? undefined : storePermits(store, onStoreError, clock);
  const inner =
    withPermit === undefined ? undefined : (ctx: DispatchContext, next: Next) => () => withPermit(ctx, next);

  const middleware = trusted(
    inner === undefined
      ? function concurrencyLimit(ctx: DispatchContext, next: Next): Promise<void> {
          if (semaphore.tryAcquire()) return next().then(release, releaseAndRethrow);
          return waitForSlot(ctx).then(() => next().then(release, releaseAndRethrow));
        }
      : function concurrencyLimit(ctx: DispatchContext, next: Next): Promise<void> {
          const run = inner(ctx, next);
          if (semaphore.tryAcquire()) return run().then(release, releaseAndRethrow);
          return waitForSlot(ctx).then(() => run().then(release, releaseAndRethrow));
        },
  );
  const layer = Object.assign(middleware, {
    load: (): ConcurrencyLoad => ({ running: semaphore.running, queued: semaphore.queued }),
  });
  return { layer, semaphore, withPermit };
}

// The fleet-wide half of the layer: a permit from `store`, taken after the local slot, renewed
// while held, and given back (without waiting for the store) when the inner layers settle.
function storePermits(
  store: SlotStore,
  onStoreError: 'fail' | 'local',
  clock: ConcurrencyLimitOptions['clock'] & object,
): (ctx: DispatchContext, next: Next) => Promise<void> {
  const permits = new StorePermits(store, onStoreError, clock);
  return (ctx, next) => permits.run(ctx, next);
}

class StorePermits {
  private readonly timers: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
  // How many calls of this layer wait in the store's queue right now, for `concurrency.queued`.
  private waiting = 0;

  constructor(
    private readonly store: SlotStore,
    private readonly onStoreError: 'fail' | 'local',
    private readonly clock: ConcurrencyLimitOptions['clock'] & object,
  ) {
    this.timers =
      typeof clock.setTimeout === 'function' && typeof clock.clearTimeout === 'function'
        ? (clock as Pick<Clock, 'setTimeout' | 'clearTimeout'>)
        : systemClock;
  }

  run(ctx: DispatchContext, next: Next): Promise<void> {
    let answer: SlotPermit | Promise<SlotPermit | undefined> | undefined;
    try {
      answer = this.acquire(ctx);
    } catch (error) {
      return this.failed(next, error);
    }
    if (!(answer instanceof Promise)) return this.hold(ctx, next, answer);
    return answer.then(
      (permit) => this.hold(ctx, next, permit),
      (error: unknown) => this.failed(next, error),
    );
  }

  private acquire(ctx: DispatchContext): SlotPermit | Promise<SlotPermit | undefined> | undefined {
    const answer = this.store.tryAcquire();
    if (!(answer instanceof Promise)) return answer ?? this.wait(ctx);
    const { signal } = ctx;
    return answer.then((permit) => {
      if (permit === undefined) return this.wait(ctx);
      if (!signal.aborted) return permit;
      this.giveBack(permit);
      throw cancelled(ctx, signal);
    });
  }

  private wait(ctx: DispatchContext): Promise<SlotPermit> {
    const { signal } = ctx;
    if (signal.aborted) return Promise.reject(cancelled(ctx, signal));
    const { store, clock } = this;
    const queuedAt = clock.now();
    return new Promise<SlotPermit>((resolve, reject) => {
      let settled = false;
      let unsubscribe = noop;
      const finish = () => {
        settled = true;
        this.waiting -= 1;
        unsubscribe();
      };
      this.waiting += 1;
      const leave = store.enqueue({
        grant: (permit) => {
          if (settled) return this.giveBack(permit);
          finish();
          ctx.emit('concurrency.acquired', { waitedMs: clock.now() - queuedAt });
          resolve(permit);
        },
        fail: (error) => {
          if (settled) return;
          finish();
          reject(error);
        },
      });
      if (settled) return;
      unsubscribe = onAbort(signal, () => {
        if (settled) return;
        finish();
        leave();
        reject(cancelled(ctx, signal));
      });
      ctx.emit('concurrency.queued', { queued: this.waiting, max: store.max, pool: store.pool });
    });
  }

  private hold(ctx: DispatchContext, next: Next, permit: SlotPermit | undefined): Promise<void> {
    if (permit === undefined) return next();
    const { store } = this;
    const stop = keepLeaseAlive(permit, () => store.renew(permit), this.timers);
    // A lost permit is reported, not acted on: the call keeps running (its side effects may have
    // started), and the pool is over its cap by one until the call ends.
    const unlisten = onAbort(permit.signal, () => ctx.emit('concurrency.lease_lost', { pool: store.pool }));
    const done = () => {
      stop();
      unlisten();
      this.giveBack(permit);
    };
    return next().then(done, (error: unknown) => {
      done();
      throw error;
    });
  }

  // A permit that arrives for a caller who has left goes straight back.
  private giveBack(permit: SlotPermit): void {
    try {
      Promise.resolve(this.store.release(permit)).catch(noop);
    } catch {
      // The permit's lease frees it.
    }
  }

  private failed(next: Next, error: unknown): Promise<void> {
    if (isDispatchError(error) && error.kind === 'cancelled') return Promise.reject(error);
    if (this.onStoreError === 'local') return next();
    return Promise.reject(this.unavailable(error));
  }

  private unavailable(error: unknown): DispatchError {
    return isDispatchError(error)
      ? error
      : storeUnavailable(`The slot pool "${this.store.pool}" could not be reached`, { cause: error });
  }
}

function requireSlotStore(store: unknown): void {
  const methods = ['tryAcquire', 'enqueue', 'renew', 'release'] as const;
  const missing = methods.filter(
    (method) => typeof (store as Record<string, unknown> | null)?.[method] !== 'function',
  );
  if (missing.length > 0) throw new TypeError(`store must be a SlotStore (missing ${missing.join(', ')})`);
}
