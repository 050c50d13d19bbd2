/**
 * The autopilot's in-memory store, its default: retry budget ledgers in this process, every
 * method answering at once.
 * @module
 */

import { systemClock, type Clock } from '../../src/clock.js';
import { optionKeys, optionsObject, requireClock } from '../kit.js';
import { SweptMap } from '../swept-map.js';
import { type AutopilotStore, retryBudgetSlices, type RetryBudgetWindow } from './store.js';

/** Options for `memoryAutopilotStore`. */
export interface MemoryAutopilotStoreOptions {
  /** The time source ledgers expire on. @default systemClock */
  clock?: Pick<Clock, 'now'>;
}

const memoryAutopilotStoreOptionKeys = optionKeys<MemoryAutopilotStoreOptions>({ clock: true });

// One key's ledger: the amount of each of the last `retryBudgetSlices` slices, by slice number
// modulo the ring (a slot whose number is not the one asked for is stale).
interface Ledger {
  readonly amounts: number[];
  readonly slices: number[];
  latestSlice: number;
}

/**
 * The memory `AutopilotStore`: a ring of slice amounts per key; a deposit, a withdrawal and a
 * balance are O(10). Keys whose every slice has expired are swept as the map grows.
 * @internal
 */
export class MemoryAutopilotStore implements AutopilotStore {
  readonly #ledgers = new SweptMap<Ledger>();
  /** The time source ledgers expire on. */
  readonly clock: Pick<Clock, 'now'>;

  constructor(clock: Pick<Clock, 'now'>) {
    this.clock = clock;
  }

  deposit(key: string, units: number, window: RetryBudgetWindow): void {
    this.#add(key, units, window, this.clock.now());
  }

  /**
   * `deposit` at `now`, a reading of this store's clock just taken: for a budget whose throttle
   * reads the same clock for the same deposit (one reading, not two, per first attempt).
   */
  depositAt(key: string, units: number, window: RetryBudgetWindow, now: number): void {
    this.#add(key, units, window, now);
  }

  withdraw(key: string, units: number, window: RetryBudgetWindow & { readonly id: string }): boolean {
    if (this.balance(key, window) < units) return false;
    this.#add(key, -units, window, this.clock.now());
    return true;
  }

  balance(key: string, window: RetryBudgetWindow): number {
    const ledger = this.#ledgers.get(key);
    if (ledger === undefined) return window.reserve;
    const current = this.#sliceOf(window, this.clock.now());
    let sum = window.reserve;
    for (let slot = 0; slot < retryBudgetSlices; slot++) {
      if (current - (ledger.slices[slot] as number) < retryBudgetSlices)
        sum += ledger.amounts[slot] as number;
    }
    return sum;
  }

  #add(key: string, units: number, window: RetryBudgetWindow, now: number): void {
    const slice = this.#sliceOf(window, now);
    let ledger = this.#ledgers.get(key);
    if (ledger === undefined) {
      ledger = {
        amounts: new Array<number>(retryBudgetSlices).fill(0),
        slices: new Array<number>(retryBudgetSlices).fill(-Infinity),
        latestSlice: slice,
      };
      // A ledger whose latest slice has left the window holds nothing any more.
      this.#ledgers.add(
        key,
        ledger,
        (held) => this.#sliceOf(window, this.clock.now()) - held.latestSlice >= retryBudgetSlices,
      );
    }
    const slot = ((slice % retryBudgetSlices) + retryBudgetSlices) % retryBudgetSlices;
    if (ledger.slices[slot] !== slice) {
      ledger.slices[slot] = slice;
      ledger.amounts[slot] = 0;
    }
    ledger.amounts[slot] = (ledger.amounts[slot] as number) + units;
    ledger.latestSlice = slice;
  }

  #sliceOf(window: RetryBudgetWindow, now: number): number {
    return Math.floor(now / (window.ttlMs / retryBudgetSlices));
  }
}

/**
 * Makes the in-memory `AutopilotStore`: retry budget ledgers shared by every budget of this
 * process that uses it, answering synchronously.
 *
 * @example
 * const store = memoryAutopilotStore({ clock });
 * const budget = retryBudget({ ratio: 0.2, minPerSecond: 10, store });
 */
export function memoryAutopilotStore(options?: MemoryAutopilotStoreOptions): MemoryAutopilotStore {
  const given = optionsObject('memoryAutopilotStore', options, memoryAutopilotStoreOptionKeys);
  const clock = given.clock ?? systemClock;
  requireClock(clock, ['now']);
  return new MemoryAutopilotStore(clock);
}
