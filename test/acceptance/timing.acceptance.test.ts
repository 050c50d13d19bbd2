import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { TransientError, retry, timeout } from '../../index.js';
import { flush, gate, track, useFake, setup } from './helpers.js';

beforeEach(() => useFake());
afterEach(() => {
  vi.useRealTimers();
});

describe('retry backoff schedule', () => {
  it('attempt 1 at once, attempt 2 after 100 ms, attempt 3 after a further 400 ms (random = 0)', async () => {
    const { registry, log, make } = setup({ retry: { random: () => 0 } });
    const attempts: number[] = [];
    registry.register({
      name: 't.flaky',
      inputSchema: z.object({}),
      handler: async (_a, ctx) => {
        attempts.push(ctx.attempt);
        throw new TransientError('busy');
      },
    });
    const p = track(make().dispatch('t.flaky', {}));
    await vi.advanceTimersByTimeAsync(0);
    expect(attempts).toEqual([1]);
    await vi.advanceTimersByTimeAsync(99);
    expect(attempts).toEqual([1]);
    await vi.advanceTimersByTimeAsync(1);
    expect(attempts).toEqual([1, 2]);
    await vi.advanceTimersByTimeAsync(399);
    expect(attempts).toEqual([1, 2]);
    expect(p.settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(attempts).toEqual([1, 2, 3]);
    await flush();
    expect(p.settled).toBe(true);
    expect(p.value).toMatchObject({ ok: false, kind: 'transient', attempts: 3 });
    const retries = log.events.filter((e) => e.type === 'dispatch.retry');
    expect(retries.map((e) => e.delayMs)).toEqual([100, 400]);
    expect(retries.map((e) => e.kind)).toEqual(['transient', 'transient']);
    expect(log.events.filter((e) => e.type === 'dispatch.attempt')).toHaveLength(3);
    expect(log.types()).toContain('dispatch.failure');
  });

  it('jitter upper end: random ≈ 1 gives just under 150 ms and 600 ms', async () => {
    const { registry, log, make } = setup({ retry: { random: () => 0.9999 } });
    registry.register({
      name: 't.flaky',
      inputSchema: z.object({}),
      handler: async () => {
        throw new TransientError('x');
      },
    });
    const p = make().dispatch('t.flaky', {});
    await vi.advanceTimersByTimeAsync(1_000);
    await p;
    const delays = log.events.filter((e) => e.type === 'dispatch.retry').map((e) => e.delayMs as number);
    expect(delays[0]).toBeGreaterThanOrEqual(149);
    expect(delays[0]).toBeLessThan(150);
    expect(delays[1]).toBeGreaterThanOrEqual(599);
    expect(delays[1]).toBeLessThan(600);
  });

  it('default random: delays fall in [100,150) and [400,600)', async () => {
    const { registry, log, make } = setup();
    registry.register({
      name: 't.flaky',
      inputSchema: z.object({}),
      handler: async () => {
        throw new TransientError('x');
      },
    });
    const d = make();
    for (let i = 0; i < 5; i++) {
      const p = d.dispatch('t.flaky', {});
      await vi.advanceTimersByTimeAsync(1_000);
      await p;
    }
    const delays = log.events.filter((e) => e.type === 'dispatch.retry').map((e) => e.delayMs as number);
    expect(delays).toHaveLength(10);
    for (let i = 0; i < delays.length; i += 2) {
      expect(delays[i]).toBeGreaterThanOrEqual(100);
      expect(delays[i]).toBeLessThan(150);
      expect(delays[i + 1]).toBeGreaterThanOrEqual(400);
      expect(delays[i + 1]).toBeLessThan(600);
    }
  });

  it('configurable base, factor, maxAttempts, cap', async () => {
    const { registry, log, make } = setup({
      retry: { maxAttempts: 5, baseDelayMs: 10, factor: 2, random: () => 0, maxDelayMs: 30 },
    });
    const handler = vi.fn(async () => {
      throw new TransientError('x');
    });
    registry.register({ name: 't.flaky', inputSchema: z.object({}), handler });
    const p = make().dispatch('t.flaky', {});
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await p).toMatchObject({ kind: 'transient', attempts: 5 });
    expect(handler).toHaveBeenCalledTimes(5);
    expect(log.events.filter((e) => e.type === 'dispatch.retry').map((e) => e.delayMs)).toEqual([
      10, 20, 30, 30,
    ]);
  });

  it('TransientError retryAfterMs raises the next backoff; maxDelayMs caps it', async () => {
    const { registry, log, make } = setup({ retry: { random: () => 0 } });
    let n = 0;
    registry.register({
      name: 't.ratelimited',
      inputSchema: z.object({}),
      handler: async () => {
        n++;
        if (n === 1) throw new TransientError('slow down', { retryAfterMs: 1_000 });
        return 'done';
      },
    });
    const p = track(make().dispatch('t.ratelimited', {}));
    await vi.advanceTimersByTimeAsync(999);
    expect(n).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(n).toBe(2);
    await flush();
    expect(p.value).toMatchObject({ ok: true, result: 'done', attempts: 2 });
    expect(log.events.find((e) => e.type === 'dispatch.retry')?.delayMs).toBe(1_000);

    const capped = setup({ retry: { random: () => 0, maxDelayMs: 300 } });
    let m = 0;
    capped.registry.register({
      name: 't.ratelimited',
      inputSchema: z.object({}),
      handler: async () => {
        m++;
        if (m === 1) throw new TransientError('slow down', { retryAfterMs: 10_000 });
        return 'done';
      },
    });
    const q = capped.make().dispatch('t.ratelimited', {});
    await vi.advanceTimersByTimeAsync(300);
    expect(m).toBe(2);
    expect(await q).toMatchObject({ ok: true, attempts: 2 });
  });

  it('transient then success reports the attempts used', async () => {
    const { registry, make } = setup({ retry: { random: () => 0 } });
    let n = 0;
    registry.register({
      name: 't.flaky',
      inputSchema: z.object({}),
      handler: async () => {
        if (++n < 3) throw new TransientError('x');
        return 'ok';
      },
    });
    const p = make().dispatch('t.flaky', {});
    await vi.advanceTimersByTimeAsync(500);
    expect(await p).toMatchObject({ ok: true, result: 'ok', attempts: 3 });
  });

  it.each([0, -1, 1.5, Number.NaN])(
    'retry({ maxAttempts: %s }) is a TypeError naming the option',
    (maxAttempts) => {
      expect(() => retry({ maxAttempts })).toThrow(TypeError);
      expect(() => retry({ maxAttempts })).toThrow(/maxAttempts/);
    },
  );

  it('maxAttempts: 1 means no retry', async () => {
    const { registry, make } = setup({ retry: { maxAttempts: 1 } });
    const handler = vi.fn(async () => {
      throw new TransientError('x');
    });
    registry.register({ name: 't.flaky', inputSchema: z.object({}), handler });
    const p = make().dispatch('t.flaky', {});
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await p).toMatchObject({ kind: 'transient', attempts: 1 });
    expect(handler).toHaveBeenCalledTimes(1);
  });
});

