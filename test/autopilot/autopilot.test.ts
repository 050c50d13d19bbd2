import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  type AutopilotOptions,
  autopilot,
  createDispatcher,
  type DispatchEvent,
  defaultStack,
  errorMapping,
  type Outcome,
  retry,
  retryBudget,
  type RetryOptions,
  ToolRegistry,
  toolLookup,
  toToolMessage,
  TransientError,
} from '../../index.js';
import { memoryAutopilotStore } from '../../middleware/index.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

interface Setup {
  pilot?: AutopilotOptions;
  retry?: RetryOptions;
  toolTimeoutMs?: number;
  idempotent?: boolean;
  failing?: () => boolean;
}

// A tool that sleeps `ms` (its args) and answers, or fails transiently when `failing()` says so.
function setup({
  pilot: pilotOptions = {},
  retry: retryOptions = {},
  toolTimeoutMs = 10_000,
  idempotent = false,
  failing,
}: Setup = {}) {
  const events: DispatchEvent[] = [];
  const registry = new ToolRegistry().register({
    name: 'search.web',
    inputSchema: z.object({ ms: z.number() }),
    timeoutMs: toolTimeoutMs,
    idempotent,
    handler: async ({ ms }) => {
      await new Promise((resolve) => setTimeout(resolve, ms));
      if (failing?.() === true) throw new TransientError('backend busy');
      return 'hits';
    },
  });
  const pilot = autopilot(pilotOptions);
  const dispatcher = createDispatcher(
    defaultStack({
      registry,
      autopilot: pilot,
      retry: { random: () => 0, baseDelayMs: 10, ...retryOptions },
    }),
    { onEvent: (event) => events.push(event) },
  );
  const call = async (ms: number, options: { timeoutMs?: number } = {}): Promise<Outcome> => {
    const pending = dispatcher.dispatch('search.web', { ms }, options);
    await vi.advanceTimersByTimeAsync(ms + 60_000);
    return await pending;
  };
  // One call at a time: the preset's concurrency limit would queue a crowd, and its wait is no latency.
  const warmUp = async (count: number, ms: number) => {
    for (let i = 0; i < count; i++) {
      const pending = dispatcher.dispatch('search.web', { ms });
      await vi.advanceTimersByTimeAsync(ms);
      expect((await pending).ok).toBe(true);
    }
  };
  return { pilot, dispatcher, events, call, warmUp };
}

const quick = { quantile: 0.99, factor: 2, minMs: 50, minSamples: 20 };

