/**
 * The retry budget: retries as a share of first attempts (Finagle's `RetryBudget`), so that a
 * backend in trouble gets a trickle of retries, not three attempts per call; and a throttle
 * (gRPC's) that stops them while the tool fails more often than retries can help.
 * @module
 */

import { randomUUID } from 'node:crypto';
import { systemClock, type Clock } from '../../src/clock.js';
import type { MaybePromise } from '../../src/stores.js';
import { optionKeys, optionsObject, requireClock, requireNumber } from '../kit.js';
import { MemoryAutopilotStore, memoryAutopilotStore } from './memory-store.js';
import {
  retryBudgetSlices,
  retryBudgetUnit,
  type RetryBudgetStore,
  type RetryBudgetWindow,
} from './store.js';

/** The failure throttle of a `retryBudget` (gRPC's retry throttling, over the budget's window). */
export interface RetryThrottleOptions {
  /**
   * Failed attempts beyond what `ratio` of the successes pays for, within `ttlMs`, before
   * retries stop: the slack that keeps a few failures of a quiet tool from stopping its retries.
   * @default 5
   */
  tolerance?: number;
}

/** Options for `retryBudget`. */
export interface RetryBudgetOptions {
  /** Tokens a first attempt deposits; a retry costs one, so this is the share of calls that may retry. @default 0.2 */
  ratio?: number;
  /** Retries allowed per second whatever the deposits (over `ttlMs`), so a quiet tool may still retry. @default 10 */
  minPerSecond?: number;
  /** How long a deposit (and a withdrawal) counts, in milliseconds. @default 10_000 */
  ttlMs?: number;
  /**
   * Stops every retry, the `minPerSecond` ones included, while this process sees more than
   * `ratio / (1 + ratio)` of attempts fail (1 in 6 at 0.2) by over `tolerance` failures within
   * `ttlMs`: a backend that fails that often is in trouble, and retries only add to its load.
   * `false` leaves the deposits alone to limit retries. @default { tolerance: 5 }
   */
  throttle?: RetryThrottleOptions | false;
  /** Where the ledger is kept; share one store (Redis) to share the budget across a fleet. @default memoryAutopilotStore({ clock }) */
  store?: RetryBudgetStore;
  /** The ledger's key in the store: budgets with the same key and store are one budget. @default 'retry' */
  key?: string;
  /** The time source of the throttle's window, and of the default memory store (a store of your own keeps its own time). @default systemClock */
  clock?: Pick<Clock, 'now'>;
}

const retryBudgetOptionKeys = optionKeys<RetryBudgetOptions>({
  ratio: true,
  minPerSecond: true,
  ttlMs: true,
  throttle: true,
  store: true,
  key: true,
  clock: true,
});
const throttleOptionKeys = optionKeys<RetryThrottleOptions>({ tolerance: true });

/** A retry budget: first attempts pay in, retries draw out. */
export interface RetryBudget {
  /** Pays in for one first attempt. Never waits, never fails: call it as the attempt starts. */
  deposit(): void;
  /**
   * Says an attempt failed and the rules would retry it: takes one retry's token if the budget
   * holds one and the throttle is open, and says whether it did. A remote store may answer with
   * a promise (one round trip; none while the throttle is shut) and may reject
   * (`store_unavailable`): the caller then falls back to its static policy.
   */
  tryWithdraw(): MaybePromise<boolean>;
  /** Retries the budget would allow now, in tokens (fractional; the reserve included; 0 while throttled). */
  balance(): MaybePromise<number>;
}

/**
 * Makes a retry budget of Finagle's shape: every first attempt deposits `ratio` of a token, every
 * retry withdraws one, and `minPerSecond` retries are always allowed; deposits and withdrawals
 * count for `ttlMs`. On top, gRPC's retry throttling over the same window: each attempt that
 * succeeds earns `ratio`, each that fails costs one, and while the failures outrun the earnings
 * by more than `throttle.tolerance` no retry is made at all. So retries stay under 20 % of calls
 * plus 10 a second while failures are rare, and stop while more than 1 in 6 attempts fail (a
 * brownout at 30 % failures runs about 1.0 attempts per call, not 1.2 or 3), coming back within a
 * window of the failures ending.
 *
 * @example
 * const budget = retryBudget({ ratio: 0.2, minPerSecond: 10 });
 * budget.deposit();                          // a first attempt
 * if (await budget.tryWithdraw()) retryIt(); // it failed: a retry, if the budget allows
 */
