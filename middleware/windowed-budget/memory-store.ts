/**
 * The windowed budget's in-memory ledger, its default store: every method answers at once.
 * @module
 */

import { systemClock, type Clock } from '../../src/clock.js';
import type { WindowReservation, WindowStore } from '../../src/stores.js';

/** Options for `memoryWindowStore`. */
export interface MemoryWindowStoreOptions {
  /**
   * The time source windows are aligned on.
   * @default systemClock
   */
  clock?: Pick<Clock, 'now'>;
}

interface Ledger {
  window: number;
  used: number;
}

const sweepFloor = 1_024;

/**
 * The memory `WindowStore`: one ledger per key, for its current window only.
 * @internal
 */
export class MemoryWindowStore implements WindowStore {
  readonly #ledgers = new Map<string, Ledger>();
  readonly #clock: Pick<Clock, 'now'>;
  #sweepAt = sweepFloor;

  constructor(clock: Pick<Clock, 'now'>) {
    this.#clock = clock;
  }

  reserve(key: string, units: number, options: { limit: number; windowMs: number }): WindowReservation {
    const now = this.#clock.now();
    const window = Math.floor(now / options.windowMs);
    let ledger = this.#ledgers.get(key);
    if (ledger === undefined) {
      ledger = { window, used: 0 };
      this.#add(key, ledger, options.windowMs);
    } else if (ledger.window !== window) {
      ledger.window = window;
      ledger.used = 0;
    }
    if (ledger.used + units > options.limit) {
      return { ok: false, retryAfterMs: (window + 1) * options.windowMs - now };
    }
    ledger.used += units;
    return { ok: true, window };
  }

  settle(key: string, window: number, delta: number): void {
    const ledger = this.#ledgers.get(key);
    if (ledger === undefined || ledger.window !== window) return;
    ledger.used = Math.max(0, ledger.used + delta);
  }

  /** Units used in `key`'s current window, as last written. */
  used(key: string): number {
    return this.#ledgers.get(key)?.used ?? 0;
  }

  #add(key: string, ledger: Ledger, windowMs: number): void {
    this.#ledgers.set(key, ledger);
    if (this.#ledgers.size < this.#sweepAt) return;
    // Ledgers of past windows hold nothing any more.
    const current = Math.floor(this.#clock.now() / windowMs);
    for (const [name, held] of this.#ledgers)
      if (held.window < current && held !== ledger) this.#ledgers.delete(name);
    this.#sweepAt = Math.max(sweepFloor, this.#ledgers.size * 2);
  }
}

/**
 * Makes the in-memory window store, the default of `windowedBudget`: ledgers of this process.
 *
 * @example
 * windowedBudget({ limit: 1_000, windowMs: 3_600_000, store: memoryWindowStore() });
 */
export function memoryWindowStore(options: MemoryWindowStoreOptions = {}): WindowStore {
  const { clock = systemClock } = options;
  if (typeof clock?.now !== 'function') throw new TypeError('clock must have a now() method');
  return new MemoryWindowStore(clock);
}
