import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  DispatchError,
  ToolRegistry,
  TransientError,
  circuitBreaker,
  createDispatcher,
  defaultStack,
  logging,
  type Middleware,
} from '../../index.js';
import { eventLog, flush, gate, track, useFake, type Gate, setup } from './helpers.js';

beforeEach(() => useFake());
afterEach(() => {
  vi.useRealTimers();
});

describe('never rejects on garbage input', () => {
  it.each([
    ['undefined name', undefined, {}, undefined],
    ['numeric name', 42, {}, undefined],
    ['null options', 't.x', {}, null],
    ['string options', 't.x', {}, 'fast'],
    ['numeric idempotencyKey', 't.x', {}, { idempotencyKey: 7 }],
    ['signal not an AbortSignal', 't.x', {}, { signal: { aborted: false } }],
    ['callId not a string', 't.x', {}, { callId: {} }],
  ])('%s resolves to a DispatchError or success, never rejects', async (_l, name, args, options) => {
    const { registry, d } = setup();
    registry.register({ name: 't.x', inputSchema: z.object({}), handler: async () => 1 });
    const disp = d();
    let out: unknown;
    await expect(
      (async () => {
        out = await disp.dispatch(name as never, args, options as never);
      })(),
    ).resolves.toBeUndefined();
    expect(out === undefined).toBe(false);
    if ((out as { ok: boolean }).ok === false) expect(out).toBeInstanceOf(DispatchError);
    // still works afterwards
    expect(await disp.dispatch('t.x', {})).toMatchObject({ ok: true });
  });

  it('bad per-call options that are not timeouts/keys are schema errors, unknown names not_found', async () => {
    const { registry, d } = setup();
    registry.register({ name: 't.x', inputSchema: z.object({}), handler: async () => 1 });
    const disp = d();
    expect(await disp.dispatch(undefined as never, {})).toMatchObject({ kind: 'not_found' });
    expect(await disp.dispatch('t.x', {}, { idempotencyKey: 7 as never })).toMatchObject({ kind: 'schema' });
  });

  it('gatherBounded never rejects, even for malformed call entries', async () => {
    const { registry, d } = setup();
    registry.register({ name: 't.x', inputSchema: z.object({}), handler: async () => 1 });
    const disp = d();
    let outs: unknown[] | undefined;
    let error: unknown;
    try {
      outs = await disp.gatherBounded([{ name: 't.x', args: {} }, null as never, { name: 't.x' } as never]);
    } catch (e) {
      error = e;
    }
    expect(error).toBeUndefined();
    expect(outs).toHaveLength(3);
    expect(outs?.[0]).toMatchObject({ ok: true });
    expect(outs?.[1]).toBeInstanceOf(DispatchError);
  });

  it('very deeply nested args are a schema error, not a stack overflow', async () => {
    const { registry, d } = setup();
    registry.register({ name: 't.any', inputSchema: z.any(), handler: async () => 'ran' });
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let i = 0; i < 100_000; i++) {
      const next = {};
      deep.n = next;
      deep = next;
    }
    const out = await d().dispatch('t.any', root, { idempotencyKey: 'deep' });
    expect(out).toMatchObject({ ok: false, kind: 'schema' });
  });

  it('JSON.stringify of an envelope carries no stack trace', async () => {
    const { registry, d } = setup();
    registry.register({
      name: 't.bad',
      inputSchema: z.object({}),
      handler: async () => {
        throw new Error('boom');
      },
    });
    const out = await d().dispatch('t.bad', {});
    const text = JSON.stringify(out);
    expect(text).not.toMatch(/\n\s+at |\\n\s+at /);
    expect(JSON.parse(text)).toMatchObject({ ok: false, kind: 'internal', attempts: 1, jsonrpcCode: -32603 });
  });
});