describe('autopilot: the timeout', () => {
  it("keeps the tool's timeout until minSamples, then cuts off at factor × quantile", async () => {
    const { call, warmUp, events } = setup({ pilot: { timeout: quick } });
    await warmUp(19, 100);
    const early = await call(3_000);
    expect(early).toMatchObject({
      ok: true,
      policy: { timeoutMs: 10_000, source: 'static: under 20 samples' },
    });
    await warmUp(20, 100);
    const late = await call(3_000);
    expect(late.ok).toBe(false);
    if (late.ok) return;
    expect(late.kind).toBe('timeout');
    expect(late.policy?.timeoutMs).toBeGreaterThanOrEqual(198);
    expect(late.policy?.timeoutMs).toBeLessThanOrEqual(203);
    // The summary is taken again every few dozen calls, so it counts the calls it was taken on.
    expect(late.policy).toMatchObject({
      mode: 'enforce',
      cutOff: true,
      source: expect.stringMatching(/^p99 × 2 of (20|40) calls$/),
    });
    expect(late.message).toMatch(
      /timed out after \d+ ms \(attempt 1\): cut off at the autopilot's p99 × 2 of (20|40) calls$/,
    );
    expect(toToolMessage(late)).toContain("cut off at the autopilot's p99 × 2");
    expect(late.toJSON().policy).toEqual(late.policy);
    expect(JSON.parse(JSON.stringify(late)).policy.source).toBe(late.policy?.source);
    const decision = events.find((event) => event.type === 'autopilot.decision' && event.knob === 'timeout');
    expect(decision).toMatchObject({ from: undefined, to: late.policy?.timeoutMs, mode: 'enforce' });
  });

  it("never sets a timeout above the tool's or the caller's timeoutMs", async () => {
    const { call, warmUp } = setup({ pilot: { timeout: quick }, toolTimeoutMs: 150 });
    await warmUp(30, 100);
    const capped = await call(120);
    expect(capped).toMatchObject({ ok: true, policy: { timeoutMs: 150 } });
    expect(capped.ok && capped.policy?.source).toMatch(/^static: the cap is below p99 × 2/);
    const byCaller = await call(130, { timeoutMs: 120 });
    expect(byCaller).toMatchObject({ ok: false, kind: 'timeout', policy: { timeoutMs: 120, cutOff: false } });
  });

  it('never sets a timeout below minMs, even for a tool that answers at once', async () => {
    const { call, warmUp, pilot } = setup({ pilot: { timeout: quick } });
    await warmUp(30, 0);
    expect(pilot.snapshot('search.web').timeoutMs).toBe(50);
    expect(await call(40)).toMatchObject({ ok: true, policy: { timeoutMs: 50 } });
    expect(await call(80)).toMatchObject({
      ok: false,
      kind: 'timeout',
      policy: { timeoutMs: 50, cutOff: true },
    });
  });

  it('never shortens the timeout of a tool that only fails', async () => {
    const { call, pilot } = setup({
      pilot: { timeout: quick },
      failing: () => true,
      retry: { maxAttempts: 1 },
    });
    for (let i = 0; i < 40; i++) expect(await call(5)).toMatchObject({ ok: false, kind: 'transient' });
    expect(pilot.snapshot('search.web')).toMatchObject({ samples: 0, timeoutMs: undefined });
    expect(await call(5)).toMatchObject({
      policy: { timeoutMs: 10_000, source: 'static: under 20 samples' },
    });
  });

  it('tells its snapshot of a tool', async () => {
    const { warmUp, pilot } = setup({ pilot: { timeout: quick } });
    await warmUp(25, 100);
    const snapshot = pilot.snapshot('search.web');
    expect(snapshot.samples).toBe(25);
    expect(snapshot.p50).toBeCloseTo(100, -1);
    expect(snapshot).toMatchObject({ hedgeAfterMs: undefined, concurrency: undefined });
    expect(snapshot.retryBudget?.balance).toBeGreaterThan(0);
    expect(pilot.snapshot('never.seen')).toMatchObject({ samples: 0, timeoutMs: undefined });
  });
});

