/**
 * Concurrency limit: at most `max` executions inside this layer at once; the rest queue in FIFO order.
 * @module
 */

import { optionKeys, optionsObject, requireClock, requireFunction, requireInteger } from '../kit.js';
import type { SlotStore } from './store.js';
import { trusted } from '../../src/internal/trusted.js';
import { systemClock, type Clock } from '../../src/clock.js';
import type { DispatchContext, Middleware, Next } from '../../src/types.js';
import { SlotGate } from './gate.js';

// The layer's events, merged into the core's DispatchEventDetails (kept in its declaration files).
export type {} from './events.js';

/** Options for `concurrencyLimit`. */
export interface ConcurrencyLimitOptions {
  /** The most calls running inside this layer at once (dispatchers sharing the layer share it). @default 8 */
  max?: number;
  /**
   * Partitions the cap: each key (a tenant, a backend) gets its own `max` and queue.
   * @default undefined (one partition)
   * @example
   * concurrencyLimit({ max: 4, key: (ctx) => ctx.options.tenant });
   */
  key?: (ctx: DispatchContext) => string | undefined;
  /**
   * The most calls a partition lets wait; one more fails at once with `overloaded`.
   * @default Infinity
   * @example
   * concurrencyLimit({ max: 4, maxQueue: 32 });
   */
  maxQueue?: number;
  /**
   * A pool of slots shared with other processes: a fleet-wide cap on top of `max`.
   * @default undefined (only the per-process cap)
   * @example
   * concurrencyLimit({ max: 8, store: redisSlotStore(redis, { pool: 'billing-api', max: 16 }) });
   */
  store?: SlotStore;
  /**
   * When the store cannot hand out a permit: `'fail'` closed, or run under the `'local'` cap alone.
   * @default 'fail'
   * @example
   * concurrencyLimit({ max: 4, store: slots, onStoreError: 'local' });
   */
  onStoreError?: 'fail' | 'local';
  /** The time source for `waitedMs`, and the timers that renew a store permit. @default systemClock */
  clock?: Pick<Clock, 'now'> & Partial<Pick<Clock, 'setTimeout' | 'clearTimeout'>>;
}

const concurrencyLimitOptionKeys = optionKeys<ConcurrencyLimitOptions>({
  max: true,
  key: true,
  maxQueue: true,
  store: true,
  onStoreError: true,
  clock: true,
});

/** How busy a concurrency layer is right now. */
export interface ConcurrencyLoad {
  /** Calls holding a slot. */
  running: number;
  /** Calls waiting for one. */
  queued: number;
}

/** The concurrency middleware, with a look at its load. */
export interface ConcurrencyLimitLayer extends Middleware {
  /** Calls running inside the layer and calls waiting for a slot, right now (every partition). */
  load(): ConcurrencyLoad;
  /** Keyed partitions kept right now: the busy ones, and idle ones not swept yet. */
  partitionCount(): number;
}

/** @deprecated Use `ConcurrencyLimitLayer`. */
export type ConcurrencyLimitMiddleware = ConcurrencyLimitLayer;

/**
 * Lets at most `max` calls run the layers inside it at once (per `key`); the others wait in FIFO
 * order (`concurrency.queued`, then `concurrency.acquired`), and the slot is held across retries.
 *
 * @example
 * createDispatcher([errorMapping(), toolLookup(registry), concurrencyLimit({ max: 4 })]);
 * @example
 * concurrencyLimit({ max: 2, key: (ctx) => ctx.options.tenant, maxQueue: 16 });
 */
export function concurrencyLimit(options?: ConcurrencyLimitOptions): ConcurrencyLimitLayer {
  const {
    max = 8,
    key,
    maxQueue = Infinity,
    clock = systemClock,
    store,
    onStoreError = 'fail',
  } = optionsObject('concurrencyLimit', options, concurrencyLimitOptionKeys);
  requireInteger('max', max, 1);
  if (key !== undefined) requireFunction('key', key);
  if (maxQueue !== Infinity) requireInteger('maxQueue', maxQueue, 0);
  requireClock(clock, ['now']);
  if (store !== undefined) requireSlotStore(store);
  if (onStoreError !== 'fail' && onStoreError !== 'local') {
    throw new TypeError(`onStoreError must be 'fail' or 'local', got ${String(onStoreError)}`);
  }
  const timers =
    typeof clock.setTimeout === 'function' && typeof clock.clearTimeout === 'function'
      ? (clock as Pick<Clock, 'setTimeout' | 'clearTimeout'>)
      : systemClock;
  const gate = new SlotGate({ max, key, maxQueue, fleet: store, onStoreError, clock, timers });
  const layer = trusted(function concurrencyLimit(ctx: DispatchContext, next: Next): Promise<void> {
    return gate.run(ctx, next);
  });
  return Object.assign(layer, {
    load: (): ConcurrencyLoad => ({ running: gate.running, queued: gate.queued }),
    partitionCount: (): number => gate.partitionCount,
  });
}

function requireSlotStore(store: unknown): void {
  const methods = ['tryAcquire', 'enqueue', 'renew', 'release'] as const;
  const missing = methods.filter(
    (method) => typeof (store as Record<string, unknown> | null)?.[method] !== 'function',
  );
  if (missing.length > 0) throw new TypeError(`store must be a SlotStore (missing ${missing.join(', ')})`);
}
