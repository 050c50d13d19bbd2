// Hedged attempts on the virtual clock: one hedge after the delay and within the budget, the
// loser aborted, the primary's failure when both fail, nothing left behind on any path.

import { describe, expect, it } from 'vitest';
import { makeTrace } from '../../bench/autopilot/traces.js';
import { VirtualClock } from '../../bench/autopilot/virtual-clock.js';
import {
  HedgeBudget,
  type HedgeDecision,
  type HedgedResult,
  type HedgeRole,
  hedgeDelay,
  hedgeEligible,
  hedgePaused,
  hedgeScarceQuantile,
  type RunHedgedOptions,
  runHedged,
} from '../../middleware/autopilot/hedge.js';
import { toolStats } from '../../middleware/autopilot/tool-stats.js';

const repeatable = { idempotent: true };

/** A budget holding `tokens` hedges; each run deposits one more (maxExtraLoad 1). */
function budgetWith(tokens: number): HedgeBudget {
  const budget = new HedgeBudget({ maxExtraLoad: 1, maxTokens: 10 });
  for (let i = 0; i < tokens; i++) budget.deposit();
  return budget;
}

/**
 * `runHedged` of a repeatable tool on `clock`: a 100 ms hedge delay and a budget holding one
 * hedge, unless `given` says otherwise.
 */
function hedged<T>(
  clock: VirtualClock,
  run: RunHedgedOptions<T>['run'],
  given: Partial<RunHedgedOptions<T>> = {},
): Promise<HedgedResult<T>> {
  return runHedged({ tool: repeatable, run, hedgeAfterMs: 100, clock, budget: budgetWith(1), ...given });
}

interface Plan {
  readonly ms: number;
  readonly fails?: boolean;
}

/** An attempt runner playing `plans` by role on `clock`, noting starts and aborts. */
function attempts(clock: VirtualClock, plans: Record<HedgeRole, Plan>) {
  const started: HedgeRole[] = [];
  const aborted: HedgeRole[] = [];
  const run = async (signal: AbortSignal, role: HedgeRole): Promise<string> => {
    started.push(role);
    signal.addEventListener('abort', () => aborted.push(role), { once: true });
    const plan = plans[role];
    await clock.sleep(plan.ms, signal);
    if (plan.fails === true) throw new Error(`${role} failed`);
    return `${role} answered`;
  };
  return { run, started, aborted };
}

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

