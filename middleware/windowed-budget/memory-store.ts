/**
 * The windowed budget's in-memory ledger, its default store: every method answers at once.
 * @module
 */

import { systemClock, type Clock } from '../../src/clock.js';
import type { WindowReservation, WindowStore } from './store.js';
import { optionKeys, optionsObject, requireClock } from '../kit.js';
import { SweptMap } from '../swept-map.js';

/** Options for `memoryWindowStore`. */
export interface MemoryWindowStoreOptions {
  /**
   * The time source windows are aligned on.
   * @default systemClock
   */
  clock?: Pick<Clock, 'now'>;
}

const memoryWindowStoreOptionKeys = optionKeys<MemoryWindowStoreOptions>({ clock: true });

interface Ledger {
  window: number;
  used: number;
}

/**
 * The memory `WindowStore`: one ledger per key, for its current window only.
 * @internal
 */
export class MemoryWindowStore implements WindowStore {
  readonly #ledgers = new SweptMap<Ledger>();
  readonly #clock: Pick<Clock, 'now'>;

  constructor(clock: Pick<Clock, 'now'>) {
    this.#clock = clock;
  }

  reserve(key: string, units: number, options: { limit: number; windowMs: number }): WindowReservation {
    const now = this.#clock.now();
    const window = Math.floor(now / options.windowMs);
    let ledger = this.#ledgers.get(key);
    if (ledger === undefined) {
      ledger = { window, used: 0 };
      // Ledgers of past windows hold nothing any more.
      this.#ledgers.add(key, ledger, (held) => held.window < window);
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
}

/**
 * Makes the in-memory window store, the default of `windowedBudget`: ledgers of this process.
 *
 * @example
 * windowedBudget({ limit: 1_000, windowMs: 3_600_000, store: memoryWindowStore() });
 */
export function memoryWindowStore(options: MemoryWindowStoreOptions = {}): WindowStore {
  const { clock = systemClock } = optionsObject('memoryWindowStore', options, memoryWindowStoreOptionKeys);
  requireClock(clock, ['now']);
  return new MemoryWindowStore(clock);
}
