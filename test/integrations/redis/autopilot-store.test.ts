// redisAutopilotStore on a redis-server of the test's own: two "processes" (clients) share one
// retry budget; a first attempt costs no round trip and a retry one; tools' latency windows merge
// across them; and with Redis gone, calls run on the static policy and still succeed.

import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  autopilot,
  createDispatcher,
  type DispatchEvent,
  defaultStack,
  retryBudget,
  ToolRegistry,
  TransientError,
} from '../../../index.js';
import { redisAutopilotStore } from '../../../integrations/redis/index.js';
import { redisSuitesEnabled } from '../../helpers/redis-server.js';
import { redisSuite } from '../../helpers/redis-suite.js';
import type { Connected } from './clients.js';
import { countingClient } from './counting.js';

const enabled = redisSuitesEnabled('autopilot store on Redis');
const window = { windowMs: 60_000, subWindows: 10 };

/** Withdraws until refused; answers how many were taken. */
async function drain(budget: ReturnType<typeof retryBudget>): Promise<number> {
  let taken = 0;
  while ((await budget.tryWithdraw()) === true) taken++;
  return taken;
}

(enabled ? describe : describe.skip)('redisAutopilotStore', () => {
  const redis = redisSuite();
  let a: Connected;
  let b: Connected;
  beforeAll(async () => {
    [a, b] = await Promise.all([redis.node({ subscriber: false }), redis.io({ subscriber: false })]);
  });

  it('shares one budget between two stores on one server', async () => {
    const prefix = randomUUID();
    const one = redisAutopilotStore({ client: a.store, prefix });
    const two = redisAutopilotStore({ client: b.store, prefix });
    const shape = { ratio: 1, minPerSecond: 1, throttle: false } as const;
    const first = retryBudget({ ...shape, store: one });
    const second = retryBudget({ ...shape, store: two });
    // The reserve (1 a second over 10 s) is the fleet's, not each process's.
    expect(await drain(first)).toBe(10);
    expect(await second.tryWithdraw()).toBe(false);
    // Deposits made in one process are there for the other once sent.
    for (let i = 0; i < 3; i++) second.deposit();
    expect(await first.balance()).toBe(0);
    await two.flush();
    expect(await first.balance()).toBe(3);
    expect(await drain(first)).toBe(3);
    // Another key is another budget.
    expect(await retryBudget({ ...shape, store: two, key: 'other' }).balance()).toBe(10);
  });

  it('costs no round trip on a first attempt, and one on a retry that carries the deposits held', async () => {
    const prefix = randomUUID();
    const client = countingClient(a.store);
    const store = redisAutopilotStore({ client, prefix, flushEveryMs: 60_000 });
    const budget = retryBudget({ ratio: 0.5, minPerSecond: 0, throttle: false, store });
    for (let i = 0; i < 4; i++) budget.deposit();
    expect(client.total()).toBe(0);
    // Two tokens, held here until now: the withdrawal sends them and takes one.
    expect(await budget.tryWithdraw()).toBe(true);
    expect(await budget.tryWithdraw()).toBe(true);
    expect(await budget.tryWithdraw()).toBe(false);
    expect(client.counts).toEqual(new Map([['retry budget withdraw', 3]]));
  });

  it('sends deposits on its own within flushEveryMs', async () => {
    const prefix = randomUUID();
    const client = countingClient(a.store);
    const store = redisAutopilotStore({ client, prefix, flushEveryMs: 20 });
    const reader = retryBudget({
      ratio: 1,
      minPerSecond: 0,
      throttle: false,
      store: redisAutopilotStore({ client: b.store, prefix }),
    });
    const budget = retryBudget({ ratio: 1, minPerSecond: 0, throttle: false, store });
    budget.deposit();
    budget.deposit();
    await expect.poll(() => reader.balance(), { interval: 10, timeout: 2_000 }).toBe(2);
    expect(client.counts.get('retry budget deposit')).toBe(1);
  });

  it('takes once for a resent withdrawal', async () => {
    const prefix = randomUUID();
    const store = redisAutopilotStore({ client: a.store, prefix });
    const shape = { ttlMs: 10_000, reserve: 2_000_000 };
    expect(await store.withdraw('k', 1_000_000, { ...shape, id: 'x' })).toBe(true);
    expect(await store.withdraw('k', 1_000_000, { ...shape, id: 'x' })).toBe(true);
    expect(await store.balance('k', shape)).toBe(1_000_000);
  });

  it('merges the latency windows of two processes, at most one exchange per tool per interval', async () => {
    const prefix = randomUUID();
    const client = countingClient(a.store);
    const one = redisAutopilotStore({ client, prefix, exchangeEveryMs: 60_000 });
    const two = redisAutopilotStore({ client: b.store, prefix });
    const ra = 0.01;
    await one.exchangeSketch(
      'search',
      { relativeAccuracy: ra, offset: 100, counts: [1, 0, 2], zeros: 1 },
      window,
    );
    const merged = await two.exchangeSketch(
      'search',
      { relativeAccuracy: ra, offset: 101, counts: [4, 1], zeros: 0 },
      window,
    );
    expect(merged).toEqual({ relativeAccuracy: ra, offset: 100, counts: [1, 4, 3], zeros: 1 });
    // Within the interval: the last answer, no round trip; the counts wait for the next exchange.
    const early = await one.exchangeSketch(
      'search',
      { relativeAccuracy: ra, offset: 100, counts: [5], zeros: 0 },
      window,
    );
    expect(early).toEqual({ relativeAccuracy: ra, offset: 100, counts: [1, 0, 2], zeros: 1 });
    expect(client.total()).toBe(1);
    // Another tool is another window.
    expect(
      await two.exchangeSketch('other', { relativeAccuracy: ra, offset: 7, counts: [1], zeros: 0 }, window),
    ).toEqual({ relativeAccuracy: ra, offset: 7, counts: [1], zeros: 0 });
  });

  it('drops counts older than the window (sub-windows on the server clock)', async () => {
    const prefix = randomUUID();
    const store = redisAutopilotStore({ client: a.store, prefix, exchangeEveryMs: 0 });
    const short = { windowMs: 200, subWindows: 2 };
    const data = { relativeAccuracy: 0.01, offset: 50, counts: [3], zeros: 0 };
    expect((await store.exchangeSketch('t', data, short)).counts).toEqual([3]);
    await new Promise((resolve) => setTimeout(resolve, 450));
    const empty = { relativeAccuracy: 0.01, offset: 0, counts: [], zeros: 0 };
    expect(await store.exchangeSketch('t', empty, short)).toEqual(empty);
  });

  it("lets every autopilot of the fleet tune on the fleet's calls", async () => {
    const prefix = randomUUID();
    const fleet = [a, b].map((connected) => {
      const registry = new ToolRegistry().register({
        name: 'search.web',
        inputSchema: z.object({}),
        handler: () => 'hits',
      });
      const pilot = autopilot({ store: redisAutopilotStore({ client: connected.store, prefix }) });
      return { pilot, dispatcher: createDispatcher(defaultStack({ registry, autopilot: pilot })) };
    });
    const [one, two] = fleet as [(typeof fleet)[0], (typeof fleet)[0]];
    // The first call of each sends at once; calls within the next second wait for the one after.
    for (let i = 0; i < 5; i++) await one.dispatcher.dispatch('search.web', {});
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await one.dispatcher.dispatch('search.web', {});
    await expect.poll(() => one.pilot.snapshot('search.web').samples, { timeout: 2_000 }).toBe(6);
    // A process with one call of its own sees the fleet's seven.
    await two.dispatcher.dispatch('search.web', {});
    await expect.poll(() => two.pilot.snapshot('search.web').samples, { timeout: 2_000 }).toBe(7);
  });

  it('rejects bad options with a TypeError naming the option', () => {
    expect(() => redisAutopilotStore({ client: a.store, prefx: 'x' } as never)).toThrow(
      /unknown option "prefx"; did you mean "prefix"\?/,
    );
    expect(() => redisAutopilotStore({} as never)).toThrow(/client must be a StoreClient/);
    expect(() => redisAutopilotStore(undefined as never)).toThrow(/options must be an object/);
    expect(() => redisAutopilotStore({ client: a.store, prefix: '' })).toThrow(
      /prefix must be a non-empty string/,
    );
    expect(() => redisAutopilotStore({ client: a.store, flushEveryMs: 0 })).toThrow(
      /flushEveryMs must be an integer >= 1/,
    );
    expect(() => redisAutopilotStore({ client: a.store, storeTimeoutMs: 1.5 })).toThrow(
      /storeTimeoutMs must be/,
    );
    expect(() => redisAutopilotStore({ client: a.store, exchangeEveryMs: -1 })).toThrow(
      /exchangeEveryMs must be/,
    );
  });

  // Last: it kills the server (and starts it again for the suite's clean-up).
  it('with Redis gone, runs each call on the static policy, says so, and the call succeeds', async () => {
    let attempts = 0;
    const registry = new ToolRegistry().register({
      name: 'flaky.op',
      inputSchema: z.object({}),
      handler: () => {
        attempts++;
        if (attempts % 2 === 1) throw new TransientError('busy');
        return 'done';
      },
    });
    const events: DispatchEvent[] = [];
    const store = redisAutopilotStore({ client: a.store, prefix: randomUUID(), storeTimeoutMs: 300 });
    const pilot = autopilot({ store });
    const dispatcher = createDispatcher(
      defaultStack({ registry, autopilot: pilot, retry: { baseDelayMs: 0, random: () => 0 } }),
      { onEvent: (event) => events.push(event) },
    );
    expect(await dispatcher.dispatch('flaky.op', {})).toMatchObject({
      ok: true,
      attempts: 2,
      policy: { budget: 'ok' },
    });
    await redis.server.kill();
    try {
      const outcome = await dispatcher.dispatch('flaky.op', {});
      expect(outcome).toMatchObject({ ok: true, attempts: 2, policy: { budget: 'unavailable' } });
      const fallback = events.find((event) => event.type === 'autopilot.fallback');
      expect(fallback).toMatchObject({ knob: 'retryBudget' });
      expect(fallback?.type === 'autopilot.fallback' && fallback.reason).toMatch(/Redis/);
    } finally {
      await redis.server.restart();
    }
  });
});