describe('runHedged', () => {
  it('starts no hedge when the primary answers before the delay', async () => {
    const clock = new VirtualClock();
    const { run, started } = attempts(clock, { primary: { ms: 90 }, hedge: { ms: 10 } });
    const result = await clock.runUntilSettled(hedged(clock, run, { budget: budgetWith(5) }));
    expect(result).toEqual({ value: 'primary answered', hedged: false, winner: 'primary' });
    expect(started).toEqual(['primary']);
    expect(clock.pending).toBe(0);
  });

  it('starts one hedge after the delay, lets it win and aborts the primary', async () => {
    const clock = new VirtualClock();
    const { run, started, aborted } = attempts(clock, { primary: { ms: 5_000 }, hedge: { ms: 50 } });
    const decisions: HedgeDecision[] = [];
    const budget = budgetWith(5);
    const result = await clock.runUntilSettled(
      hedged(clock, run, {
        budget,
        onHedge: (d) => decisions.push(d),
      }),
    );
    expect(result).toEqual({ value: 'hedge answered', hedged: true, winner: 'hedge' });
    expect(clock.now()).toBe(150);
    expect(started).toEqual(['primary', 'hedge']);
    expect(aborted).toEqual(['primary']);
    expect(decisions).toEqual(['started']);
    expect(budget.balance).toBe(5);
    expect(clock.pending).toBe(0);
  });

  it('starts the hedge only after hedgeAfterMs, and never a second one', async () => {
    const clock = new VirtualClock();
    const { run, started } = attempts(clock, { primary: { ms: 10_000 }, hedge: { ms: 10_000 } });
    const pending = hedged(clock, run, { budget: budgetWith(5) });
    await clock.runFor(99);
    expect(started).toEqual(['primary']);
    await clock.runFor(1);
    expect(started).toEqual(['primary', 'hedge']);
    await clock.runFor(5_000);
    expect(started).toEqual(['primary', 'hedge']);
    const result = await clock.runUntilSettled(pending);
    expect(result.winner).toBe('primary');
    expect(result.hedged).toBe(true);
  });

  it('keeps the primary alone when the budget is spent, and says so', async () => {
    const clock = new VirtualClock();
    const { run, started } = attempts(clock, { primary: { ms: 300 }, hedge: { ms: 10 } });
    const decisions: HedgeDecision[] = [];
    const result = await clock.runUntilSettled(
      hedged(clock, run, {
        budget: new HedgeBudget({ maxExtraLoad: 0.05 }),
        onHedge: (d) => decisions.push(d),
      }),
    );
    expect(result).toEqual({ value: 'primary answered', hedged: false, winner: 'primary' });
    expect(started).toEqual(['primary']);
    expect(decisions).toEqual(['budget_spent']);
  });

  it('holds hedges to maxExtraLoad of calls over many slow calls', async () => {
    const clock = new VirtualClock();
    const budget = new HedgeBudget({ maxExtraLoad: 0.05 });
    let hedges = 0;
    for (let call = 0; call < 400; call++) {
      const { run } = attempts(clock, { primary: { ms: 500 }, hedge: { ms: 500 } });
      const result = await clock.runUntilSettled(hedged(clock, run, { budget }));
      if (result.hedged) hedges++;
    }
    expect(hedges).toBe(20);
  });

  it('waits for the hedge when the primary fails after it started', async () => {
    const clock = new VirtualClock();
    const { run } = attempts(clock, { primary: { ms: 150, fails: true }, hedge: { ms: 100 } });
    const result = await clock.runUntilSettled(hedged(clock, run));
    expect(result).toEqual({ value: 'hedge answered', hedged: true, winner: 'hedge' });
    expect(clock.now()).toBe(200);
  });

  it('waits for the primary when the hedge fails first', async () => {
    const clock = new VirtualClock();
    const { run } = attempts(clock, { primary: { ms: 400 }, hedge: { ms: 10, fails: true } });
    const result = await clock.runUntilSettled(hedged(clock, run));
    expect(result).toEqual({ value: 'primary answered', hedged: true, winner: 'primary' });
  });

  it("answers the primary's failure when both fail, whichever failed first", async () => {
    for (const plans of [
      { primary: { ms: 150, fails: true }, hedge: { ms: 100, fails: true } },
      { primary: { ms: 400, fails: true }, hedge: { ms: 10, fails: true } },
    ]) {
      const clock = new VirtualClock();
      const { run } = attempts(clock, plans);
      await expect(clock.runUntilSettled(hedged(clock, run))).rejects.toThrow('primary failed');
      expect(clock.pending).toBe(0);
    }
  });

  it('fails at once, with no hedge, when the primary fails before the delay', async () => {
    const clock = new VirtualClock();
    const { run, started } = attempts(clock, { primary: { ms: 20, fails: true }, hedge: { ms: 10 } });
    await expect(clock.runUntilSettled(hedged(clock, run))).rejects.toThrow('primary failed');
    expect(started).toEqual(['primary']);
    expect(clock.now()).toBe(20);
    expect(clock.pending).toBe(0);
  });

  it('treats a value that is no success as a failure, and answers it when both fail', async () => {
    const clock = new VirtualClock();
    const run = async (signal: AbortSignal, role: HedgeRole) => {
      await clock.sleep(role === 'primary' ? 300 : 100, signal);
      return { ok: false, from: role };
    };
    const result = await clock.runUntilSettled(
      hedged(clock, run, {
        succeeded: (value) => value.ok,
      }),
    );
    expect(result).toEqual({ value: { ok: false, from: 'primary' }, hedged: true, winner: 'primary' });
    expect(clock.now()).toBe(300);
  });

  it("ends both attempts on the caller's abort, and rejects with its reason at once", async () => {
    const clock = new VirtualClock();
    const { run, aborted } = attempts(clock, { primary: { ms: 10_000 }, hedge: { ms: 10_000 } });
    const caller = new AbortController();
    const pending = hedged(clock, run, {
      signal: caller.signal,
    });
    await clock.runFor(150);
    caller.abort(new Error('user left'));
    await expect(clock.runUntilSettled(pending)).rejects.toThrow('user left');
    expect(aborted.sort()).toEqual(['hedge', 'primary']);
    expect(clock.pending).toBe(0);
    expect(clock.now()).toBe(150);
  });

  it('clears the hedge timer on a caller abort before the delay', async () => {
    const clock = new VirtualClock();
    const { run, started } = attempts(clock, { primary: { ms: 10_000 }, hedge: { ms: 10 } });
    const caller = new AbortController();
    const pending = hedged(clock, run, {
      signal: caller.signal,
    });
    await clock.runFor(50);
    caller.abort(new Error('user left'));
    await expect(clock.runUntilSettled(pending)).rejects.toThrow('user left');
    await clock.run();
    expect(started).toEqual(['primary']);
    expect(clock.pending).toBe(0);
  });

  it('runs nothing for a caller already aborted', async () => {
    const clock = new VirtualClock();
    const { run, started } = attempts(clock, { primary: { ms: 10 }, hedge: { ms: 10 } });
    await expect(
      hedged(clock, run, {
        signal: AbortSignal.abort('gone'),
      }),
    ).rejects.toBe('gone');
    expect(started).toEqual([]);
  });

  it('removes its abort listener from the caller signal on every path', async () => {
    const clock = new VirtualClock();
    const caller = new AbortController();
    let listeners = 0;
    const add = caller.signal.addEventListener.bind(caller.signal);
    const remove = caller.signal.removeEventListener.bind(caller.signal);
    caller.signal.addEventListener = ((...args: Parameters<typeof add>) => {
      listeners++;
      add(...args);
    }) as typeof add;
    caller.signal.removeEventListener = ((...args: Parameters<typeof remove>) => {
      listeners--;
      remove(...args);
    }) as typeof remove;
    for (const plans of [
      { primary: { ms: 50 }, hedge: { ms: 10 } },
      { primary: { ms: 500 }, hedge: { ms: 10 } },
      { primary: { ms: 500, fails: true }, hedge: { ms: 1_000, fails: true } },
    ]) {
      const { run } = attempts(clock, plans);
      await clock
        .runUntilSettled(
          hedged(clock, run, {
            signal: caller.signal,
          }),
        )
        .catch(() => undefined);
      expect(listeners).toBe(0);
      expect(clock.pending).toBe(0);
    }
  });

  it("leaves no unhandled rejection from the loser's late failure", async () => {
    const clock = new VirtualClock();
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      // The primary ignores its signal and fails after the hedge has won.
      const run = async (signal: AbortSignal, role: HedgeRole) => {
        if (role === 'hedge') {
          await clock.sleep(10, signal);
          return 'hedge answered';
        }
        await clock.sleep(500);
        throw new Error('late primary failure');
      };
      const result = await clock.runUntilSettled(hedged(clock, run));
      expect(result.winner).toBe('hedge');
      await clock.run();
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('reports would_start in shadow mode and starts nothing', async () => {
    const clock = new VirtualClock();
    const { run, started } = attempts(clock, { primary: { ms: 300 }, hedge: { ms: 10 } });
    const decisions: HedgeDecision[] = [];
    const budget = budgetWith(1);
    const result = await clock.runUntilSettled(
      hedged(clock, run, {
        budget,
        shadow: true,
        onHedge: (d) => decisions.push(d),
      }),
    );
    expect(result).toEqual({ value: 'primary answered', hedged: false, winner: 'primary' });
    expect(started).toEqual(['primary']);
    expect(decisions).toEqual(['would_start']);
  });

  it('sets no timer when hedgeAfterMs is Infinity (warm-up) and passes the caller signal through', async () => {
    const clock = new VirtualClock();
    const caller = new AbortController();
    let seen: AbortSignal | undefined;
    const result = await clock.runUntilSettled(
      hedged(
        clock,
        async (signal) => {
          seen = signal;
          expect(clock.pending).toBe(0);
          await clock.sleep(10);
          return 1;
        },
        { hedgeAfterMs: Infinity, signal: caller.signal },
      ),
    );
    expect(result).toEqual({ value: 1, hedged: false, winner: 'primary' });
    expect(seen).toBe(caller.signal);
  });

  it('never hedges a tool that is neither idempotent nor read-only, whatever the budget', async () => {
    for (const tool of [{ idempotent: false }, { annotations: { readOnlyHint: false } }, {}]) {
      const clock = new VirtualClock();
      const { run, started } = attempts(clock, { primary: { ms: 10_000 }, hedge: { ms: 10 } });
      const decisions: HedgeDecision[] = [];
      const budget = budgetWith(10);
      const pending = hedged(clock, run, {
        tool,
        hedgeAfterMs: 0,
        budget,
        onHedge: (d) => decisions.push(d),
      });
      // The only timer is the attempt's own: no hedge is even scheduled.
      expect(clock.pending).toBe(1);
      const result = await clock.runUntilSettled(pending);
      expect(result).toEqual({ value: 'primary answered', hedged: false, winner: 'primary' });
      expect(started).toEqual(['primary']);
      expect(decisions).toEqual([]);
      expect(budget.balance).toBe(10);
    }
  });

  it('rejects with the error of a succeeded predicate that throws, and aborts the other attempt', async () => {
    const clock = new VirtualClock();
    const { run, aborted } = attempts(clock, { primary: { ms: 10_000 }, hedge: { ms: 50 } });
    const succeeded = (): boolean => {
      throw new Error('predicate broke');
    };
    await expect(clock.runUntilSettled(hedged(clock, run, { succeeded }))).rejects.toThrow('predicate broke');
    expect(aborted).toEqual(['primary']);
    expect(clock.pending).toBe(0);
  });

  it('turns a run that throws at once into a rejection, with or without a hedge delay', async () => {
    const clock = new VirtualClock();
    const run = (): Promise<number> => {
      throw new Error('threw at once');
    };
    for (const hedgeAfterMs of [Infinity, 100]) {
      await expect(clock.runUntilSettled(hedged(clock, run, { hedgeAfterMs }))).rejects.toThrow(
        'threw at once',
      );
      expect(clock.pending).toBe(0);
    }
  });

  it('rejects a bad tool, hedgeAfterMs, budget or clock with a TypeError naming it', () => {
    const clock = new VirtualClock();
    const run = async () => 1;
    expect(() => hedged(clock, run, { tool: undefined as never })).toThrow(/tool/);
    expect(() => hedged(clock, run, { hedgeAfterMs: -1 })).toThrow(/hedgeAfterMs/);
    expect(() => hedged(clock, run, { hedgeAfterMs: Number.NaN })).toThrow(/hedgeAfterMs/);
    expect(() => hedged(clock, run, { budget: {} as HedgeBudget })).toThrow(/budget/);
    expect(() => hedged(clock, run, { clock: {} as VirtualClock })).toThrow(/clock/);
  });
});

describe('runHedged on the steady straggler trace', () => {
  it('cuts the p99 by most of it at the live p95, for at most maxExtraLoad more attempts', async () => {
    const calls = 20_000;
    const trace = makeTrace('steady', { seed: 34, calls });
    const clock = new VirtualClock();
    const stats = toolStats({ clock });
    const budget = new HedgeBudget({ maxExtraLoad: 0.05 });
    const hedgedMs: number[] = [];
    const aloneMs: number[] = [];
    let attempts = 0;
    for (let call = 0; call < calls; call++) {
      const p95 = stats.summary('sim')?.p95;
      const hedgeAfterMs = (stats.summary('sim')?.samples ?? 0) >= 200 && p95 !== undefined ? p95 : Infinity;
      const startedAt = clock.now();
      const run = async (signal: AbortSignal, role: HedgeRole) => {
        attempts++;
        const attemptStartedAt = clock.now();
        try {
          await clock.sleep(trace.plan(call, role === 'primary' ? 0 : 1).latencyMs, signal);
          return role;
        } finally {
          // The primary's time, even when cut short by the hedge's win: a lower bound past
          // hedgeAfterMs, which keeps the share of calls above the p95 right (leaving it out
          // would pull the p95 down and spend the budget on calls that needed no hedge).
          if (role === 'primary') stats.record('sim', 'success', clock.now() - attemptStartedAt);
        }
      };
      await clock.runUntilSettled(hedged(clock, run, { hedgeAfterMs, budget }));
      hedgedMs.push(clock.now() - startedAt);
      aloneMs.push(trace.plan(call, 0).latencyMs);
    }
    const p99 = (samples: number[]) =>
      [...samples].sort((a, b) => a - b)[Math.ceil(0.99 * samples.length) - 1]!;
    // The Tail at Scale's shape: p99 −80 % or better for ≤ 5 % extra attempts (plus the bucket's cap).
    expect(p99(hedgedMs)).toBeLessThan(0.2 * p99(aloneMs));
    expect(attempts - calls).toBeLessThanOrEqual(0.05 * calls + 10);
    expect(attempts - calls).toBeGreaterThan(0.03 * calls);
    expect(clock.pending).toBe(0);
  });
});