describe('retry classification', () => {
  it('each timed-out attempt gets a fresh, unaborted signal and the attempt number', async () => {
    const { registry, d } = setup({ retry: { random: () => 0 } });
    const seen: { attempt: number; aborted: boolean; signal: AbortSignal }[] = [];
    registry.register({
      name: 'search.web',
      inputSchema: z.object({}),
      idempotent: true,
      timeoutMs: 100,
      handler: (_a, ctx) => {
        seen.push({ attempt: ctx.attempt, aborted: ctx.signal.aborted, signal: ctx.signal });
        return new Promise(() => {});
      },
    });
    const p = d().dispatch('search.web', {});
    await vi.advanceTimersByTimeAsync(100 + 100 + 100 + 400 + 100);
    expect(await p).toMatchObject({ kind: 'timeout', attempts: 3 });
    expect(seen.map((s) => [s.attempt, s.aborted])).toEqual([
      [1, false],
      [2, false],
      [3, false],
    ]);
    expect(new Set(seen.map((s) => s.signal)).size).toBe(3);
    expect(seen.every((s) => s.signal.aborted)).toBe(true);
  });

  it('a sync-thrown TransientError is retried like an async one', async () => {
    const { registry, d } = setup({ retry: { random: () => 0 } });
    let n = 0;
    registry.register({
      name: 't.f',
      inputSchema: z.object({}),
      handler: () => {
        if (++n < 2) throw new TransientError('x');
        return 'ok';
      },
    });
    const p = d().dispatch('t.f', {});
    await vi.advanceTimersByTimeAsync(100);
    expect(await p).toMatchObject({ ok: true, attempts: 2 });
  });

  it('circuit_open inside retry is not retried', async () => {
    const registry = new ToolRegistry();
    registry.register({
      name: 'db.q',
      inputSchema: z.object({}),
      handler: async () => {
        throw new Error('down');
      },
    });
    const breaker = circuitBreaker({ failureThreshold: 1 });
    const stack = defaultStack({ registry });
    stack.splice(stack.length - 1, 0, breaker);
    const log = eventLog();
    const disp = createDispatcher(stack, { onEvent: log.onEvent });
    await disp.dispatch('db.q', {});
    const p = track(disp.dispatch('db.q', {}));
    await flush();
    expect(p.value).toMatchObject({ kind: 'circuit_open' });
    expect(log.types()).not.toContain('dispatch.retry');
  });

  it('retry shouldRetry can widen what is retried', async () => {
    const { registry, d } = setup({
      retry: { random: () => 0, shouldRetry: (e) => e.kind === 'internal' || e.kind === 'transient' },
    });
    let n = 0;
    registry.register({
      name: 't.f',
      inputSchema: z.object({}),
      handler: async () => {
        if (++n < 3) throw new Error('x');
        return 'ok';
      },
    });
    const p = d().dispatch('t.f', {});
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await p).toMatchObject({ ok: true, attempts: 3 });
  });
});

describe('cancellation and dedupe with a full semaphore', () => {
  function gated(registry: ToolRegistry, name: string) {
    const gates: Gate<unknown>[] = [];
    const signals: AbortSignal[] = [];
    registry.register({
      name,
      inputSchema: z.object({}),
      handler: (_a, ctx) => {
        signals.push(ctx.signal);
        const g = gate<unknown>();
        gates.push(g);
        return g.promise;
      },
    });
    return { gates, signals };
  }

  it('a queued leader that aborts leaves its follower with the shared execution, which still runs once', async () => {
    const { registry, d } = setup({ concurrency: { max: 1 } });
    const busy = gated(registry, 'busy.x');
    const pay = gated(registry, 'pay.x');
    const disp = d();
    disp.dispatch('busy.x', {});
    await flush();
    const ac = new AbortController();
    const leader = track(disp.dispatch('pay.x', {}, { idempotencyKey: 'k', signal: ac.signal }));
    const follower = track(disp.dispatch('pay.x', {}, { idempotencyKey: 'k' }));
    await flush();
    ac.abort();
    await flush();
    expect(leader.value).toMatchObject({ kind: 'cancelled' });
    expect(follower.settled).toBe(false);
    busy.gates[0]!.resolve('x');
    await flush();
    expect(pay.gates).toHaveLength(1);
    pay.gates[0]!.resolve('paid');
    await flush();
    expect(follower.value).toMatchObject({ ok: true, result: 'paid' });
  });

  it('all callers aborting during a backoff ends the shared execution with no timers left', async () => {
    const { registry, d } = setup({ retry: { random: () => 0 } });
    const handler = vi.fn(async () => {
      throw new TransientError('x');
    });
    registry.register({ name: 't.f', inputSchema: z.object({}), handler });
    const disp = d();
    const ac1 = new AbortController();
    const ac2 = new AbortController();
    const a = track(disp.dispatch('t.f', {}, { idempotencyKey: 'k', signal: ac1.signal }));
    const b = track(disp.dispatch('t.f', {}, { idempotencyKey: 'k', signal: ac2.signal }));
    await vi.advanceTimersByTimeAsync(10);
    ac1.abort();
    ac2.abort();
    await flush();
    expect(a.value).toMatchObject({ kind: 'cancelled' });
    expect(b.value).toMatchObject({ kind: 'cancelled' });
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(handler).toHaveBeenCalledTimes(1);
  });

  it('a new same-key caller after every earlier caller aborted does not inherit a cancelled outcome', async () => {
    const { registry, d } = setup();
    const t = gated(registry, 'pay.x');
    const disp = d();
    const ac = new AbortController();
    disp.dispatch('pay.x', {}, { idempotencyKey: 'k', signal: ac.signal });
    await flush();
    ac.abort();
    const c = track(disp.dispatch('pay.x', {}, { idempotencyKey: 'k' }));
    await flush();
    expect(c.settled).toBe(false);
    t.gates[t.gates.length - 1]!.resolve('fresh');
    await flush();
    expect(c.value).toMatchObject({ ok: true, result: 'fresh' });
  });
});