export function retryBudget(options?: RetryBudgetOptions): RetryBudget {
  return storeRetryBudget(options);
}

/**
 * `retryBudget` as the class it makes, for the autopilot's budgets per tool (see
 * `StoreRetryBudget.depositAt`).
 * @internal
 */
export function storeRetryBudget(options?: RetryBudgetOptions): StoreRetryBudget {
  const given = optionsObject('retryBudget', options, retryBudgetOptionKeys);
  const ratio = requireNumber('ratio', given.ratio ?? 0.2, 0);
  const minPerSecond = requireNumber('minPerSecond', given.minPerSecond ?? 10, 0);
  const ttlMs = requireNumber('ttlMs', given.ttlMs ?? 10_000, 0, { exclusive: true });
  const key = given.key ?? 'retry';
  if (typeof key !== 'string' || key === '')
    throw new TypeError(`key must be a non-empty string, got ${String(key)}`);
  const tolerance = toleranceOf(given.throttle);
  const clock = given.clock ?? systemClock;
  requireClock(clock, ['now']);
  const store = given.store ?? memoryAutopilotStore({ clock });
  for (const method of ['deposit', 'withdraw', 'balance'] as const) {
    if (typeof (store as unknown as Record<string, unknown>)[method] !== 'function') {
      throw new TypeError(`store must have a ${method}() method`);
    }
  }
  const depositUnits = Math.round(ratio * retryBudgetUnit);
  return new StoreRetryBudget(store, key, {
    depositUnits,
    window: { ttlMs, reserve: Math.round(minPerSecond * (ttlMs / 1_000) * retryBudgetUnit) },
    throttle:
      tolerance === undefined
        ? undefined
        : new FailureThrottle(clock, ttlMs, depositUnits, Math.round(tolerance * retryBudgetUnit)),
  });
}

function toleranceOf(given: RetryThrottleOptions | false | undefined): number | undefined {
  if (given === false) return undefined;
  if (given !== undefined && (typeof given !== 'object' || given === null)) {
    throw new TypeError(`throttle must be an options object or false, got ${String(given)}`);
  }
  const options = optionsObject('retryBudget() throttle', given, throttleOptionKeys);
  return requireNumber('throttle.tolerance', options.tolerance ?? 5, 0);
}

/**
 * gRPC's retry throttling (proposal A6) over a sliding window instead of a capped bucket: a score
 * in ledger units, where an attempt earns `earnUnits` as it starts (a first attempt as it
 * deposits, a retry as it is granted) and a failure takes that back and one token more, so a
 * success nets `+ratio` and a failure `−1`. Retries stop while the window's score is below
 * `−tolerance`: more than `ratio / (1 + ratio)` of attempts failed, by over `tolerance` failures.
 * The window is the ledger's (ten slices of `ttlMs / 10`), so failures stop counting within
 * `ttlMs` of the brownout's end, and a quiet tool is not throttled for days by a bad minute. It
 * lives in this process, as gRPC's does in each client: every process of a fleet sees about the
 * same failure share of a tool in trouble, and needs no round trip to see it.
 * @internal
 */
class FailureThrottle {
  readonly #clock: Pick<Clock, 'now'>;
  readonly #sliceMs: number;
  readonly #earnUnits: number;
  readonly #floor: number;
  readonly #amounts = new Array<number>(retryBudgetSlices).fill(0);
  readonly #slices = new Array<number>(retryBudgetSlices).fill(-Infinity);

  constructor(clock: Pick<Clock, 'now'>, ttlMs: number, earnUnits: number, toleranceUnits: number) {
    this.#clock = clock;
    this.#sliceMs = ttlMs / retryBudgetSlices;
    this.#earnUnits = earnUnits;
    this.#floor = -toleranceUnits;
  }

  /** The time source of the window. */
  get clock(): Pick<Clock, 'now'> {
    return this.#clock;
  }

  /** An attempt starts: it earns its share, taken back if it fails. `now`: a reading just taken. */
  started(now = this.#clock.now()): void {
    this.#add(this.#earnUnits, now);
  }

