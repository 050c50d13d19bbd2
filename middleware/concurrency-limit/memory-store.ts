/**
 * The concurrency layer's in-memory slot store: today's FIFO semaphore behind the SlotStore seam.
 * @module
 */

import { FifoSemaphore } from './fifo-semaphore.js';
import type { SlotPermit, SlotStore, SlotWaiter } from '../../src/stores.js';

/** Options for `memorySlotStore`. */
export interface MemorySlotStoreOptions {
  /**
   * The most permits held at once.
   * @default 8
   */
  max?: number;
  /**
   * The pool's name, as `SlotStore.pool` reports it.
   * @default 'default'
   */
  pool?: string;
}

// A holder in this process cannot crash without the store going too: memory permits never
// lapse, so they share one signal that never aborts and need no renewal.
const neverLost: AbortSignal = new AbortController().signal;

class MemoryPermit implements SlotPermit {
  released = false;
  readonly renewEveryMs = Infinity;
  readonly signal = neverLost;

  constructor(
    readonly pool: string,
    readonly token: string,
  ) {}
}

/**
 * Makes the in-memory slot store: `max` permits, waiters served first in, first out, a waiter
 * that leaves the queue gone at once; every method answers synchronously. A permit is handed
 * straight to the first waiter on release, so nobody barges ahead of the queue.
 *
 * @example
 * const slots = memorySlotStore({ max: 4 });
 * const permit = slots.tryAcquire(); // a permit, or undefined when all 4 are held
 * if (permit !== undefined) slots.release(permit);
 */
export function memorySlotStore(options: MemorySlotStoreOptions = {}): SlotStore {
  const { max = 8, pool = 'default' } = options;
  if (!Number.isInteger(max) || max < 1)
    throw new TypeError(`max must be an integer >= 1, got ${String(max)}`);
  if (typeof pool !== 'string' || pool === '') throw new TypeError('pool must be a non-empty string');
  const semaphore = new FifoSemaphore(max);
  let tokens = 0;
  const permit = (token?: string) => new MemoryPermit(pool, token ?? `m${++tokens}`);

  return {
    pool,
    max,
    tryAcquire: (acquireOptions?: { token?: string }) =>
      semaphore.tryAcquire() ? permit(acquireOptions?.token) : undefined,
    enqueue: (waiter: SlotWaiter) => semaphore.enqueue(() => waiter.grant(permit())),
    renew: (held: SlotPermit) => !(held as MemoryPermit).released,
    release: (held: SlotPermit) => {
      const mine = held as MemoryPermit;
      if (mine.released) return;
      mine.released = true;
      semaphore.release();
    },
    load: () => ({ running: semaphore.running, queued: semaphore.queued }),
  };
}
