import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createBudget,
  createDispatcher,
  defaultStack,
  ToolRegistry,
  TransientError,
  type DispatchEvent,
} from '../../index.js';
import { memoryRateStore, memoryWindowStore } from '../../middleware/index.js';

beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});
afterEach(() => {
  vi.useRealTimers();
});

function registryOf(fail: () => boolean = () => false) {
  return new ToolRegistry().register({
    name: 'llm.summarize',
    inputSchema: z.object({ text: z.string() }),
    cost: ({ text }) => text.length,
    settle: (result: { used: number }) => result.used,
    handler: ({ text }) => {
      if (fail()) throw new TransientError('429', { retryAfterMs: 500, rateLimited: true });
      return { used: Math.ceil(text.length / 2) };
    },
  });
}

describe('defaultStack({ rateLimit, windowedBudget })', () => {
  it('reserves and settles every windowed budget', async () => {
    const a = memoryWindowStore() as ReturnType<typeof memoryWindowStore> & { used(key: string): number };
    const b = memoryWindowStore() as typeof a;
    const dispatcher = createDispatcher(
      defaultStack({
        registry: registryOf(),
        windowedBudget: [
          { key: (ctx) => ctx.options.tenant, limit: 100, windowMs: 60_000, store: a },
          { limit: 10, windowMs: 60_000, store: b },
        ],
      }),
    );
    expect(
      await dispatcher.dispatch('llm.summarize', { text: 'abcdefgh' }, { tenant: 'acme' }),
    ).toMatchObject({
      ok: true,
    });
    expect(a.used('acme')).toBe(4);
    expect(b.used('all')).toBe(4);
    // 4 used + 8 reserved > 10: refused by the second, and the first gives its reservation back.
    expect(
      await dispatcher.dispatch('llm.summarize', { text: 'abcdefgh' }, { tenant: 'acme' }),
    ).toMatchObject({
      kind: 'budget_exceeded',
      attempts: 0,
    });
    expect(a.used('acme')).toBe(4);
  });

  it("takes neither the call's budget nor a windowed budget for an attempt refused rate_limited", async () => {
    const ledger = memoryWindowStore() as ReturnType<typeof memoryWindowStore> & {
      used(key: string): number;
    };
    const dispatcher = createDispatcher(
      defaultStack({
        registry: registryOf(),
        rateLimit: { rate: 1, maxWaitMs: 0 },
        windowedBudget: { key: (ctx) => ctx.options.tenant, limit: 100, windowMs: 60_000, store: ledger },
      }),
    );
    const budget = createBudget(5);
    const call = () => dispatcher.dispatch('llm.summarize', { text: 'abcd' }, { tenant: 'acme', budget });
    expect(await call()).toMatchObject({ ok: true });
    expect([budget.remaining, ledger.used('acme')]).toEqual([1, 2]);
    expect(await call()).toMatchObject({ ok: false, kind: 'rate_limited', attempts: 0, retryAfterMs: 1_000 });
    expect([budget.remaining, ledger.used('acme')]).toEqual([1, 2]);
  });

  it('applies every rate limit, each per its key, and waits inside the attempt', async () => {
    const events: DispatchEvent[] = [];
    const dispatcher = createDispatcher(
      defaultStack({
        registry: registryOf(),
        rateLimit: [
          { rate: 10, store: memoryRateStore() },
          { key: () => 'global', rate: 1, intervalMs: 1_000 },
        ],
      }),
      { onEvent: (event) => events.push(event) },
    );
    const calls = [0, 1].map(() => dispatcher.dispatch('llm.summarize', { text: 'ab' }));
    await vi.advanceTimersByTimeAsync(1_000);
    expect((await Promise.all(calls)).every((outcome) => outcome.ok)).toBe(true);
    expect(events.filter((event) => event.type === 'rate_limit.wait')).toMatchObject([
      { key: 'global', waitMs: 1_000 },
    ]);
  });

  it('debits on a 429 of the first attempt and retries after it', async () => {
    let calls = 0;
    const events: DispatchEvent[] = [];
    const dispatcher = createDispatcher(
      defaultStack({
        registry: registryOf(() => ++calls === 1),
        retry: { random: () => 0 },
        rateLimit: { rate: 5 },
      }),
      { onEvent: (event) => events.push(event) },
    );
    const running = dispatcher.dispatch('llm.summarize', { text: 'ab' });
    await vi.advanceTimersByTimeAsync(2_000);
    expect(await running).toMatchObject({ ok: true, attempts: 2 });
    expect(events.map((event) => event.type)).toContain('rate_limit.debit');
  });
});
