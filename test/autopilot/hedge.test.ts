// The hedge's rules: which tools may be hedged, when hedging pauses, how long a hedge waits and
// the budget that pays for it. The race itself is tested through the layer (hedging.test.ts).

import { describe, expect, it } from 'vitest';
import {
  HedgeBudget,
  hedgeDelay,
  hedgeEligible,
  hedgePaused,
  hedgeScarceQuantile,
} from '../../middleware/autopilot/hedge.js';

describe('hedgeEligible', () => {
  it('admits only idempotent or read-only tools, strictly', () => {
    expect(hedgeEligible({ idempotent: true })).toBe(true);
    expect(hedgeEligible({ idempotent: false, annotations: { readOnlyHint: true } })).toBe(true);
    expect(hedgeEligible({ idempotent: false })).toBe(false);
    expect(hedgeEligible({})).toBe(false);
    expect(hedgeEligible({ annotations: { readOnlyHint: 'yes' } })).toBe(false);
    expect(hedgeEligible({ annotations: { idempotentHint: true } as { readOnlyHint?: unknown } })).toBe(
      false,
    );
  });
});

describe('hedgePaused', () => {
  it('pauses a tool once over 10 % of its attempts time out or fail transiently', () => {
    expect(hedgePaused({ success: 0, timeout: 0, transient: 0, other: 0 })).toBe(false);
    expect(hedgePaused({ success: 90, timeout: 5, transient: 5, other: 0 })).toBe(false);
    expect(hedgePaused({ success: 89, timeout: 5, transient: 6, other: 0 })).toBe(true);
    expect(hedgePaused({ success: 70, timeout: 0, transient: 30, other: 0 })).toBe(true);
    // A caller's bad input is no sign of a backend in trouble.
    expect(hedgePaused({ success: 50, timeout: 0, transient: 0, other: 50 })).toBe(false);
  });
});

describe('hedgeDelay', () => {
  it('waits for the live quantile while the budget is half full, for the scarce one when it is empty', () => {
    expect(hedgeScarceQuantile(0.95)).toBeCloseTo(0.975, 10);
    expect(hedgeScarceQuantile(0.9)).toBeCloseTo(0.95, 10);
    expect(hedgeDelay(450, 700, 1)).toBe(450);
    expect(hedgeDelay(450, 700, 0.5)).toBe(450);
    expect(hedgeDelay(450, 700, 0.25)).toBe(575);
    expect(hedgeDelay(450, 700, 0)).toBe(700);
    // Owing for retries: as empty as it gets.
    expect(hedgeDelay(450, 700, -0.5)).toBe(700);
    // A scarce quantile not above the live one (too few samples to tell them apart) changes nothing.
    expect(hedgeDelay(450, 450, 0)).toBe(450);
    expect(hedgeDelay(450, Number.NaN, 0)).toBe(450);
  });
});

describe('HedgeBudget', () => {
  it('is charged a token and the deposit back for a retry, owing at most maxTokens', () => {
    const budget = new HedgeBudget({ maxExtraLoad: 0.5, maxTokens: 2 });
    for (let i = 0; i < 4; i++) budget.deposit();
    expect(budget.level).toBe(1);
    // The retry's own run deposits 0.5: the charge takes that back with its token.
    budget.deposit();
    budget.charge();
    expect(budget.balance).toBe(0.5);
    expect(budget.tryWithdraw()).toBe(false);
    for (let i = 0; i < 10; i++) budget.charge();
    expect(budget.balance).toBe(-2);
    expect(budget.level).toBe(-1);
    for (let i = 0; i < 6; i++) budget.deposit();
    expect(budget.tryWithdraw()).toBe(true);
  });

  it('allows maxExtraLoad hedges per call, exactly, and caps what it banks', () => {
    const budget = new HedgeBudget({ maxExtraLoad: 0.05, maxTokens: 2 });
    expect(budget.tryWithdraw()).toBe(false);
    for (let i = 0; i < 19; i++) budget.deposit();
    expect(budget.tryWithdraw()).toBe(false);
    budget.deposit();
    expect(budget.tryWithdraw()).toBe(true);
    expect(budget.tryWithdraw()).toBe(false);
    for (let i = 0; i < 1_000; i++) budget.deposit();
    expect(budget.balance).toBe(2);
  });

  it('rejects bad options with a TypeError naming the option', () => {
    expect(() => new HedgeBudget({ maxExtraLoad: 1.5 })).toThrow(/maxExtraLoad/);
    expect(() => new HedgeBudget({ maxExtraLoad: -0.1 })).toThrow(/maxExtraLoad/);
    expect(() => new HedgeBudget({ maxTokens: 0 })).toThrow(/maxTokens/);
    expect(() => new HedgeBudget({ maxExtraLod: 0.1 } as never)).toThrow(/did you mean "maxExtraLoad"/);
  });
});