describe('autopilot: the retry budget', () => {
  it('does not retry once the budget is spent: same kind, the message says why, and an event fires', async () => {
    const { call, events } = setup({
      pilot: { retryBudget: { ratio: 1, minPerSecond: 0 } },
      failing: () => true,
    });
    const outcome = await call(5);
    expect(outcome).toMatchObject({ ok: false, kind: 'transient', attempts: 2 });
    if (outcome.ok) return;
    expect(outcome.message).toBe('backend busy (not retried: the retry budget is spent)');
    expect(outcome.policy).toMatchObject({ budget: 'spent', retried: true });
    expect(toToolMessage(outcome)).toContain('not retried: the retry budget is spent');
    expect(events.filter((event) => event.type === 'retry.budget_exhausted')).toEqual([
      expect.objectContaining({ kind: 'transient' }),
    ]);
    expect(events.filter((event) => event.type === 'dispatch.retry')).toHaveLength(1);
  });

  it('works with retry alone: retry({ budget: retryBudget(...) })', async () => {
    const registry = new ToolRegistry().register({
      name: 'flaky.op',
      inputSchema: z.object({}),
      handler: () => {
        throw new TransientError('busy');
      },
    });
    const events: DispatchEvent[] = [];
    const budget = retryBudget({ ratio: 0, minPerSecond: 0 });
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), retry({ budget })], {
      onEvent: (event) => events.push(event),
    });
    const outcome = await dispatcher.dispatch('flaky.op', {});
    expect(outcome).toMatchObject({ ok: false, kind: 'transient', attempts: 1 });
    expect(outcome.ok || outcome.message).toBe('busy (not retried: the retry budget is spent)');
    expect(events.some((event) => event.type === 'retry.budget_exhausted')).toBe(true);
  });

  it('falls back to the static rules when the store fails, and says so', async () => {
    const store = memoryAutopilotStore();
    const broken = {
      deposit: () => {
        throw new Error('redis down');
      },
      withdraw: () => Promise.reject(new Error('redis down')),
      balance: () => store.balance('x', { ttlMs: 1, reserve: 0 }),
    };
    const { call, events } = setup({ pilot: { store: broken }, failing: () => true });
    const outcome = await call(5);
    expect(outcome).toMatchObject({
      ok: false,
      kind: 'transient',
      attempts: 3,
      policy: { budget: 'unavailable' },
    });
    expect(outcome.ok || outcome.message).toBe('backend busy');
    expect(events.filter((event) => event.type === 'autopilot.fallback').length).toBeGreaterThanOrEqual(3);
  });

  it('lets retry alone retry when its budget cannot answer', async () => {
    const registry = new ToolRegistry().register({
      name: 'flaky.op',
      inputSchema: z.object({}),
      handler: () => {
        throw new TransientError('busy');
      },
    });
    const events: DispatchEvent[] = [];
    const budget = { deposit: () => {}, tryWithdraw: () => Promise.reject(new Error('down')) };
    const dispatcher = createDispatcher(
      [errorMapping(), toolLookup(registry), retry({ budget, baseDelayMs: 0, random: () => 0 })],
      { onEvent: (event) => events.push(event) },
    );
    expect(await dispatcher.dispatch('flaky.op', {})).toMatchObject({ kind: 'transient', attempts: 3 });
    expect(events.filter((event) => event.type === 'retry.budget_unavailable')).toHaveLength(2);
  });

  it('refuses two budgets in the preset', () => {
    const registry = new ToolRegistry();
    expect(() =>
      defaultStack({ registry, autopilot: autopilot(), retry: { budget: retryBudget() } }),
    ).toThrow(/takes one retry budget/);
    expect(() =>
      defaultStack({
        registry,
        autopilot: autopilot({ retryBudget: false }),
        retry: { budget: retryBudget() },
      }),
    ).not.toThrow();
  });
});

describe('autopilot: shadow mode', () => {
  it('changes nothing and says what it would have done', async () => {
    const { call, warmUp, events } = setup({
      pilot: { mode: 'shadow', timeout: quick, retryBudget: { ratio: 0, minPerSecond: 0 } },
    });
    await warmUp(30, 100);
    const slow = await call(3_000);
    expect(slow).toMatchObject({ ok: true, result: 'hits', policy: { mode: 'shadow', cutOff: true } });
    expect(events.filter((event) => event.type === 'autopilot.shadow')).toEqual([
      expect.objectContaining({ knob: 'timeout', action: 'cut_off', latencyMs: 3_000 }),
    ]);
    expect(events.some((event) => event.type === 'dispatch.timeout')).toBe(false);
  });

  it('retries as the static rules say while the budget would refuse', async () => {
    const { call, events } = setup({
      pilot: { mode: 'shadow', retryBudget: { ratio: 0, minPerSecond: 0 } },
      failing: () => true,
    });
    const outcome = await call(5);
    expect(outcome).toMatchObject({ ok: false, kind: 'transient', attempts: 3, policy: { budget: 'spent' } });
    expect(outcome.ok || outcome.message).toBe('backend busy');
    expect(events.some((event) => event.type === 'retry.budget_exhausted')).toBe(false);
    expect(
      events.filter((event) => event.type === 'autopilot.shadow' && event.action === 'not_retried'),
    ).toHaveLength(2);
  });
});

