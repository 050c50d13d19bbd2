/**
 * The concurrency layer's in-memory slot store, its default: a FIFO semaphore behind the SlotStore seam.
 * @module
 */

import { FifoSemaphore } from '../internal-kit.js';
import { optionKeys, optionsObject } from '../kit.js';
import type { SlotPermit, SlotStore, SlotWaiter } from './store.js';

/** Options for `memorySlotStore`. */
export interface MemorySlotStoreOptions {
  /** The most permits held at once. @default 8 */
  max?: number;
  /** The pool's name, as `SlotStore.pool` reports it. @default 'default' */
  pool?: string;
}

const memorySlotStoreOptionKeys = optionKeys<MemorySlotStoreOptions>({ max: true, pool: true });

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
 * The memory store as a class, so the concurrency layer can make one per key cheaply.
 * @internal
 */
export class MemorySlotStore implements SlotStore {
  readonly #semaphore: FifoSemaphore;
  #tokens = 0;

  constructor(
    readonly max: number,
    readonly pool: string,
  ) {
    this.#semaphore = new FifoSemaphore(max);
  }

  /** Callers waiting now. */
  get queued(): number {
    return this.#semaphore.queued;
  }

  tryAcquire(options?: { token?: string }): SlotPermit | undefined {
    return this.#semaphore.tryAcquire() ? this.#permit(options?.token) : undefined;
  }

  enqueue(waiter: SlotWaiter): () => void {
    return this.#semaphore.enqueue(() => waiter.grant(this.#permit()));
  }

  renew(held: SlotPermit): boolean {
    return !(held as MemoryPermit).released;
  }

  release(held: SlotPermit): void {
    const mine = held as MemoryPermit;
    if (mine.released) return;
    mine.released = true;
    this.#semaphore.release();
  }

  load(): { running: number; queued: number } {
    return { running: this.#semaphore.running, queued: this.#semaphore.queued };
  }

  #permit(token?: string): MemoryPermit {
    return new MemoryPermit(this.pool, token ?? `m${++this.#tokens}`);
  }
}

/**
 * Makes the in-memory slot store: `max` permits handed first in, first out, synchronously.
 *
 * @example
 * const slots = memorySlotStore({ max: 4 });
 * const permit = slots.tryAcquire(); // a permit, or undefined when all 4 are held
 * if (permit !== undefined) slots.release(permit);
 */
export function memorySlotStore(options: MemorySlotStoreOptions = {}): SlotStore {
  const { max = 8, pool = 'default' } = optionsObject('memorySlotStore', options, memorySlotStoreOptionKeys);
  if (!Number.isInteger(max) || max < 1)
    throw new TypeError(`max must be an integer >= 1, got ${String(max)}`);
  if (typeof pool !== 'string' || pool === '') throw new TypeError('pool must be a non-empty string');
  const store = new MemorySlotStore(max, pool);
  // Own methods, so a store spread into another (`{ ...slots, enqueue }`) keeps them all.
  return {
    pool,
    max,
    tryAcquire: (acquireOptions) => store.tryAcquire(acquireOptions),
    enqueue: (waiter) => store.enqueue(waiter),
    renew: (held) => store.renew(held),
    release: (held) => store.release(held),
    load: () => store.load(),
  };
}
