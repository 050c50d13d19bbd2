/**
 * The rate-limit layer's in-memory token buckets, its default store: every method answers at once.
 * @module
 */

import { systemClock, type Clock } from '../../src/clock.js';
import type { RateBucket, RateGrant, RateStore } from './store.js';
import { optionKeys, optionsObject, requireClock } from '../kit.js';
import { SweptMap } from '../swept-map.js';

/** Options for `memoryRateStore`. */
export interface MemoryRateStoreOptions {
  /**
   * The time source.
   * @default systemClock
   */
  clock?: Pick<Clock, 'now'>;
}

const memoryRateStoreOptionKeys = optionKeys<MemoryRateStoreOptions>({ clock: true });

// A bucket as the time its debt is paid off ("theoretical arrival time"): a full bucket has
// `paidAt <= now`, and each reservation pushes it `cost × interval / rate` later.
interface Bucket {
  paidAt: number;
  // The debits so far, in ms: a reservation compares it with its own mark.
  shifted: number;
}

/**
 * The memory `RateStore`: one bucket per key in this process, dropped once full again.
 * @internal
 */
export class MemoryRateStore implements RateStore {
  readonly #buckets = new SweptMap<Bucket>();
  readonly #clock: Pick<Clock, 'now'>;

  constructor(clock: Pick<Clock, 'now'>) {
    this.#clock = clock;
  }

  acquire(key: string, cost: number, bucket: RateBucket, options: { maxWaitMs: number }): RateGrant {
    const now = this.#clock.now();
    const perToken = bucket.intervalMs / bucket.rate;
    const known = this.#buckets.get(key);
    const paidAt = Math.max(known?.paidAt ?? now, now) + cost * perToken;
    const waitMs = Math.max(0, Math.ceil(paidAt - bucket.burst * perToken - now));
    if (waitMs > options.maxWaitMs) return { granted: false, retryAfterMs: waitMs };
    if (known === undefined) this.#add(key, { paidAt, shifted: 0 }, now);
    else known.paidAt = paidAt;
    const burstMs = bucket.burst * perToken;
    const fill = Math.min(1, Math.max(0, (burstMs - (paidAt - now)) / burstMs));
    return { granted: true, waitMs, mark: known?.shifted ?? 0, fill };
  }

  cancel(key: string, cost: number, bucket: RateBucket): void {
    const known = this.#buckets.get(key);
    if (known !== undefined) known.paidAt -= (cost * bucket.intervalMs) / bucket.rate;
  }

  debit(key: string, retryAfterMs: number, bucket: RateBucket): void {
    const now = this.#clock.now();
    const full = bucket.intervalMs * (bucket.burst / bucket.rate);
    const known = this.#buckets.get(key);
    // Empty until now + retryAfterMs, then refilling from empty; the debt already reserved moves back too.
    const paidAt = Math.max(known?.paidAt ?? now, now + full) + retryAfterMs;
    if (known === undefined) return this.#add(key, { paidAt, shifted: retryAfterMs }, now);
    known.shifted += paidAt - known.paidAt;
    known.paidAt = paidAt;
  }

  delayedSince(key: string, mark: number): number {
    return Math.max(0, (this.#buckets.get(key)?.shifted ?? mark) - mark);
  }

  /** Buckets held now (full ones are dropped from time to time). */
  get size(): number {
    return this.#buckets.size;
  }

  #add(key: string, bucket: Bucket, now: number): void {
    // A full bucket is the same as none.
    this.#buckets.add(key, bucket, (held) => held.paidAt <= now);
  }
}

/**
 * Makes the in-memory rate store, the default of `rateLimit`: token buckets of this process.
 *
 * @example
 * rateLimit({ rate: 5, intervalMs: 1_000, store: memoryRateStore() });
 */
export function memoryRateStore(options: MemoryRateStoreOptions = {}): RateStore {
  const { clock = systemClock } = optionsObject('memoryRateStore', options, memoryRateStoreOptionKeys);
  requireClock(clock, ['now']);
  return new MemoryRateStore(clock);
}
