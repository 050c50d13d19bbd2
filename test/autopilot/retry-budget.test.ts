// The retry budget: Finagle's shape (20 % of first attempts + 10 a second, amounts living 10 s)
// over the memory store on a manual clock, and its options.

import { describe, expect, it } from 'vitest';
import { memoryAutopilotStore } from '../../middleware/autopilot/memory-store.js';
import { retryBudget } from '../../middleware/autopilot/retry-budget.js';
import type { RetryBudgetStore } from '../../middleware/autopilot/store.js';

function manualTime(start = 1_000_000) {
  let now = start;
  return {
    clock: { now: () => now },
    advance(ms: number) {
      now += ms;
    },
  };
}

/** Withdraws until refused; answers how many were taken. */
function drain(budget: ReturnType<typeof retryBudget>): number {
  let taken = 0;
  while (budget.tryWithdraw() === true) taken++;
  return taken;
}

describe('retryBudget', () => {
  it('starts with minPerSecond × ttl seconds of retries in reserve', () => {
    const budget = retryBudget({ throttle: false, clock: manualTime().clock });
    expect(budget.balance()).toBe(100);
    expect(drain(budget)).toBe(100);
    expect(budget.balance()).toBe(0);
  });

  it('lets every first attempt deposit ratio of a retry', () => {
    const budget = retryBudget({ ratio: 0.2, minPerSecond: 0, clock: manualTime().clock });
    expect(budget.tryWithdraw()).toBe(false);
    for (let i = 0; i < 4; i++) budget.deposit();
    expect(budget.balance()).toBeCloseTo(0.8, 10);
    expect(budget.tryWithdraw()).toBe(false);
    budget.deposit();
    expect(budget.tryWithdraw()).toBe(true);
    expect(budget.tryWithdraw()).toBe(false);
  });

  it('forgets deposits and withdrawals after ttlMs', () => {
    const time = manualTime(0);
    const budget = retryBudget({
      ratio: 1,
      minPerSecond: 1,
      ttlMs: 10_000,
      throttle: false,
      clock: time.clock,
    });
    for (let i = 0; i < 50; i++) budget.deposit();
    expect(budget.balance()).toBe(60);
    expect(drain(budget)).toBe(60);
    time.advance(8_999);
    expect(budget.balance()).toBe(0);
    // Everything fell in the first slice of 1 000 ms: it leaves once ten newer slices have begun.
    time.advance(1_001);
    expect(budget.balance()).toBe(10);
  });

  it('holds a brownout to about ratio retries per call plus minPerSecond (throttle off)', () => {
    const time = manualTime(0);
    const budget = retryBudget({ ratio: 0.2, minPerSecond: 10, throttle: false, clock: time.clock });
    let calls = 0;
    let attempts = 0;
    // 1 000 calls a second for 60 s, every first attempt failing: each call asks for two retries.
    for (let ms = 0; ms < 60_000; ms++) {
      calls++;
      attempts++;
      budget.deposit();
      for (let retry = 0; retry < 2 && budget.tryWithdraw() === true; retry++) attempts++;
      time.advance(1);
    }
    // Over 60 s: 0.2 per call, 10 a second, and the 100 held in reserve at the start.
    const allowed = calls * 1.2 + 10 * 60 + 100;
    expect(attempts).toBeLessThanOrEqual(allowed);
    expect(attempts).toBeGreaterThan(allowed * 0.97);
    expect(attempts / calls).toBeLessThan(1.22);
  });

  it('stops every retry, the reserve too, while failures outrun ratio of the successes by the tolerance', () => {
    const time = manualTime(0);
    const budget = retryBudget({ ratio: 0.2, minPerSecond: 10, clock: time.clock });
    // Sixteen first attempts earn 3.2; a failure that is retried nets −1 (−1.2, then +0.2 as
    // the retry starts): the ninth failure takes the score to −6, past the tolerance of 5.
    for (let i = 0; i < 16; i++) budget.deposit();
    let granted = 0;
    while (budget.tryWithdraw() === true) granted++;
    expect(granted).toBe(8);
    // The reserve's 92 tokens are there, unused.
    expect(budget.balance()).toBe(0);
    // Successes earn their way back.
    for (let i = 0; i < 15; i++) budget.deposit();
    expect(budget.tryWithdraw()).toBe(true);
  });

  it('opens again once the failures have left the window, whatever the traffic', () => {
    const time = manualTime(0);
    const budget = retryBudget({ clock: time.clock });
    for (let i = 0; i < 20; i++) budget.tryWithdraw();
    expect(budget.tryWithdraw()).toBe(false);
    time.advance(9_000);
    expect(budget.tryWithdraw()).toBe(false);
    // A quiet tool: no call in between, and its next failure is retried.
    time.advance(10_000);
    expect(budget.tryWithdraw()).toBe(true);
  });

  it('retries every failure while they are rare (5 % of attempts) and none at 30 %', () => {
    const time = manualTime(0);
    const at = (fails: (call: number) => boolean) => {
      const budget = retryBudget({ ratio: 0.2, minPerSecond: 0, clock: time.clock });
      let failures = 0;
      let retried = 0;
      for (let call = 0; call < 10_000; call++) {
        budget.deposit();
        if (fails(call)) {
          failures++;
          if (budget.tryWithdraw() === true) retried++;
        }
        time.advance(1);
      }
      return retried / failures;
    };
    expect(at((call) => call % 20 === 10)).toBe(1);
    expect(at((call) => call % 10 < 3)).toBeLessThan(0.01);
  });

  it('shares one ledger between budgets of one store and key, and none across keys', () => {
    const store = memoryAutopilotStore({ clock: manualTime().clock });
    const first = retryBudget({ store, minPerSecond: 1, throttle: false });
    const second = retryBudget({ store, minPerSecond: 1, throttle: false });
    const other = retryBudget({ store, minPerSecond: 1, key: 'other', throttle: false });
    expect(drain(first)).toBe(10);
    expect(second.tryWithdraw()).toBe(false);
    expect(other.balance()).toBe(10);
  });

  it('runs over a store that answers with promises', async () => {
    const memory = memoryAutopilotStore({ clock: manualTime().clock });
    const store: RetryBudgetStore = {
      deposit: (key, units, window) => memory.deposit(key, units, window),
      withdraw: async (key, units, window) => memory.withdraw(key, units, window),
      balance: async (key, window) => memory.balance(key, window),
    };
    const budget = retryBudget({ store, ratio: 0.5, minPerSecond: 0 });
    budget.deposit();
    budget.deposit();
    expect(await budget.balance()).toBe(1);
    expect(await budget.tryWithdraw()).toBe(true);
    expect(await budget.tryWithdraw()).toBe(false);
  });

  it('sends each withdrawal with an id of its own', () => {
    const ids: string[] = [];
    const memory = memoryAutopilotStore();
    const store: RetryBudgetStore = {
      deposit: (key, units, window) => memory.deposit(key, units, window),
      withdraw: (key, units, window) => {
        ids.push(window.id);
        return memory.withdraw(key, units, window);
      },
      balance: (key, window) => memory.balance(key, window),
    };
    const budget = retryBudget({ store });
    budget.tryWithdraw();
    budget.tryWithdraw();
    expect(new Set(ids).size).toBe(2);
  });

  it('deposits nothing at ratio 0, and allows no retry with no reserve either', () => {
    const budget = retryBudget({ ratio: 0, minPerSecond: 0, clock: manualTime().clock });
    for (let i = 0; i < 100; i++) budget.deposit();
    expect(budget.balance()).toBe(0);
    expect(budget.tryWithdraw()).toBe(false);
  });

  it('rejects bad options with a TypeError naming the option', () => {
    expect(() => retryBudget({ ratio: -0.1 })).toThrow(/ratio must be a finite number >= 0/);
    expect(() => retryBudget({ ratio: Number.NaN })).toThrow(/ratio must be a finite number >= 0/);
    expect(() => retryBudget({ minPerSecond: Infinity })).toThrow(
      /minPerSecond must be a finite number >= 0/,
    );
    expect(() => retryBudget({ ttlMs: 0 })).toThrow(/ttlMs must be a finite number > 0/);
    expect(() => retryBudget({ key: '' })).toThrow(/key must be a non-empty string/);
    expect(() => retryBudget({ throttle: { tolerance: -1 } })).toThrow(
      /throttle.tolerance must be a finite number >= 0/,
    );
    expect(() => retryBudget({ throttle: true as never })).toThrow(
      /throttle must be an options object or false/,
    );
    expect(() => retryBudget({ throttle: { tolerence: 1 } as never })).toThrow(
      /unknown option "tolerence"; did you mean "tolerance"\?/,
    );
    expect(() => retryBudget({ store: {} as RetryBudgetStore })).toThrow(
      /store must have a deposit\(\) method/,
    );
    expect(() => retryBudget({ clock: {} as never })).toThrow(/clock must have a now\(\) method/);
    expect(() => retryBudget({ ratios: 0.2 } as never)).toThrow(
      /retryBudget\(\) got an unknown option "ratios"; did you mean "ratio"\?/,
    );
    expect(() => memoryAutopilotStore({ clocks: {} } as never)).toThrow(/unknown option "clocks"/);
  });
});
