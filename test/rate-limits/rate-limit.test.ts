import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createDispatcher,
  errorMapping,
  rateLimit,
  ToolRegistry,
  toolLookup,
  TransientError,
  windowedBudget,
  type DispatchEvent,
  type RateLimitOptions,
  type RateStore,
} from '../../index.js';
import { memoryRateStore } from '../../middleware/index.js';
import { flush } from '../helpers/gate.js';

beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});
afterEach(() => {
  vi.useRealTimers();
});

function limited(options: RateLimitOptions, handler?: (i: number) => unknown, timeoutMs?: number) {
  const starts: Array<[number, number]> = [];
  const events: DispatchEvent[] = [];
  const registry = new ToolRegistry().register({
    name: 'api.call',
    inputSchema: z.object({ i: z.number(), cost: z.number().optional() }),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    handler: ({ i }) => {
      starts.push([i, Date.now()]);
      return handler === undefined ? i : handler(i);
    },
  });
  const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), rateLimit(options)], {
    onEvent: (event) => events.push(event),
  });
  const call = (i: number, extra: object = {}, signal?: AbortSignal) =>
    dispatcher.dispatch('api.call', { i, ...extra }, signal === undefined ? {} : { signal });
  return { call, starts, events };
}

describe('rateLimit: a token bucket per key', () => {
  it('lets burst through at once and refills continuously, in FIFO order', async () => {
    const { call, starts, events } = limited({ rate: 2, intervalMs: 1_000 });
    const calls = [0, 1, 2, 3, 4].map((i) => call(i));
    await flush();
    expect(starts).toEqual([
      [0, 0],
      [1, 0],
    ]);
    await vi.advanceTimersByTimeAsync(1_500);
    await Promise.all(calls);
    expect(starts).toEqual([
      [0, 0],
      [1, 0],
      [2, 500],
      [3, 1_000],
      [4, 1_500],
    ]);
    expect(events.filter((event) => event.type === 'rate_limit.wait').map((event) => event.waitMs)).toEqual([
      500, 1_000, 1_500,
    ]);
    // Every reservation says how full it left the bucket (burst 2: half, then empty and queueing).
    expect(events.filter((event) => event.type === 'rate_limit.granted').map((event) => event.fill)).toEqual([
      0.5, 0, 0, 0, 0,
    ]);
  });

  it('never lets 2x through at a window boundary', async () => {
    const { call, starts } = limited({ rate: 4, intervalMs: 1_000, maxWaitMs: Infinity });
    await vi.advanceTimersByTimeAsync(999);
    const calls = Array.from({ length: 12 }, (_, i) => call(i));
    await vi.advanceTimersByTimeAsync(3_000);
    await Promise.all(calls);
    // In any 1 s span at most rate + burst start.
    for (const [, at] of starts) {
      expect(starts.filter(([, other]) => other >= at && other < at + 1_000).length).toBeLessThanOrEqual(8);
    }
    expect(starts.filter(([, at]) => at < 1_999).length).toBeLessThanOrEqual(8);
  });

  it('keeps keys apart', async () => {
    const { call, starts } = limited({ rate: 1, key: (ctx) => `k${(ctx.args as { i: number }).i % 2}` });
    await Promise.all([call(0), call(1)]);
    expect(starts.map(([, at]) => at)).toEqual([0, 0]);
  });

  it('refuses at once a wait past maxWaitMs, with the wait, without running the handler', async () => {
    const { call, starts } = limited({ rate: 1, intervalMs: 1_000, maxWaitMs: 1_500 });
    const first = [call(0), call(1)];
    const refused = await call(2);
    expect(refused).toMatchObject({ ok: false, kind: 'rate_limited', attempts: 0, retryAfterMs: 2_000 });
    await vi.advanceTimersByTimeAsync(1_000);
    await Promise.all(first);
    expect(starts.map(([i]) => i)).toEqual([0, 1]);
  });

  it("refuses a wait longer than the attempt's own timeout", async () => {
    const { call } = limited({ rate: 1, intervalMs: 1_000 }, undefined, 200);
    await call(0);
    expect(await call(1)).toMatchObject({ kind: 'rate_limited', retryAfterMs: 1_000 });
  });

  it('refuses a cost above burst without retryAfterMs', async () => {
    const { call, starts } = limited({ rate: 5, cost: (args) => (args as { cost: number }).cost });
    expect(await call(0, { cost: 6 })).toMatchObject({ kind: 'rate_limited', retryAfterMs: undefined });
    expect(starts).toEqual([]);
    expect(await call(1, { cost: 5 })).toMatchObject({ ok: true });
  });

  it('fails internal naming cost when the cost function answers junk', async () => {
    const { call } = limited({ rate: 5, cost: () => Number.NaN });
    expect(await call(0)).toMatchObject({ kind: 'internal', message: expect.stringMatching(/cost/) });
  });

  it('gives back the reservation of a caller that aborts while waiting', async () => {
    const { call, starts } = limited({ rate: 1, intervalMs: 1_000 });
    await call(0);
    const leaving = new AbortController();
    const gone = call(1, {}, leaving.signal);
    await vi.advanceTimersByTimeAsync(100);
    leaving.abort();
    expect(await gone).toMatchObject({ kind: 'cancelled', attempts: 0 });
    const next = call(2);
    await vi.advanceTimersByTimeAsync(1_000);
    await next;
    expect(starts).toEqual([
      [0, 0],
      [2, 1_000],
    ]);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('rateLimit on a store that answers later', () => {
  it('ends the wait for the store at an abort and gives the late grant back', async () => {
    const memory = memoryRateStore();
    let release: () => void = () => {};
    const answered = new Promise<void>((resolve) => {
      release = resolve;
    });
    const cancels: string[] = [];
    const store: RateStore = {
      acquire: async (...args) => {
        await answered;
        return memory.acquire(...args);
      },
      cancel: (key, cost, bucket, id) => {
        cancels.push(id);
        return memory.cancel(key, cost, bucket, id);
      },
      debit: (...args) => memory.debit(...args),
      delayedSince: (...args) => memory.delayedSince(...args),
    };
    const { call, starts } = limited({ rate: 1, store });
    const leaving = new AbortController();
    const gone = call(0, {}, leaving.signal);
    await flush();
    leaving.abort();
    expect(await gone).toMatchObject({ kind: 'cancelled', attempts: 0 });
    release();
    await flush();
    expect(cancels).toHaveLength(1);
    expect(await call(1)).toMatchObject({ ok: true });
    expect(starts.map(([i]) => i)).toEqual([1]);
  });
});

describe('rateLimit and windowedBudget on a store that cannot answer', () => {
  const down = () => {
    throw new Error('ECONNREFUSED');
  };
  const downStore: RateStore = { acquire: down, cancel: down, debit: down, delayedSince: down };

  it("fails store_unavailable by default, and runs unlimited with onStoreError: 'open'", async () => {
    const closed = limited({ rate: 1, store: downStore });
    expect(await closed.call(0)).toMatchObject({ ok: false, kind: 'store_unavailable', attempts: 0 });
    expect(closed.starts).toEqual([]);
    const open = limited({ rate: 1, store: downStore, onStoreError: 'open' });
    expect(await open.call(0)).toMatchObject({ ok: true });
  });

  it('fails a windowed budget closed', async () => {
    const registry = new ToolRegistry().register({
      name: 'api.call',
      inputSchema: z.object({}),
      handler: () => 1,
    });
    const dispatcher = createDispatcher([
      errorMapping(),
      toolLookup(registry),
      windowedBudget({ limit: 10, windowMs: 1_000, store: { reserve: down, settle: down } }),
    ]);
    expect(await dispatcher.dispatch('api.call', {})).toMatchObject({
      kind: 'store_unavailable',
      attempts: 0,
    });
  });
});

describe('rateLimit: a 429 slows its siblings', () => {
  it('empties the bucket until retryAfterMs, for waiting calls and new ones', async () => {
    const { call, starts, events } = limited({ rate: 4, intervalMs: 1_000 }, (i) => {
      if (i === 0) throw new TransientError('429', { retryAfterMs: 1_000, rateLimited: true });
      return i;
    });
    const calls = Array.from({ length: 6 }, (_, i) => call(i));
    await flush();
    // 0-3 started at once; 0 answered 429; 4 and 5 had reserved 250 and 500 ms.
    expect(await calls[0]).toMatchObject({ kind: 'transient', retryAfterMs: 1_000 });
    expect(events.find((event) => event.type === 'rate_limit.debit')).toMatchObject({
      key: 'api.call',
      retryAfterMs: 1_000,
    });
    const late = call(6);
    await vi.advanceTimersByTimeAsync(3_000);
    await Promise.all([...calls, late]);
    const after = starts.filter(([i]) => i >= 4);
    // Nobody starts in the second after the 429, and the bucket refills from empty (no burst).
    expect(after.every(([, at]) => at >= 1_000)).toBe(true);
    expect(after.map(([, at]) => at)).toEqual([1_250, 1_500, 1_750]);
  });
});

describe('rateLimit options', () => {
  it.each([
    [{ rate: 0 }, /rate/],
    [{ rate: 1, burst: -1 }, /burst/],
    [{ rate: 1, intervalMs: 0 }, /intervalMs/],
    [{ rate: 1, maxWaitMs: -1 }, /maxWaitMs/],
    [{ rate: 1, cost: 2 }, /cost/],
    [{ rate: 1, cost: 'x' }, /cost/],
    [{ rate: 1, key: 'tenant' }, /key/],
    [{ rate: 1, onStoreError: 'local' }, /onStoreError/],
    [{ rate: 1, store: {} }, /store/],
  ])('rejects %o with a TypeError naming the option', (options, name) => {
    expect(() => rateLimit(options as RateLimitOptions)).toThrow(TypeError);
    expect(() => rateLimit(options as RateLimitOptions)).toThrow(name);
  });

  it('says how full each grant leaves the bucket, refilling with time', () => {
    const store = memoryRateStore();
    const bucket = { rate: 1, intervalMs: 1_000, burst: 4 };
    const take = (id: string) => store.acquire('k', 1, bucket, { maxWaitMs: 10_000, id });
    expect(take('1')).toMatchObject({ granted: true, waitMs: 0, fill: 0.75 });
    expect(take('2')).toMatchObject({ fill: 0.5 });
    vi.advanceTimersByTime(1_000);
    expect(take('3')).toMatchObject({ fill: 0.5 });
    expect(take('4')).toMatchObject({ fill: 0.25 });
    expect(take('5')).toMatchObject({ fill: 0 });
    expect(take('6')).toMatchObject({ waitMs: 1_000, fill: 0 });
  });

  it('drops the buckets of keys that are full again', () => {
    const store = memoryRateStore() as ReturnType<typeof memoryRateStore> & { size: number };
    const bucket = { rate: 1, intervalMs: 10, burst: 1 };
    for (let i = 0; i < 100_000; i++) {
      store.acquire(`tenant-${i}`, 1, bucket, { maxWaitMs: 0, id: String(i) });
      if (i % 1_000 === 999) vi.advanceTimersByTime(20);
    }
    expect(store.size).toBeLessThan(5_000);
  });
});