describe('autopilot: bad input', () => {
  it.each([
    [{ timeout: { quantile: 1 } }, /timeout\.quantile must be a number in \(0, 1\)/],
    [{ timeout: { quantile: 0 } }, /timeout\.quantile/],
    [{ timeout: { factor: 0.5 } }, /timeout\.factor/],
    [{ timeout: { minMs: 0 } }, /timeout\.minMs/],
    [{ timeout: { minSamples: 1.5 } }, /timeout\.minSamples/],
    [{ hedge: { quantile: 1.5 } }, /hedge\.quantile/],
    [{ hedge: { maxExtraLoad: 1.2 } }, /hedge\.maxExtraLoad must be a number in \[0, 1\]/],
    [{ hedge: { maxExtraLoad: -0.1 } }, /hedge\.maxExtraLoad/],
    [{ concurrency: { min: 8, max: 2 } }, /concurrency\.min must be at most concurrency\.max/],
    [{ tiemout: {} }, /unknown option "tiemout"; did you mean "timeout"\?/],
    [{ timeout: { quantil: 0.9 } }, /unknown option "quantil"; did you mean "quantile"\?/],
    [{ mode: 'auto' }, /mode must be 'enforce' or 'shadow'/],
    [{ retryBudget: { ratio: -1 } }, /ratio/],
    [{ store: {} }, /store must be an AutopilotStore/],
  ])('throws a TypeError naming the option for %j', (options, message) => {
    expect(() => autopilot(options as AutopilotOptions)).toThrow(TypeError);
    expect(() => autopilot(options as AutopilotOptions)).toThrow(message);
  });

  it.each([
    [
      { hedge: { quantile: 0.95, maxExtra: 0.1 } },
      /unknown option "maxExtra"; did you mean "maxExtraLoad"\?/,
    ],
    [{ hedge: true }, /hedge must be an options object or false/],
    [{ concurrency: { min: 1, maxi: 8 } }, /unknown option "maxi"; did you mean "max"\?/],
    [{ concurrency: { min: 0 } }, /concurrency\.min/],
    [{ concurrency: { max: 2.5 } }, /concurrency\.max/],
    [{ random: 4 }, /random/],
  ])('throws a TypeError naming the hedge or concurrency option for %j', (options, message) => {
    expect(() => autopilot(options as AutopilotOptions)).toThrow(TypeError);
    expect(() => autopilot(options as AutopilotOptions)).toThrow(message);
  });

  it('takes hedge and concurrency, or false', () => {
    expect(() => autopilot({ hedge: { quantile: 0.95 }, concurrency: { min: 1, max: 64 } })).not.toThrow();
    expect(() => autopilot({ hedge: false, concurrency: false })).not.toThrow();
  });
});

describe('autopilot: safe by construction', () => {
  // A seeded generator: every run sees the same cases.
  function random(seed: number): () => number {
    let state = seed;
    return () => {
      state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
      return state / 2 ** 31;
    };
  }

  it('never retries a timeout of a tool that is not idempotent, whatever the options', async () => {
    const next = random(34);
    for (let run = 0; run < 25; run++) {
      const mode = next() < 0.5 ? 'enforce' : 'shadow';
      const budget = next() < 0.3 ? false : { ratio: next() * 2, minPerSecond: next() * 20 };
      const minSamples = 1 + Math.floor(next() * 10);
      const { call, warmUp } = setup({
        pilot: {
          mode,
          timeout: {
            quantile: 0.5 + next() * 0.49,
            factor: 1 + next() * 3,
            minMs: 10 + next() * 100,
            minSamples,
          },
          retryBudget: budget,
        },
        retry: { maxAttempts: 1 + Math.floor(next() * 5) },
        toolTimeoutMs: 500 + Math.floor(next() * 1_000),
      });
      await warmUp(minSamples + Math.floor(next() * 5), Math.floor(next() * 200));
      const outcome = await call(100_000);
      expect(outcome).toMatchObject({ ok: false, kind: 'timeout', attempts: 1 });
    }
  });
});

