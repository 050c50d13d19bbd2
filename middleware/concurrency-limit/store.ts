/**
 * The concurrency layer's store seam: a counting semaphore of leased permits in a named pool.
 * @module
 */

import type { DispatchError } from '../../src/errors.js';
import type { MaybePromise, StoreLease } from '../../src/stores.js';

/** A slot held in a pool; release it exactly once. */
export interface SlotPermit extends StoreLease {
  /** The pool it belongs to. */
  readonly pool: string;
}

/** Waits for a permit in a `SlotStore` queue. */
export interface SlotWaiter {
  /** Called once with the permit handed to this waiter (the waiter then owns it). */
  grant(permit: SlotPermit): void;
  /** Called once instead of `grant` when the store cannot hand out permits (`store_unavailable`). */
  fail(error: DispatchError): void;
}

/**
 * A counting semaphore of `max` permits in one named pool shared by every process using the
 * store: the concurrency layer's cap. Waiters queue first in, first out within a process; a
 * permit is a lease, so a crashed holder's slot comes back when its lease ends.
 */
export interface SlotStore {
  /** The pool's name. */
  readonly pool: string;
  /** The most permits held at once across the pool. */
  readonly max: number;
  /**
   * Takes a permit if one is free and nobody in this process waits; `undefined` otherwise.
   *
   * @param options.token - The owner token; a fresh random one by default.
   */
  tryAcquire(options?: { token?: string }): MaybePromise<SlotPermit | undefined>;
  /** Queues `waiter` for the next free permit; returns a function that leaves the queue. */
  enqueue(waiter: SlotWaiter): () => void;
  /** Extends the permit's lease; `false` when it is gone (the store aborts `permit.signal`). */
  renew(permit: SlotPermit): MaybePromise<boolean>;
  /** Gives the permit back (a no-op when already released or expired) to the next waiter. */
  release(permit: SlotPermit): MaybePromise<void>;
  /** How many permits are held and how many callers wait in this process, as best known. */
  load(): MaybePromise<{
    /** Permits held. */
    running: number;
    /** Callers waiting in this process. */
    queued: number;
  }>;
}
