/**
 * The retry budget: retries as a share of first attempts (Finagle's `RetryBudget`), so that a
 * backend in trouble gets a trickle of retries, not three attempts per call.
 * @module
 */

import { randomUUID } from 'node:crypto';
import type { Clock } from '../../src/clock.js';
import type { MaybePromise } from '../../src/stores.js';
import { optionKeys, optionsObject, requireNumber } from '../kit.js';
import { memoryAutopilotStore } from './memory-store.js';
import { retryBudgetUnit, type RetryBudgetStore, type RetryBudgetWindow } from './store.js';

/** Options for `retryBudget`. */
export interface RetryBudgetOptions {
  /** Tokens a first attempt deposits; a retry costs one, so this is the share of calls that may retry. @default 0.2 */
  ratio?: number;
  /** Retries allowed per second whatever the deposits (over `ttlMs`), so a quiet tool may still retry. @default 10 */
  minPerSecond?: number;
  /** How long a deposit (and a withdrawal) counts, in milliseconds. @default 10_000 */
  ttlMs?: number;
  /** Where the ledger is kept; share one store (Redis) to share the budget across a fleet. @default memoryAutopilotStore({ clock }) */
  store?: RetryBudgetStore;
  /** The ledger's key in the store: budgets with the same key and store are one budget. @default 'retry' */
  key?: string;
  /** The time source of the default memory store (a store of your own keeps its own time). @default systemClock */
  clock?: Pick<Clock, 'now'>;
}

const retryBudgetOptionKeys = optionKeys<RetryBudgetOptions>({
  ratio: true,
  minPerSecond: true,
  ttlMs: true,
  store: true,
  key: true,
  clock: true,
});

/** A retry budget: first attempts pay in, retries draw out. */
export interface RetryBudget {
  /** Pays in for one first attempt. Never waits, never fails: call it as the attempt starts. */
  deposit(): void;
  /**
   * Takes one retry's token if the budget holds one, and says whether it did. A remote store may
   * answer with a promise (one round trip) and may reject (`store_unavailable`): the caller then
   * falls back to its static policy.
   */
  tryWithdraw(): MaybePromise<boolean>;
  /** Retries the budget would allow now, in tokens (fractional; the reserve included). */
  balance(): MaybePromise<number>;
}

/**
 * Makes a retry budget of Finagle's shape: every first attempt deposits `ratio` of a token, every
 * retry withdraws one, and `minPerSecond` retries are always allowed; deposits and withdrawals
 * count for `ttlMs`. At the defaults, retries stay under 20 % of calls plus 10 a second, so a
 * brownout's retry storm is about 1.2 attempts per call, not 3.
 *
 * @example
 * const budget = retryBudget({ ratio: 0.2, minPerSecond: 10 });
 * budget.deposit();                          // a first attempt
 * if (await budget.tryWithdraw()) retryIt(); // a retry, if the budget allows
 */
export function retryBudget(options?: RetryBudgetOptions): RetryBudget {
  const given = optionsObject('retryBudget', options, retryBudgetOptionKeys);
  const ratio = requireNumber('ratio', given.ratio ?? 0.2, 0);
  const minPerSecond = requireNumber('minPerSecond', given.minPerSecond ?? 10, 0);
  const ttlMs = requireNumber('ttlMs', given.ttlMs ?? 10_000, 0, { exclusive: true });
  const key = given.key ?? 'retry';
  if (typeof key !== 'string' || key === '')
    throw new TypeError(`key must be a non-empty string, got ${String(key)}`);
  if (given.store !== undefined && given.clock !== undefined) {
    throw new TypeError(
      "clock is the default memory store's: give it to the store instead (memoryAutopilotStore({ clock }))",
    );
  }
  const store = given.store ?? memoryAutopilotStore(given.clock === undefined ? {} : { clock: given.clock });
  for (const method of ['deposit', 'withdraw', 'balance'] as const) {
    if (typeof (store as unknown as Record<string, unknown>)[method] !== 'function') {
      throw new TypeError(`store must have a ${method}() method`);
    }
  }
  return new StoreRetryBudget(store, key, {
    depositUnits: Math.round(ratio * retryBudgetUnit),
    window: { ttlMs, reserve: Math.round(minPerSecond * (ttlMs / 1_000) * retryBudgetUnit) },
  });
}

/**
 * A `RetryBudget` over a `RetryBudgetStore`: amounts in integer units, the window's shape sent
 * with every call.
 * @internal
 */
class StoreRetryBudget implements RetryBudget {
  readonly #store: RetryBudgetStore;
  readonly #key: string;
  readonly #depositUnits: number;
  readonly #window: RetryBudgetWindow;
  // Withdrawal ids: unique per budget (a resend carries the same one), cheap per retry.
  readonly #idPrefix = randomUUID();
  #withdrawals = 0;

  constructor(
    store: RetryBudgetStore,
    key: string,
    settings: { depositUnits: number; window: RetryBudgetWindow },
  ) {
    this.#store = store;
    this.#key = key;
    this.#depositUnits = settings.depositUnits;
    this.#window = settings.window;
  }

  deposit(): void {
    if (this.#depositUnits > 0) this.#store.deposit(this.#key, this.#depositUnits, this.#window);
  }

  tryWithdraw(): MaybePromise<boolean> {
    const id = `${this.#idPrefix}:${++this.#withdrawals}`;
    return this.#store.withdraw(this.#key, retryBudgetUnit, { ...this.#window, id });
  }

  balance(): MaybePromise<number> {
    const units = this.#store.balance(this.#key, this.#window);
    return typeof units === 'number' ? units / retryBudgetUnit : units.then((held) => held / retryBudgetUnit);
  }
}