  /** An attempt failed: its share back, and a token. */
  failed(): void {
    this.#add(-(this.#earnUnits + retryBudgetUnit), this.#clock.now());
  }

  /** Whether retries are stopped now. */
  get shut(): boolean {
    const current = Math.floor(this.#clock.now() / this.#sliceMs);
    let score = 0;
    for (let slot = 0; slot < retryBudgetSlices; slot++) {
      if (current - (this.#slices[slot] as number) < retryBudgetSlices)
        score += this.#amounts[slot] as number;
    }
    return score < this.#floor;
  }

  #add(units: number, now: number): void {
    const slice = Math.floor(now / this.#sliceMs);
    const slot = ((slice % retryBudgetSlices) + retryBudgetSlices) % retryBudgetSlices;
    if (this.#slices[slot] !== slice) {
      this.#slices[slot] = slice;
      this.#amounts[slot] = 0;
    }
    this.#amounts[slot] = (this.#amounts[slot] as number) + units;
  }
}

/**
 * A `RetryBudget` over a `RetryBudgetStore`: amounts in integer units, the window's shape sent
 * with every call, and the failure throttle (if any) asked first, in this process.
 * @internal
 */
/**
 * The budget `retryBudget()` makes, for the autopilot, which pays into a tool's budget on the
 * clock reading it takes for the attempt anyway (`depositAt`).
 * @internal
 */
export class StoreRetryBudget implements RetryBudget {
  readonly #store: RetryBudgetStore;
  readonly #key: string;
  readonly #depositUnits: number;
  readonly #window: RetryBudgetWindow;
  readonly #throttle: FailureThrottle | undefined;
  // The memory store on the throttle's own clock: a deposit reads that clock once for both.
  readonly #sameClockStore: MemoryAutopilotStore | undefined;
  // Withdrawal ids: unique per budget (a resend carries the same one), cheap per retry.
  readonly #idPrefix = randomUUID();
  #withdrawals = 0;

  constructor(
    store: RetryBudgetStore,
    key: string,
    settings: { depositUnits: number; window: RetryBudgetWindow; throttle: FailureThrottle | undefined },
  ) {
    this.#store = store;
    this.#key = key;
    this.#depositUnits = settings.depositUnits;
    this.#window = settings.window;
    this.#throttle = settings.throttle;
    const throttleClock = settings.throttle?.clock;
    this.#sameClockStore =
      store instanceof MemoryAutopilotStore && throttleClock !== undefined && store.clock === throttleClock
        ? store
        : undefined;
  }

  deposit(): void {
    this.depositAt(undefined);
  }

  /**
   * `deposit` at `now`, a reading of the budget's clock just taken (the autopilot's, for the
   * attempt it starts); `undefined` reads the clock.
   */
  depositAt(now: number | undefined): void {
    const throttle = this.#throttle;
    const sameClock = this.#sameClockStore;
    if (sameClock !== undefined) {
      now ??= sameClock.clock.now();
      (throttle as FailureThrottle).started(now);
      if (this.#depositUnits > 0) sameClock.depositAt(this.#key, this.#depositUnits, this.#window, now);
      return;
    }
    throttle?.started(now);
    if (this.#depositUnits > 0) this.#store.deposit(this.#key, this.#depositUnits, this.#window);
  }

  tryWithdraw(): MaybePromise<boolean> {
    const throttle = this.#throttle;
    if (throttle !== undefined) {
      throttle.failed();
      if (throttle.shut) return false;
    }
    const id = `${this.#idPrefix}:${++this.#withdrawals}`;
    const granted = this.#store.withdraw(this.#key, retryBudgetUnit, { ...this.#window, id });
    if (throttle === undefined) return granted;
    if (typeof granted === 'boolean') return this.#granted(throttle, granted);
    return granted.then((answer) => this.#granted(throttle, answer));
  }

  balance(): MaybePromise<number> {
    if (this.#throttle?.shut === true) return 0;
    const units = this.#store.balance(this.#key, this.#window);
    return typeof units === 'number' ? units / retryBudgetUnit : units.then((held) => held / retryBudgetUnit);
  }

  // A granted retry is an attempt starting: it earns its share like a first attempt.
  #granted(throttle: FailureThrottle, granted: boolean): boolean {
    if (granted === true) throttle.started();
    return granted;
  }
}
