/**
 * The rate-limit layer's store seam: token buckets by key, with queued reservations and debits.
 * @module
 */

import type { MaybePromise } from '../../src/stores.js';

/** A token bucket's shape: `rate` tokens per `intervalMs`, refilled continuously up to `burst`. */
export interface RateBucket {
  /** Tokens added per `intervalMs`. */
  readonly rate: number;
  /** The refill interval, in milliseconds. */
  readonly intervalMs: number;
  /** The most tokens the bucket holds. */
  readonly burst: number;
}

/** What `RateStore.acquire` answers. */
export type RateGrant =
  /** The tokens are reserved: the attempt may start after `waitMs`. */
  | {
      /** Reserved. */
      readonly granted: true;
      /** How long to wait before starting, in milliseconds (0: now). */
      readonly waitMs: number;
      /** The key's debit mark at the reservation, for `delayedSince`. */
      readonly mark: number;
      /**
       * The share of the burst left in the bucket once this reservation is taken, 0 to 1 (0 while
       * callers queue); absent when the store does not say. Shown by the console's health pane.
       */
      readonly fill?: number;
    }
  /** Nothing was reserved: the tokens would come only after `retryAfterMs`, past the allowed wait. */
  | {
      /** Refused. */
      readonly granted: false;
      /** When the tokens would be there, in milliseconds from now. */
      readonly retryAfterMs: number;
    };

/**
 * Where rate-limit layers keep their token buckets, one per key, shared by every process using
 * the store. Times are the store's (Redis: `TIME`). Reservations queue: each one takes its tokens
 * from the future, so later callers wait longer, first in, first out. Every method that changes
 * state takes an id and is safe to send again.
 *
 * The layer's use, per attempt: `acquire`; wait `waitMs`; then `delayedSince(key, mark)` and wait
 * that much more (a 429 seen meanwhile); run. On abort while waiting: `cancel`. When the attempt
 * fails with `retryAfterMs`: `debit`.
 */
export interface RateStore {
  /** Reserves `cost` tokens of `key`, or refuses (reserving nothing) when the wait would pass `maxWaitMs`. */
  acquire(
    key: string,
    cost: number,
    bucket: RateBucket,
    options: { maxWaitMs: number; id: string },
  ): MaybePromise<RateGrant>;
  /** Gives back a reservation whose caller left before using it. */
  cancel(key: string, cost: number, bucket: RateBucket, id: string): MaybePromise<void>;
  /**
   * Empties `key`'s bucket until `retryAfterMs` from now (a backend's 429); it refills from empty
   * after. Reservations already made move back by as much (see `delayedSince`).
   */
  debit(key: string, retryAfterMs: number, bucket: RateBucket, id: string): MaybePromise<void>;
  /** How much later than planned the reservation with `mark` may start, in milliseconds: the debits since. */
  delayedSince(key: string, mark: number): MaybePromise<number>;
}