describe('autopilot: outcome.policy', () => {
  it('says what each call ran under: a retried call its own, the quiet ones the same for a tool', async () => {
    let failNext = false;
    const { call, warmUp } = setup({
      pilot: { timeout: { minSamples: 5 } },
      retry: { maxAttempts: 2 },
      failing: () => {
        const failing = failNext;
        failNext = false;
        return failing;
      },
    });
    await warmUp(5, 100);
    const quiet = [await call(100), await call(100)];
    for (const outcome of quiet) {
      expect(outcome).toMatchObject({
        ok: true,
        policy: {
          mode: 'enforce',
          source: expect.stringMatching(/^p99\.9 × 1\.5 of [56] calls$/),
          retried: false,
          hedged: false,
          cutOff: false,
          budget: 'ok',
        },
      });
    }
    failNext = true;
    const retried = await call(100);
    expect(retried).toMatchObject({ ok: true, policy: { retried: true, cutOff: false, budget: 'ok' } });
    expect(retried.ok && retried.policy?.timeoutMs).toBeGreaterThanOrEqual(150);
    // The quiet ones said nothing of the retried call.
    expect(quiet[1]).toMatchObject({ policy: { retried: false } });
  });
});

describe('autopilot: in the preset', () => {
  it("takes the timeout's place, inside retry, after the rate limits", () => {
    const registry = new ToolRegistry();
    const names = defaultStack({
      registry,
      autopilot: autopilot(),
      rateLimit: { key: () => 'k', rate: 5, intervalMs: 1_000 },
    }).map((layer) => layer.name);
    expect(names.slice(-3)).toEqual(['retry', 'rateLimit', 'autopilot']);
    expect(names).not.toContain('timeout');
  });

  // A tool with no timeoutMs of its own, behind `defaultStack({ timeout: { defaultMs } })`.
  function untimed(pilotOptions: AutopilotOptions, defaultMs: number) {
    const registry = new ToolRegistry().register({
      name: 'search.web',
      inputSchema: z.object({ ms: z.number() }),
      handler: async ({ ms }, { signal }) => {
        await new Promise((resolve) => setTimeout(resolve, ms));
        signal.throwIfAborted();
        return 'hits';
      },
    });
    const dispatcher = createDispatcher(
      defaultStack({
        registry,
        autopilot: autopilot(pilotOptions),
        retry: { maxAttempts: 1 },
        timeout: { defaultMs },
      }),
    );
    return async (ms: number): Promise<Outcome> => {
      const pending = dispatcher.dispatch('search.web', { ms });
      await vi.advanceTimersByTimeAsync(ms + 1_000);
      return await pending;
    };
  }

  it("gives each attempt the timeout layer's static deadline before minSamples", async () => {
    const call = untimed({ timeout: quick }, 500);
    expect(await call(400)).toMatchObject({ ok: true, policy: { timeoutMs: 500 } });
    const slow = await call(800);
    expect(slow).toMatchObject({ ok: false, kind: 'timeout', policy: { timeoutMs: 500, cutOff: false } });
    expect(slow.ok || slow.message).toMatch(/timed out after 500 ms/);
  });

  it('keeps the static deadline with the timeout knob off, and in shadow mode', async () => {
    for (const options of [{ timeout: false as const }, { mode: 'shadow' as const, timeout: quick }]) {
      const call = untimed(options, 300);
      for (let i = 0; i < 30; i++) expect((await call(10)).ok).toBe(true);
      expect(await call(600)).toMatchObject({ ok: false, kind: 'timeout' });
    }
  });

  it('never tunes a timeout above the default of a tool without its own', async () => {
    const call = untimed({ timeout: quick }, 300);
    for (let i = 0; i < 30; i++) expect((await call(200)).ok).toBe(true);
    const capped = await call(250);
    expect(capped).toMatchObject({ ok: true, policy: { timeoutMs: 300 } });
    expect(capped.ok && capped.policy?.source).toMatch(/^static: the cap is below p99 × 2/);
    expect(await call(350)).toMatchObject({ ok: false, kind: 'timeout', policy: { timeoutMs: 300 } });
  });
});
