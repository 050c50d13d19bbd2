// redisRateStore and redisWindowStore on a redis-server of the test's own: two "processes"
// (clients) share each bucket and ledger; resends, a 429's debit and a restart.

import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createDispatcher,
  defaultStack,
  errorMapping,
  rateLimit,
  toolLookup,
  ToolRegistry,
  TransientError,
  windowedBudget,
  type DispatchEvent,
  type Middleware,
} from '../../index.js';
import { redisRateStore, redisWindowStore } from '../../integrations/redis/index.js';
import { redisSuitesEnabled } from '../helpers/redis-server.js';
import { redisSuite } from '../helpers/redis-suite.js';
import { reconnected, type Connected } from '../integrations/redis/clients.js';
import { countingClient } from '../integrations/redis/counting.js';

const enabled = redisSuitesEnabled('rate limits on Redis');
const slow = { rate: 1, intervalMs: 10_000, burst: 2 };

(enabled ? describe : describe.skip)('rate limits and windowed budgets on Redis', () => {
  const redis = redisSuite();
  let a: Connected;
  let b: Connected;
  beforeAll(async () => {
    [a, b] = await Promise.all([redis.node(), redis.node()]);
  });

  it('shares a bucket: burst at once, then waits in order, then refusal past maxWaitMs', async () => {
    const prefix = randomUUID();
    const [one, two] = [redisRateStore(a.store, { prefix }), redisRateStore(b.store, { prefix })];
    const wait = { maxWaitMs: 15_000 };
    // Each grant says how full it leaves the bucket: half, then empty (the console shows it).
    const first = await one.acquire('k', 1, slow, { ...wait, id: 'a1' });
    expect(first).toMatchObject({ granted: true, waitMs: 0 });
    expect(first.granted && first.fill).toBeCloseTo(0.5, 2);
    const second = await two.acquire('k', 1, slow, { ...wait, id: 'b1' });
    expect(second).toMatchObject({ granted: true, waitMs: 0 });
    expect(second.granted && second.fill).toBeCloseTo(0, 2);
    const third = await one.acquire('k', 1, slow, { ...wait, id: 'a2' });
    expect(third.granted && third.waitMs > 9_000 && third.waitMs <= 10_000).toBe(true);
    expect(third).toMatchObject({ fill: 0 });
    const refused = await two.acquire('k', 1, slow, { ...wait, id: 'b2' });
    expect(refused.granted).toBe(false);
    expect(!refused.granted && refused.retryAfterMs > 15_000).toBe(true);
    // Another key is untouched.
    expect(await two.acquire('other', 1, slow, { ...wait, id: 'b3' })).toMatchObject({ waitMs: 0 });
  });

  it('is resend-safe: the same attempt id reserves once and cancels once', async () => {
    const prefix = randomUUID();
    const store = redisRateStore(a.store, { prefix });
    const wait = { maxWaitMs: 60_000 };
    await store.acquire('k', 1, slow, { ...wait, id: 'x' });
    await store.acquire('k', 1, slow, { ...wait, id: 'x' });
    expect(await store.acquire('k', 1, slow, { ...wait, id: 'y' })).toMatchObject({ waitMs: 0 });
    const waiting = await store.acquire('k', 1, slow, { ...wait, id: 'z' });
    expect(waiting.granted && waiting.waitMs > 9_000).toBe(true);
    await store.cancel('k', 1, slow, 'z');
    await store.cancel('k', 1, slow, 'z');
    const again = await store.acquire('k', 1, slow, { ...wait, id: 'w' });
    expect(again.granted && again.waitMs > 9_000 && again.waitMs <= 10_000).toBe(true);
  });

  it("empties the bucket fleet-wide on a debit, once per attempt, moving waiters' marks", async () => {
    const prefix = randomUUID();
    const [one, two] = [redisRateStore(a.store, { prefix }), redisRateStore(b.store, { prefix })];
    const fast = { rate: 10, intervalMs: 1_000, burst: 10 };
    const first = await one.acquire('k', 1, fast, { maxWaitMs: 60_000, id: 'a1' });
    await one.debit('k', 5_000, fast, 'a1');
    await one.debit('k', 5_000, fast, 'a1');
    const sibling = await two.acquire('k', 1, fast, { maxWaitMs: 60_000, id: 'b1' });
    expect(sibling.granted && sibling.waitMs > 4_900 && sibling.waitMs <= 5_200).toBe(true);
    const moved = await two.delayedSince('k', first.granted ? first.mark : 0);
    expect(moved).toBeGreaterThanOrEqual(5_000);
    expect(moved).toBeLessThan(10_000);
  });

  it('starts a bucket in debt after Redis restarted empty, never with a fresh burst', async () => {
    const prefix = randomUUID();
    const store = redisRateStore(a.store, { prefix });
    const wait = { maxWaitMs: 60_000 };
    await store.acquire('k', 1, slow, { ...wait, id: 'before' });
    await redis.server.restart();
    let after: Awaited<ReturnType<typeof store.acquire>> | undefined;
    for (let i = 0; i < 50 && after === undefined; i++) {
      after = await Promise.resolve(store.acquire('k', 1, slow, { ...wait, id: `after${i}` })).catch(
        async () => {
          await new Promise((resolve) => setTimeout(resolve, 50));
          return undefined;
        },
      );
    }
    expect(after?.granted === true ? after.waitMs : 60_001).toBeGreaterThan(20_000);
  });

  it('drains the reset debt between refused calls (a refusal once recreated the debt each call)', async () => {
    const prefix = randomUUID();
    const store = redisRateStore(a.store, { prefix });
    const wait = { maxWaitMs: 1_000 };
    await store.acquire('k', 1, slow, { ...wait, id: 'before' });
    await redis.server.restart();
    let first: Awaited<ReturnType<typeof store.acquire>> | undefined;
    for (let i = 0; i < 50 && first === undefined; i++) {
      first = await Promise.resolve(store.acquire('k', 1, slow, { ...wait, id: `first${i}` })).catch(
        async () => {
          await new Promise((resolve) => setTimeout(resolve, 50));
          return undefined;
        },
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    const second = await store.acquire('k', 1, slow, { ...wait, id: 'second' });
    expect(first?.granted).toBe(false);
    expect(second.granted).toBe(false);
    const [before, after] = [
      first?.granted === false ? first.retryAfterMs : 0,
      second.granted ? 0 : second.retryAfterMs,
    ];
    // Redis's own clock moved at least 300 ms between the two refusals; so did the debt.
    expect(after).toBeLessThanOrEqual(before - 250);
  });

  it('keeps a windowed ledger: refusal with the time left, settle, resends once', async () => {
    const prefix = randomUUID();
    const [one, two] = [redisWindowStore(a.store, { prefix }), redisWindowStore(b.store, { prefix })];
    const options = { limit: 10, windowMs: 3_600_000 };
    const first = await one.reserve('acme', 6, { ...options, id: 'a1' });
    expect(first.ok).toBe(true);
    expect(await one.reserve('acme', 6, { ...options, id: 'a1' })).toEqual(first);
    const refused = await two.reserve('acme', 6, { ...options, id: 'b1' });
    expect(refused.ok).toBe(false);
    expect(!refused.ok && refused.retryAfterMs > 0 && refused.retryAfterMs <= 3_600_000).toBe(true);
    if (!first.ok) throw new Error('unreachable');
    await one.settle('acme', first.window, -4, { windowMs: options.windowMs, id: 'a1' });
    await one.settle('acme', first.window, -4, { windowMs: options.windowMs, id: 'a1' });
    // 2 used: 8 fit, 9 do not.
    expect(await two.reserve('acme', 9, { ...options, id: 'b2' })).toMatchObject({ ok: false });
    expect(await two.reserve('acme', 8, { ...options, id: 'b3' })).toMatchObject({ ok: true });
    expect(await two.reserve('globex', 10, { ...options, id: 'b4' })).toMatchObject({ ok: true });
  });

  it('fails budgets closed for a window after Redis restarted empty', async () => {
    const prefix = randomUUID();
    const store = redisWindowStore(a.store, { prefix });
    const options = { limit: 10, windowMs: 60_000 };
    await store.reserve('acme', 1, { ...options, id: 'before' });
    await redis.server.restart();
    let outcome: unknown;
    for (let i = 0; i < 50; i++) {
      outcome = await Promise.resolve(store.reserve('acme', 1, { ...options, id: `after${i}` })).catch(
        (error: unknown) => error,
      );
      if (
        (outcome as { kind?: string }).kind !== 'store_unavailable' ||
        !/restarted/.test(String((outcome as Error).message))
      ) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      } else break;
    }
    expect(outcome).toMatchObject({ kind: 'store_unavailable', message: expect.stringMatching(/restarted/) });
  });

  // Three dispatchers on one prefix: rateLimit failing closed, rateLimit failing open, a budget.
  function limitedDispatchers(prefix: string) {
    const runs = { count: 0 };
    const registry = new ToolRegistry().register({
      name: 'search.web',
      inputSchema: z.object({}),
      handler: () => {
        runs.count += 1;
        return 'ok';
      },
    });
    const limited = (layer: Middleware) => createDispatcher([errorMapping(), toolLookup(registry), layer]);
    const options = { prefix, storeTimeoutMs: 300 };
    return {
      runs,
      closed: limited(rateLimit({ rate: 10, maxWaitMs: 1_000, store: redisRateStore(a.store, options) })),
      open: limited(rateLimit({ rate: 10, onStoreError: 'open', store: redisRateStore(b.store, options) })),
      budget: limited(
        windowedBudget({ limit: 100, windowMs: 60_000, store: redisWindowStore(a.store, options) }),
      ),
    };
  }

  it("fails store_unavailable with Redis down, runs the call with onStoreError: 'open', and fails a budget closed", async () => {
    const { runs, closed, open, budget } = limitedDispatchers(randomUUID());
    for (const dispatcher of [closed, open, budget])
      expect(await dispatcher.dispatch('search.web', {})).toMatchObject({ ok: true });
    await redis.server.kill();
    try {
      expect(await closed.dispatch('search.web', {})).toMatchObject({
        kind: 'store_unavailable',
        attempts: 0,
      });
      expect(await budget.dispatch('search.web', {})).toMatchObject({
        kind: 'store_unavailable',
        attempts: 0,
      });
      expect(runs.count).toBe(3);
      expect(await open.dispatch('search.web', {})).toMatchObject({ ok: true, result: 'ok' });
      expect(runs.count).toBe(4);
    } finally {
      await redis.server.restart();
      await reconnected(a, b);
    }
  });

  // Regression: a store re-created the epoch with the id it had before, so the process's other store
  // (the budget) took the new Redis for the old one and handed out a fresh window.
  it('refuses a call rather than give a fresh burst after Redis restarted empty, and fails a budgeted call closed', async () => {
    const { runs, closed, budget } = limitedDispatchers(randomUUID());
    expect(await closed.dispatch('search.web', {})).toMatchObject({ ok: true });
    expect(await budget.dispatch('search.web', {})).toMatchObject({ ok: true });
    await redis.server.restart();
    await reconnected(a, b);
    const limited = await closed.dispatch('search.web', {});
    // The bucket starts in debt: more than maxWaitMs (1 s) away, so refused at once.
    expect(limited).toMatchObject({ ok: false, kind: 'rate_limited', attempts: 0 });
    expect((limited as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(1_000);
    expect(await budget.dispatch('search.web', {})).toMatchObject({
      ok: false,
      kind: 'store_unavailable',
      message: expect.stringMatching(/restarted/),
    });
    expect(runs.count).toBe(2);
  });

  it("slows a sibling process's calls after one process's 429", async () => {
    const prefix = randomUUID();
    let calls = 0;
    const worker = (connected: Connected, events: DispatchEvent[]) => {
      const registry = new ToolRegistry().register({
        name: 'search.web',
        inputSchema: z.object({}),
        handler: () => {
          calls += 1;
          if (calls === 1) throw new TransientError('429', { retryAfterMs: 3_000, rateLimited: true });
          return 'ok';
        },
      });
      return createDispatcher(
        defaultStack({
          registry,
          retry: { maxAttempts: 1 },
          rateLimit: {
            key: () => 'search',
            rate: 10,
            store: redisRateStore(connected.store, { prefix }),
            maxWaitMs: 100,
          },
        }),
        { onEvent: (event) => events.push(event) },
      );
    };
    const aEvents: DispatchEvent[] = [];
    const bEvents: DispatchEvent[] = [];
    expect(await worker(a, aEvents).dispatch('search.web', {})).toMatchObject({ kind: 'transient' });
    expect(aEvents.map((event) => event.type)).toContain('rate_limit.debit');
    const refused = await worker(b, bEvents).dispatch('search.web', {});
    expect(refused).toMatchObject({ kind: 'rate_limited', attempts: 0 });
    expect((refused as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(2_500);
    expect(calls).toBe(1);
  });

  it('costs one round trip to acquire, one to reserve, and a settle only when the cost differs', async () => {
    const prefix = randomUUID();
    const counting = countingClient(a.store);
    const registry = new ToolRegistry().register({
      name: 'llm.summarize',
      inputSchema: z.object({ used: z.number() }),
      cost: 4,
      settle: (result: { used: number }) => result.used,
      handler: ({ used }) => ({ used }),
    });
    const dispatcher = createDispatcher(
      defaultStack({
        registry,
        rateLimit: { rate: 100, store: redisRateStore(counting, { prefix }) },
        windowedBudget: { limit: 1_000, windowMs: 60_000, store: redisWindowStore(counting, { prefix }) },
      }),
    );
    expect(await dispatcher.dispatch('llm.summarize', { used: 4 })).toMatchObject({ ok: true });
    expect(Object.fromEntries(counting.counts)).toEqual({ 'rate acquire': 1, 'window reserve': 1 });
    counting.reset();
    expect(await dispatcher.dispatch('llm.summarize', { used: 2 })).toMatchObject({ ok: true });
    expect(Object.fromEntries(counting.counts)).toEqual({
      'rate acquire': 1,
      'window reserve': 1,
      'window settle': 1,
    });
  });
});
