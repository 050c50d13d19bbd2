import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createBudget,
  createDispatcher,
  errorMapping,
  retry,
  schemaValidation,
  ToolRegistry,
  toolLookup,
  TransientError,
  windowedBudget,
  type DispatchEvent,
  type WindowedBudgetOptions,
} from '../../index.js';
import { memoryWindowStore } from '../../middleware/index.js';

beforeEach(() => {
  vi.useFakeTimers({ now: 10_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

function metered(options: Partial<WindowedBudgetOptions> = {}) {
  let runs = 0;
  const events: DispatchEvent[] = [];
  const store = memoryWindowStore() as ReturnType<typeof memoryWindowStore> & { used(key: string): number };
  const registry = new ToolRegistry()
    .register({
      name: 'llm.summarize',
      inputSchema: z.object({ text: z.string(), used: z.number() }),
      cost: ({ text }) => 1 + Math.ceil(text.length / 4),
      settle: (result: { used: number }) => result.used,
      handler: ({ used }) => {
        runs += 1;
        return { used };
      },
    })
    .register({
      name: 'search.web',
      inputSchema: z.object({ fail: z.boolean().optional() }),
      cost: 5,
      handler: ({ fail }) => {
        runs += 1;
        if (fail === true) throw new TransientError('reset');
        return 'ok';
      },
    });
  const dispatcher = createDispatcher(
    [
      errorMapping(),
      toolLookup(registry),
      schemaValidation(),
      retry({ maxAttempts: 2, baseDelayMs: 1, random: () => 0 }),
      windowedBudget({ key: (ctx) => ctx.options.tenant, limit: 20, windowMs: 60_000, store, ...options }),
    ],
    { onEvent: (event) => events.push(event) },
  );
  return { dispatcher, store, events, runs: () => runs };
}

describe('windowedBudget', () => {
  it("charges each attempt the tool's cost and refuses before the handler when it does not fit", async () => {
    const { dispatcher, store, runs } = metered();
    for (let i = 0; i < 4; i++) {
      expect(await dispatcher.dispatch('search.web', {}, { tenant: 'acme' })).toMatchObject({ ok: true });
    }
    expect(store.used('acme')).toBe(20);
    const refused = await dispatcher.dispatch('search.web', {}, { tenant: 'acme' });
    expect(refused).toMatchObject({ ok: false, kind: 'budget_exceeded', attempts: 0, retryAfterMs: 50_000 });
    expect(runs()).toBe(4);
    // Another key is untouched, and a call without a tenant is not counted.
    expect(await dispatcher.dispatch('search.web', {}, { tenant: 'globex' })).toMatchObject({ ok: true });
    expect(await dispatcher.dispatch('search.web', {})).toMatchObject({ ok: true });
    expect(store.used('globex')).toBe(5);
  });

  it('starts a new window at the next multiple of windowMs', async () => {
    const { dispatcher } = metered();
    for (let i = 0; i < 4; i++) await dispatcher.dispatch('search.web', {}, { tenant: 'acme' });
    vi.setSystemTime(59_999);
    expect(await dispatcher.dispatch('search.web', {}, { tenant: 'acme' })).toMatchObject({
      kind: 'budget_exceeded',
      retryAfterMs: 1,
    });
    vi.setSystemTime(60_000);
    expect(await dispatcher.dispatch('search.web', {}, { tenant: 'acme' })).toMatchObject({ ok: true });
  });

  it('gives back the unused part after settle, and charges and emits an overrun', async () => {
    const { dispatcher, store, events } = metered();
    // cost 1 + ceil(8 / 4) = 3 reserved; 1 used.
    await dispatcher.dispatch('llm.summarize', { text: 'abcdefgh', used: 1 }, { tenant: 'acme' });
    expect(store.used('acme')).toBe(1);
    await dispatcher.dispatch('llm.summarize', { text: 'abcd', used: 7 }, { tenant: 'acme' });
    expect(store.used('acme')).toBe(8);
    expect(events.filter((event) => event.type === 'budget.overrun')).toMatchObject([
      { key: 'acme', units: 5 },
    ]);
  });

  it('keeps the reservation of a failed attempt', async () => {
    const { dispatcher, store, runs } = metered();
    const running = dispatcher.dispatch('search.web', { fail: true }, { tenant: 'acme' });
    await vi.advanceTimersByTimeAsync(100);
    const outcome = await running;
    expect(outcome).toMatchObject({ kind: 'transient', attempts: 2 });
    expect(runs()).toBe(2);
    expect(store.used('acme')).toBe(10);
  });

  it('gives back what an outer budget reserved for an attempt an inner one refused', async () => {
    const inner = memoryWindowStore() as ReturnType<typeof memoryWindowStore> & { used(key: string): number };
    const registry = new ToolRegistry().register({
      name: 'search.web',
      inputSchema: z.object({}),
      cost: 5,
      handler: () => 'ok',
    });
    const outer = memoryWindowStore() as typeof inner;
    const both = createDispatcher([
      errorMapping(),
      toolLookup(registry),
      windowedBudget({ limit: 100, windowMs: 60_000, store: outer }),
      windowedBudget({ limit: 4, windowMs: 60_000, store: inner }),
    ]);
    expect(await both.dispatch('search.web', {})).toMatchObject({ kind: 'budget_exceeded' });
    expect(outer.used('all')).toBe(0);
  });

  it('takes the tool cost from the call budget too', async () => {
    const { dispatcher } = metered({ limit: Infinity });
    const budget = createBudget(12);
    expect(await dispatcher.dispatch('search.web', {}, { budget })).toMatchObject({ ok: true });
    expect(budget.remaining).toBe(7);
    await dispatcher.dispatch('search.web', {}, { budget });
    expect(await dispatcher.dispatch('search.web', {}, { budget })).toMatchObject({
      kind: 'budget_exceeded',
    });
  });
});

describe('costs and tenants: bad input', () => {
  it.each([
    [{ limit: -1 }, /limit/],
    [{ windowMs: 0 }, /windowMs/],
    [{ key: 'tenant' }, /key/],
    [{ store: {} }, /store/],
  ])('rejects %o with a TypeError naming the option', (options, name) => {
    const build = () => windowedBudget({ limit: 1, windowMs: 1_000, ...options } as WindowedBudgetOptions);
    expect(build).toThrow(TypeError);
    expect(build).toThrow(name);
  });

  it('rejects a tool with a bad cost or settle, naming it', () => {
    const base = { name: 'a.b', inputSchema: z.object({}), handler: () => 1 };
    expect(() => new ToolRegistry().register({ ...base, cost: -1 })).toThrow(/cost/);
    expect(() => new ToolRegistry().register({ ...base, cost: 'x' as never })).toThrow(/cost/);
    expect(() => new ToolRegistry().register({ ...base, settle: 1 as never })).toThrow(/settle/);
  });

  it('fails a call internal naming cost when the cost function answers junk', async () => {
    const registry = new ToolRegistry().register({
      name: 'a.b',
      inputSchema: z.object({}),
      cost: () => Number.NaN,
      handler: () => 1,
    });
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry)]);
    expect(await dispatcher.dispatch('a.b', {}, { budget: 3 })).toMatchObject({
      kind: 'internal',
      message: expect.stringMatching(/cost/),
    });
  });

  it.each([[''], [42]])('fails a tenant of %o with schema', async (tenant) => {
    const { dispatcher } = metered();
    expect(await dispatcher.dispatch('search.web', {}, { tenant: tenant as string })).toMatchObject({
      kind: 'schema',
      message: expect.stringMatching(/tenant/),
    });
  });
});