describe('timeout', () => {
  it('tool timeoutMs: fires exactly at the deadline, aborts the signal, non-idempotent not retried', async () => {
    const { registry, log, make } = setup();
    const signals: AbortSignal[] = [];
    const handler = vi.fn((_a: unknown, ctx: { signal: AbortSignal }) => {
      signals.push(ctx.signal);
      return new Promise(() => {});
    });
    registry.register({ name: 'db.write', inputSchema: z.object({}), timeoutMs: 1_000, handler });
    const p = track(make().dispatch('db.write', {}));
    await vi.advanceTimersByTimeAsync(999);
    expect(p.settled).toBe(false);
    expect(signals[0]?.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await flush();
    expect(p.settled).toBe(true);
    expect(p.value).toMatchObject({ ok: false, kind: 'timeout', attempts: 1, jsonrpcCode: -32603 });
    expect(signals[0]?.aborted).toBe(true);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(handler).toHaveBeenCalledTimes(1);
    expect(log.types()).toContain('dispatch.timeout');
  });

  it('idempotent tools are retried after a timeout (3 attempts)', async () => {
    const { registry, make } = setup({ retry: { random: () => 0 } });
    const handler = vi.fn(() => new Promise(() => {}));
    registry.register({
      name: 'search.web',
      inputSchema: z.object({}),
      idempotent: true,
      timeoutMs: 1_000,
      handler,
    });
    const p = make().dispatch('search.web', {});
    await vi.advanceTimersByTimeAsync(1_000 + 100 + 1_000 + 400 + 1_000);
    expect(await p).toMatchObject({ ok: false, kind: 'timeout', attempts: 3 });
    expect(handler).toHaveBeenCalledTimes(3);
  });

  it('default tool timeout is 30 s; per-call override wins; defaultStack timeout.defaultMs applies', async () => {
    const { registry, make } = setup();
    registry.register({ name: 't.hang', inputSchema: z.object({}), handler: () => new Promise(() => {}) });
    registry.register({
      name: 't.hang5',
      inputSchema: z.object({}),
      timeoutMs: 5_000,
      handler: () => new Promise(() => {}),
    });
    const d = make();
    const a = track(d.dispatch('t.hang', {}));
    const b = track(d.dispatch('t.hang5', {}, { timeoutMs: 200 }));
    await vi.advanceTimersByTimeAsync(200);
    expect(b.settled).toBe(true);
    expect(b.value).toMatchObject({ kind: 'timeout' });
    await vi.advanceTimersByTimeAsync(29_799);
    expect(a.settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await flush();
    expect(a.value).toMatchObject({ kind: 'timeout' });

    const other = setup({ timeout: { defaultMs: 500 } });
    other.registry.register({
      name: 't.hang',
      inputSchema: z.object({}),
      handler: () => new Promise(() => {}),
    });
    const c = track(other.make().dispatch('t.hang', {}));
    await vi.advanceTimersByTimeAsync(500);
    await flush();
    expect(c.value).toMatchObject({ kind: 'timeout' });
  });

  it('timeoutMs: Infinity means no timeout', async () => {
    const { registry, make } = setup();
    const g = gate<string>();
    registry.register({ name: 't.slow', inputSchema: z.object({}), timeoutMs: 10, handler: () => g.promise });
    const p = track(make().dispatch('t.slow', {}, { timeoutMs: Infinity }));
    await vi.advanceTimersByTimeAsync(24 * 3600_000);
    expect(p.settled).toBe(false);
    g.resolve('late but fine');
    await flush();
    expect(p.value).toMatchObject({ ok: true, result: 'late but fine' });
  });

  it('a handler throwing its own timeout-like error is not a dispatcher timeout', async () => {
    const { registry, make } = setup();
    registry.register({
      name: 't.own',
      inputSchema: z.object({}),
      idempotent: true,
      handler: async () => {
        const e = new Error('upstream timed out');
        e.name = 'TimeoutError';
        throw e;
      },
    });
    registry.register({
      name: 't.dom',
      inputSchema: z.object({}),
      handler: async () => {
        throw new DOMException('The operation timed out.', 'TimeoutError');
      },
    });
    const d = make();
    const p = d.dispatch('t.own', {});
    const q = d.dispatch('t.dom', {});
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await p).toMatchObject({ ok: false, kind: 'internal', attempts: 1 });
    expect(await q).toMatchObject({ ok: false, kind: 'internal', attempts: 1 });
  });

  it('a late rejection after a timeout never surfaces as an unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (r: unknown) => unhandled.push(r);
    process.on('unhandledRejection', onUnhandled);
    try {
      const { registry, make } = setup();
      registry.register({
        name: 't.late',
        inputSchema: z.object({}),
        timeoutMs: 100,
        handler: () => new Promise((_res, rej) => setTimeout(() => rej(new Error('late')), 500)),
      });
      const p = make().dispatch('t.late', {});
      await vi.advanceTimersByTimeAsync(1_000);
      expect(await p).toMatchObject({ kind: 'timeout' });
      vi.useRealTimers();
      await new Promise((r) => setTimeout(r, 5));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('sync vi.advanceTimersByTime right after dispatch() drives a timeout', async () => {
    const { registry, make } = setup();
    registry.register({
      name: 't.hang',
      inputSchema: z.object({}),
      timeoutMs: 1_000,
      handler: () => new Promise(() => {}),
    });
    const p = track(make().dispatch('t.hang', {}));
    vi.advanceTimersByTime(1_000);
    await flush(200);
    const settled = p.settled;
    if (!settled) await vi.advanceTimersByTimeAsync(2_000); // clean up so nothing hangs
    expect(settled).toBe(true);
    await flush();
    expect(p.value).toMatchObject({ kind: 'timeout' });
  });

  it('sync vi.advanceTimersByTime drives backoff once the dispatch has reached its wait', async () => {
    const { registry, make } = setup({ retry: { random: () => 0 } });
    let n = 0;
    registry.register({
      name: 't.flaky',
      inputSchema: z.object({}),
      handler: async () => {
        if (++n < 3) throw new TransientError('x');
        return 'ok';
      },
    });
    const p = track(make().dispatch('t.flaky', {}));
    await flush(200);
    expect(n).toBe(1);
    vi.advanceTimersByTime(100);
    await flush(200);
    expect(n).toBe(2);
    vi.advanceTimersByTime(400);
    await flush(200);
    expect(n).toBe(3);
    expect(p.value).toMatchObject({ ok: true, attempts: 3 });
  });

  it('timeout() standalone validates defaultMs', () => {
    expect(() => timeout({ defaultMs: -5 })).toThrow(TypeError);
  });
});

describe('caller cancellation', () => {
  it('abort while the handler runs: cancelled at once, handler signal aborted, no retry', async () => {
    const { registry, make } = setup();
    const signals: AbortSignal[] = [];
    const handler = vi.fn((_a: unknown, ctx: { signal: AbortSignal }) => {
      signals.push(ctx.signal);
      return new Promise(() => {});
    });
    registry.register({ name: 't.hang', inputSchema: z.object({}), idempotent: true, handler });
    const ac = new AbortController();
    const p = track(make().dispatch('t.hang', {}, { signal: ac.signal }));
    await flush();
    expect(handler).toHaveBeenCalledTimes(1);
    ac.abort();
    await flush();
    expect(p.settled).toBe(true);
    expect(p.value).toMatchObject({ ok: false, kind: 'cancelled', jsonrpcCode: -32603, attempts: 1 });
    expect(signals[0]?.aborted).toBe(true);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(handler).toHaveBeenCalledTimes(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('abort during a backoff wait ends it at once; no further attempts', async () => {
    const { registry, make } = setup({ retry: { random: () => 0 } });
    const handler = vi.fn(async () => {
      throw new TransientError('x');
    });
    registry.register({ name: 't.flaky', inputSchema: z.object({}), handler });
    const ac = new AbortController();
    const p = track(make().dispatch('t.flaky', {}, { signal: ac.signal }));
    await vi.advanceTimersByTimeAsync(50);
    expect(handler).toHaveBeenCalledTimes(1);
    ac.abort();
    await flush();
    expect(p.settled).toBe(true);
    expect(p.value).toMatchObject({ kind: 'cancelled', attempts: 1 });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(handler).toHaveBeenCalledTimes(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('an already-aborted signal never reaches the handler', async () => {
    const { registry, make } = setup();
    const handler = vi.fn(async () => 1);
    registry.register({ name: 't.x', inputSchema: z.object({}), handler });
    const out = await make().dispatch('t.x', {}, { signal: AbortSignal.abort() });
    expect(out).toMatchObject({ ok: false, kind: 'cancelled', attempts: 0 });
    expect(handler).not.toHaveBeenCalled();
  });

  it('no abort listeners remain on the caller signal after failures and timeouts', async () => {
    const { EventEmitter } = await import('node:events');
    const getEventListeners = EventEmitter.getEventListeners;
    const { registry, make } = setup({ retry: { random: () => 0 } });
    registry.register({
      name: 't.flaky',
      inputSchema: z.object({}),
      handler: async () => {
        throw new TransientError('x');
      },
    });
    registry.register({
      name: 't.hang',
      inputSchema: z.object({}),
      timeoutMs: 50,
      handler: () => new Promise(() => {}),
    });
    const d = make();
    const ac = new AbortController();
    const p = d.dispatch('t.flaky', {}, { signal: ac.signal });
    const q = d.dispatch('t.hang', {}, { signal: ac.signal, idempotencyKey: 'k' });
    await vi.advanceTimersByTimeAsync(2_000);
    await p;
    await q;
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
    expect(vi.getTimerCount()).toBe(0);
  });
});