describe('fake timers variants a user might pick', () => {
  it('only setTimeout faked (Date real): retries and timeouts still driven', async () => {
    vi.useRealTimers();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { registry, d } = setup({ retry: { random: () => 0 } });
    let n = 0;
    registry.register({
      name: 't.f',
      inputSchema: z.object({}),
      handler: async () => {
        if (++n < 3) throw new TransientError('x');
        return 'ok';
      },
    });
    registry.register({
      name: 't.hang',
      inputSchema: z.object({}),
      timeoutMs: 1_000,
      handler: () => new Promise(() => {}),
    });
    const disp = d();
    const p = disp.dispatch('t.f', {});
    const q = disp.dispatch('t.hang', {});
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await p).toMatchObject({ ok: true, attempts: 3 });
    expect(await q).toMatchObject({ kind: 'timeout' });
  });

  it('vi.runAllTimersAsync settles a retrying dispatch', async () => {
    const { registry, d } = setup();
    registry.register({
      name: 't.f',
      inputSchema: z.object({}),
      handler: async () => {
        throw new TransientError('x');
      },
    });
    const p = d().dispatch('t.f', {});
    await vi.runAllTimersAsync();
    expect(await p).toMatchObject({ kind: 'transient', attempts: 3 });
  });
});

describe('logging levels', () => {
  it('an intermediate timeout is a warning, the final timeout failure an error', async () => {
    const logger = { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() };
    const registry = new ToolRegistry();
    registry.register({
      name: 's.w',
      inputSchema: z.object({}),
      idempotent: true,
      timeoutMs: 100,
      handler: () => new Promise(() => {}),
    });
    const disp = createDispatcher([
      logging({ logger }),
      ...defaultStack({ registry, retry: { maxAttempts: 2, random: () => 0 } }),
    ]);
    const p = disp.dispatch('s.w', {});
    await vi.advanceTimersByTimeAsync(1_000);
    await p;
    const errs = logger.error.mock.calls.map((c) => c[0].event);
    expect(errs).toEqual(['dispatch.failure']);
    const warns = logger.warn.mock.calls.map((c) => c[0].event);
    expect(warns).toContain('dispatch.retry');
  });

  it('logging sees events of a custom middleware placed inside it', async () => {
    const logger = { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() };
    const registry = new ToolRegistry();
    registry.register({ name: 't.x', inputSchema: z.object({}), handler: async () => 1 });
    const cache: Middleware = async (ctx, next) => {
      ctx.emit('cache.miss', { key: 'a' });
      await next();
    };
    const disp = createDispatcher([logging({ logger }), cache, ...defaultStack({ registry })]);
    await disp.dispatch('t.x', {});
    const all = [...logger.debug.mock.calls, ...logger.info.mock.calls].map((c) => c[0]);
    expect(all.find((r) => r.event === 'cache.miss')).toMatchObject({ key: 'a', tool: 't.x' });
  });
});
