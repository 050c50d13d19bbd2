/**
 * The in-memory receipt store: the latest receipt of each key in this process, bounded in size
 * and age, answered synchronously.
 * @module
 */

import { systemClock, type Clock } from '../../src/clock.js';
import type { Receipt, ReceiptQuery, ReceiptStore } from './store.js';
import { optionKeys, optionsObject, requireClock, requireInteger, requireNumber } from '../kit.js';

/** Options for `memoryReceiptStore`. */
export interface MemoryReceiptStoreOptions {
  /**
   * How long a receipt is kept after it was last recorded, in milliseconds; longer than a
   * success is served, so that an unknown outcome outlives it.
   * @default 86_400_000 (24 h)
   */
  ttlMs?: number;
  /**
   * The most receipts kept (up to an eighth more between two evictions); the least recently
   * recorded goes first beyond it.
   * @default 10_000
   */
  maxEntries?: number;
  /**
   * The time source for `ttlMs`.
   * @default systemClock
   */
  clock?: Pick<Clock, 'now'>;
}

const memoryReceiptStoreOptionKeys = optionKeys<MemoryReceiptStoreOptions>({
  ttlMs: true,
  maxEntries: true,
  clock: true,
});

/** The memory receipt store: every method answers at once. */
export interface MemoryReceiptStore extends ReceiptStore {
  /** The receipt of `key`, if one is kept. */
  get(key: string): Receipt | undefined;
  /** Records `receipt`, replacing the key's earlier one. */
  record(receipt: Receipt): void;
  /** Receipts matching `query`, the most recent first. */
  list(query?: ReceiptQuery): Receipt[];
}

/**
 * Makes an in-memory receipt store: the default of the idempotency layer without a store of its
 * own, and `memoryIdempotencyStore().receipts`. Receipts die with the process; keep them in a
 * database when an operator must find unknown outcomes after a crash.
 *
 * @example
 * const receipts = memoryReceiptStore({ ttlMs: 3_600_000 });
 * idempotency({ receipts });
 * receipts.list({ inDoubt: true });
 */
export function memoryReceiptStore(options?: MemoryReceiptStoreOptions): MemoryReceiptStore {
  const {
    ttlMs = 86_400_000,
    maxEntries = 10_000,
    clock = systemClock,
  } = optionsObject('memoryReceiptStore', options, memoryReceiptStoreOptionKeys);
  requireNumber('ttlMs', ttlMs, 0, { exclusive: true, allowInfinity: true });
  requireInteger('maxEntries', maxEntries, 1);
  requireClock(clock, ['now']);
  const kept = new ReceiptMap(ttlMs, maxEntries, clock);
  return {
    get: (key) => kept.get(key),
    record: (receipt) => kept.record(receipt),
    list: (query) => kept.list(query),
  };
}

// Records between two evictions of what has expired or gone past `maxEntries`.
const sweepEvery = 256;

/** Receipts by key, in the order they were last recorded (a Map keeps insertion order). */
class ReceiptMap {
  readonly #entries = new Map<string, { receipt: Receipt; at: number }>();
  #recorded = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
    private readonly clock: Pick<Clock, 'now'>,
  ) {}

  get(key: string): Receipt | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (this.clock.now() - entry.at < this.ttlMs) return entry.receipt;
    this.#entries.delete(key);
    return undefined;
  }

  record(receipt: Receipt): void {
    const now = this.clock.now();
    this.#entries.delete(receipt.key);
    this.#entries.set(receipt.key, { receipt, at: now });
    // Evicted in batches: a Map walk from its oldest entry first passes every entry deleted since
    // it last compacted, so one walk per record would cost as much as the Map is long.
    const slack = Math.min(sweepEvery, this.maxEntries >> 3);
    if (++this.#recorded % sweepEvery !== 0 && this.#entries.size <= this.maxEntries + slack) return;
    for (const [key, entry] of this.#entries) {
      if (this.#entries.size <= this.maxEntries && now - entry.at < this.ttlMs) break;
      this.#entries.delete(key);
    }
  }

  list(query: ReceiptQuery = {}): Receipt[] {
    const { inDoubt, status, tool, limit = 100 } = query;
    const now = this.clock.now();
    const found: Receipt[] = [];
    for (const { receipt, at } of [...this.#entries.values()].reverse()) {
      if (found.length >= limit) break;
      if (now - at >= this.ttlMs) continue;
      if (inDoubt === true && receipt.status !== 'in_doubt') continue;
      if (status !== undefined && receipt.status !== status) continue;
      if (tool !== undefined && receipt.tool !== tool) continue;
      found.push(receipt);
    }
    return found;
  }
}
