import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  DispatchError,
  ToolRegistry,
  TransientError,
  budgetGuard,
  circuitBreaker,
  createBudget,
  createDispatcher,
  defaultStack,
  errorMapping,
  harnessStep,
  idempotency,
  logging,
  schemaValidation,
  toToolMessage,
  toolLookup,
  type Budget,
} from '../../index.js';
import { flush, gate, track, useFake, setup } from './helpers.js';

beforeEach(() => useFake());
afterEach(() => {
  vi.useRealTimers();
});

describe('registry edges', () => {
  it('list() copes with schemas JSON Schema cannot express fully (transforms, defaults)', () => {
    const registry = new ToolRegistry();
    registry.register({
      name: 't.transform',
      inputSchema: z.object({ q: z.string().transform((s) => s.trim()), n: z.number().default(3) }),
      handler: async () => 1,
    });
    let list: ReturnType<ToolRegistry['list']> = [];
    expect(() => {
      list = registry.list();
    }).not.toThrow();
    expect(list[0]?.inputSchema).toMatchObject({ type: 'object' });
    expect((list[0]?.inputSchema.properties as Record<string, unknown>)?.q).toBeDefined();
  });

  it('list() does not throw for a tool whose schema has an unrepresentable type', () => {
    const registry = new ToolRegistry();
    registry.register({ name: 't.date', inputSchema: z.object({ when: z.date() }), handler: async () => 1 });
    registry.register({ name: 't.ok', inputSchema: z.object({ q: z.string() }), handler: async () => 1 });
    expect(() => registry.list()).not.toThrow();
    expect(
      registry
        .list()
        .map((t) => t.name)
        .sort(),
    ).toEqual(['t.date', 't.ok']);
  });

  it('a non-zod Standard Schema lists with some JSON Schema object', () => {
    const registry = new ToolRegistry();
    registry.register({
      name: 't.std',
      inputSchema: { '~standard': { version: 1, vendor: 'x', validate: (v: unknown) => ({ value: v }) } },
      handler: async () => 1,
    });
    const [item] = registry.list();
    expect(item?.inputSchema).toBeTypeOf('object');
    expect(() => JSON.stringify(item)).not.toThrow();
  });

  it('registration rejects obviously broken definitions with a TypeError', () => {
    const registry = new ToolRegistry();
    expect(() => registry.register({ name: 't.x', inputSchema: z.object({}), handler: 5 as never })).toThrow(
      TypeError,
    );
    expect(() =>
      registry.register({ name: 't.y', inputSchema: {} as never, handler: async () => 1 }),
    ).toThrow(TypeError);
    expect(() =>
      registry.register({ name: 't.z', inputSchema: z.object({}), timeoutMs: -1, handler: async () => 1 }),
    ).toThrow(TypeError);
    expect(() =>
      registry.register({ name: '', inputSchema: z.object({}), handler: async () => 1 }),
    ).toThrow();
  });

  it('unregister removes a tool', async () => {
    const registry = new ToolRegistry();
    registry.register({ name: 't.x', inputSchema: z.object({}), handler: async () => 1 });
    expect(registry.unregister('t.x')).toBe(true);
    const d = createDispatcher(defaultStack({ registry }));
    expect(await d.dispatch('t.x', {})).toMatchObject({ kind: 'not_found' });
  });
});

describe('timeout edges', () => {
  it('per-call override larger than the tool timeout wins', async () => {
    const { registry, d } = setup();
    registry.register({
      name: 't.hang',
      inputSchema: z.object({}),
      timeoutMs: 100,
      handler: () => new Promise(() => {}),
    });
    const p = track(d().dispatch('t.hang', {}, { timeoutMs: 500 }));
    await vi.advanceTimersByTimeAsync(499);
    expect(p.settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await flush();
    expect(p.value).toMatchObject({ kind: 'timeout' });
  });

  it('a timeout above 2^31−1 ms does not fire at once (Node clamps such timers to 1 ms)', async () => {
    const { registry, d } = setup();
    const g = gate<string>();
    registry.register({
      name: 't.slow',
      inputSchema: z.object({}),
      timeoutMs: 3_000_000_000,
      handler: () => g.promise,
    });
    const p = track(d().dispatch('t.slow', {}));
    await vi.advanceTimersByTimeAsync(10);
    expect(p.settled).toBe(false);
    g.resolve('ok');
    await flush();
    expect(p.value).toMatchObject({ ok: true });
  });

  it('the leader timing out gives its follower the timeout (leader attempts), non-idempotent not retried', async () => {
    const { registry, d } = setup();
    const handler = vi.fn(() => new Promise(() => {}));
    registry.register({ name: 'db.write', inputSchema: z.object({}), timeoutMs: 100, handler });
    const disp = d();
    const a = disp.dispatch('db.write', {}, { idempotencyKey: 'w' });
    const b = disp.dispatch('db.write', {}, { idempotencyKey: 'w' });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await a).toMatchObject({ kind: 'timeout', attempts: 1 });
    expect(await b).toMatchObject({ kind: 'timeout', attempts: 1 });
    expect(handler).toHaveBeenCalledTimes(1);
  });

  it('a sync-returning handler works', async () => {
    const { registry, d } = setup();
    registry.register({ name: 't.sync', inputSchema: z.object({ n: z.number() }), handler: (a) => a.n + 1 });
    expect(await d().dispatch('t.sync', { n: 1 })).toMatchObject({ ok: true, result: 2, attempts: 1 });
  });
});

describe('events payloads', () => {
  it('dispatch.retry carries attempt, delayMs, kind; attempts count; failure carries kind', async () => {
    const { registry, log, d } = setup({ retry: { random: () => 0 } });
    registry.register({
      name: 't.f',
      inputSchema: z.object({}),
      handler: async () => {
        throw new TransientError('x');
      },
    });
    const p = d().dispatch('t.f', {});
    await vi.advanceTimersByTimeAsync(1_000);
    await p;
    const retries = log.events.filter((e) => e.type === 'dispatch.retry');
    expect(retries.map((e) => e.attempt)).toEqual([1, 2]);
    expect(log.events.filter((e) => e.type === 'dispatch.attempt').map((e) => e.attempt)).toEqual([1, 2, 3]);
    const failure = log.events.find((e) => e.type === 'dispatch.failure');
    expect(failure).toMatchObject({ kind: 'transient', attempt: 3 });
    for (const e of log.events) expect(JSON.parse(JSON.stringify(e))).toEqual(e);
  });

  it('not_found and schema failures emit dispatch.failure too', async () => {
    const { registry, log, d } = setup();
    registry.register({ name: 't.x', inputSchema: z.object({ q: z.string() }), handler: async () => 1 });
    const disp = d();
    await disp.dispatch('nope', {});
    await disp.dispatch('t.x', {});
    const failures = log.events.filter((e) => e.type === 'dispatch.failure');
    expect(failures.map((e) => e.kind)).toEqual(['not_found', 'schema']);
  });

  it('callIds are unique per dispatch', async () => {
    const { registry, log, d } = setup();
    registry.register({ name: 't.x', inputSchema: z.object({}), handler: async () => 1 });
    const disp = d();
    await Promise.all(Array.from({ length: 20 }, () => disp.dispatch('t.x', {})));
    const ids = new Set(log.events.filter((e) => e.type === 'dispatch.success').map((e) => e.callId));
    expect(ids.size).toBe(20);
  });
});

describe('budget edges', () => {
  it('createBudget(0) shared fails fast with attempts 0', async () => {
    const { registry, d } = setup();
    const handler = vi.fn(async () => 1);
    registry.register({ name: 't.x', inputSchema: z.object({}), handler });
    expect(await d().dispatch('t.x', {}, { budget: createBudget(0) })).toMatchObject({
      kind: 'budget_exceeded',
      attempts: 0,
    });
    expect(handler).not.toHaveBeenCalled();
  });

  it('a user-implemented Budget object is honoured', async () => {
    const { registry, d } = setup();
    let left = 1;
    const mine: Budget = {
      get remaining() {
        return left;
      },
      limit: 1,
      tryConsume(units = 1) {
        if (left < units) return false;
        left -= units;
        return true;
      },
    };
    registry.register({ name: 't.x', inputSchema: z.object({}), handler: async () => 1 });
    const disp = d();
    expect(await disp.dispatch('t.x', {}, { budget: mine })).toMatchObject({ ok: true });
    expect(await disp.dispatch('t.x', {}, { budget: mine })).toMatchObject({ kind: 'budget_exceeded' });
  });

  it('a budget of a non-number non-budget value is a schema error, not a crash', async () => {
    const { registry, d } = setup();
    registry.register({ name: 't.x', inputSchema: z.object({}), handler: async () => 1 });
    const out = await d().dispatch('t.x', {}, { budget: 'lots' as never });
    expect(out.ok).toBe(false);
    expect(out).toBeInstanceOf(DispatchError);
  });

  it('cache hits take no budget unit; a spent budget fails fast before the idempotency layer (spec order)', async () => {
    const { registry, d } = setup();
    registry.register({ name: 't.x', inputSchema: z.object({}), handler: async () => 1 });
    const disp = d();
    expect(await disp.dispatch('t.x', {}, { idempotencyKey: 'k' })).toMatchObject({ ok: true, attempts: 1 });
    const budget = createBudget(1);
    expect(await disp.dispatch('t.x', {}, { budget, idempotencyKey: 'k' })).toMatchObject({
      ok: true,
      attempts: 0,
    });
    expect(budget.remaining).toBe(1);
    expect(await disp.dispatch('t.x', {}, { budget: createBudget(0), idempotencyKey: 'k' })).toMatchObject({
      kind: 'budget_exceeded',
      attempts: 0,
    });
  });
});

describe('circuit breaker edges', () => {
  function open(breaker: ReturnType<typeof circuitBreaker>, registry: ToolRegistry) {
    return createDispatcher([
      errorMapping(),
      breaker,
      toolLookup(registry),
      schemaValidation(),
      budgetGuard(),
    ]);
  }

  it('a half-open probe whose caller aborts does not wedge the circuit', async () => {
    const registry = new ToolRegistry();
    let mode: 'fail' | 'hang' | 'ok' = 'fail';
    registry.register({
      name: 'db.q',
      inputSchema: z.object({}),
      handler: async () => {
        if (mode === 'fail') throw new Error('down');
        if (mode === 'hang') return new Promise(() => {});
        return 'ok';
      },
    });
    const breaker = circuitBreaker({ failureThreshold: 1, cooldownMs: 1_000 });
    const disp = open(breaker, registry);
    await disp.dispatch('db.q', {});
    expect(breaker.state('db.q')).toBe('open');
    await vi.advanceTimersByTimeAsync(1_000);
    mode = 'hang';
    const ac = new AbortController();
    const probe = track(disp.dispatch('db.q', {}, { signal: ac.signal }));
    await flush();
    ac.abort();
    await flush();
    expect(probe.value).toMatchObject({ kind: 'cancelled' });
    mode = 'ok';
    await vi.advanceTimersByTimeAsync(1_000);
    const next = await disp.dispatch('db.q', {});
    expect(next).toMatchObject({ ok: true });
    expect(breaker.state('db.q')).toBe('closed');
  });

  it('a half-open probe that hits a caller error (schema) does not wedge the circuit', async () => {
    const registry = new ToolRegistry();
    let fail = true;
    registry.register({
      name: 'db.q',
      inputSchema: z.object({ id: z.string() }),
      handler: async () => {
        if (fail) throw new Error('down');
        return 'ok';
      },
    });
    const breaker = circuitBreaker({ failureThreshold: 1, cooldownMs: 1_000 });
    const disp = open(breaker, registry);
    await disp.dispatch('db.q', { id: 'a' });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await disp.dispatch('db.q', { id: 5 })).toMatchObject({ kind: 'schema' });
    fail = false;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await disp.dispatch('db.q', { id: 'a' })).toMatchObject({ ok: true });
    expect(breaker.state('db.q')).toBe('closed');
  });

  it('retryAfterMs reflects the remaining cool-down', async () => {
    const registry = new ToolRegistry();
    registry.register({
      name: 'db.q',
      inputSchema: z.object({}),
      handler: async () => {
        throw new Error('down');
      },
    });
    const breaker = circuitBreaker({ failureThreshold: 1, cooldownMs: 1_000 });
    const disp = open(breaker, registry);
    await disp.dispatch('db.q', {});
    await vi.advanceTimersByTimeAsync(400);
    const out = await disp.dispatch('db.q', {});
    expect(out).toMatchObject({ kind: 'circuit_open' });
    if (!out.ok) expect(out.retryAfterMs).toBe(600);
  });

  it('unknown key reports closed; snapshot is empty before any call', () => {
    const breaker = circuitBreaker();
    expect(breaker.state('never.seen')).toBe('closed');
    expect(breaker.snapshot()).toEqual({});
  });

  it.each([
    { failureThreshold: 0 },
    { failureThreshold: 1.5 },
    { cooldownMs: -1 },
    { halfOpenMaxCalls: 0 },
    { windowMs: 0 },
  ])('circuitBreaker(%o) is a TypeError', (opts) => {
    expect(() => circuitBreaker(opts)).toThrow(TypeError);
  });
});

describe('harness helper edges', () => {
  it('toToolMessage never throws on a non-serialisable result (cyclic, BigInt)', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(() => toToolMessage({ ok: true, result: cyclic, attempts: 1 })).not.toThrow();
    expect(() => toToolMessage({ ok: true, result: 10n, attempts: 1 })).not.toThrow();
    expect(() => toToolMessage({ ok: true, result: undefined, attempts: 1 })).not.toThrow();
  });

  it('toToolMessage maxLength keeps the text short', () => {
    const long = toToolMessage({ ok: true, result: 'x'.repeat(10_000), attempts: 1 }, { maxLength: 200 });
    expect(long.length).toBeLessThanOrEqual(200);
  });

  it('other kinds route to on_error (cancelled: the caller itself stopped, so no hook)', () => {
    for (const kind of ['circuit_open', 'idempotency_conflict', 'internal']) {
      expect(harnessStep(new DispatchError(kind, 'x')).hook).toBe('on_error');
    }
    expect(harnessStep(new DispatchError('cancelled', 'x'))).toEqual({ hook: 'none', replan: false });
  });

  it('a dispatch with a non-serialisable result still resolves ok', async () => {
    const { registry, d } = setup();
    registry.register({ name: 't.big', inputSchema: z.object({}), handler: async () => 10n });
    expect(await d().dispatch('t.big', {}, { idempotencyKey: 'b' })).toMatchObject({ ok: true, result: 10n });
    expect(await d().dispatch('t.big', {}, { idempotencyKey: 'b' })).toMatchObject({ ok: true });
  });
});

describe('logging edges', () => {
  it('records stay JSON-serialisable even when events carry odd details', async () => {
    const logger = { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() };
    const registry = new ToolRegistry();
    registry.register({ name: 't.x', inputSchema: z.object({}), handler: async () => 1 });
    const odd = async (
      ctx: Parameters<Parameters<typeof createDispatcher>[0][number]>[0],
      next: () => Promise<void>,
    ) => {
      ctx.emit('custom.thing', { big: 10n, err: new Error('e') });
      await next();
    };
    const disp = createDispatcher([logging({ logger }), odd, ...defaultStack({ registry })]);
    expect(await disp.dispatch('t.x', {})).toMatchObject({ ok: true });
    const all = [
      ...logger.debug.mock.calls,
      ...logger.info.mock.calls,
      ...logger.warn.mock.calls,
      ...logger.error.mock.calls,
    ].map((c) => c[0]);
    for (const r of all) expect(() => JSON.stringify(r)).not.toThrow();
  });

  it('level option filters lower levels', async () => {
    const logger = { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() };
    const registry = new ToolRegistry();
    registry.register({ name: 't.x', inputSchema: z.object({}), handler: async () => 1 });
    const disp = createDispatcher([logging({ logger, level: 'warn' }), ...defaultStack({ registry })]);
    await disp.dispatch('t.x', {});
    expect(logger.debug).not.toHaveBeenCalled();
    expect(logger.info).not.toHaveBeenCalled();
  });
});

describe('idempotency memory bound', () => {
  it('default maxEntries (10 000) bounds the cache', async () => {
    const registry = new ToolRegistry();
    registry.register({ name: 't.x', inputSchema: z.object({}), handler: () => 1 });
    const idem = idempotency();
    const disp = createDispatcher([errorMapping(), toolLookup(registry), idem]);
    for (let i = 0; i < 10_050; i++) await disp.dispatch('t.x', {}, { idempotencyKey: `k${i}` });
    expect(idem.size().cached).toBeLessThanOrEqual(10_000);
  });

  it('huge args with a key are fingerprinted without blowing up', async () => {
    const { registry, d } = setup();
    registry.register({
      name: 't.x',
      inputSchema: z.object({ rows: z.array(z.number()) }),
      handler: async (a) => a.rows.length,
    });
    const rows = Array.from({ length: 200_000 }, (_, i) => i);
    const disp = d();
    expect(await disp.dispatch('t.x', { rows }, { idempotencyKey: 'h' })).toMatchObject({
      ok: true,
      result: 200_000,
    });
    expect(await disp.dispatch('t.x', { rows: [...rows] }, { idempotencyKey: 'h' })).toMatchObject({
      ok: true,
      attempts: 0,
    });
    const other = [...rows];
    other[199_999] = -1;
    expect(await disp.dispatch('t.x', { rows: other }, { idempotencyKey: 'h' })).toMatchObject({
      kind: 'idempotency_conflict',
    });
  });

  it('prototype-pollution keys in args do not pollute anything', async () => {
    const { registry, d } = setup();
    registry.register({
      name: 't.x',
      inputSchema: z.object({}).passthrough(),
      handler: async (a) => Object.keys(a),
    });
    const evil = JSON.parse(
      '{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted2": true}}}',
    );
    const out = await d().dispatch('t.x', evil, { idempotencyKey: 'evil' });
    expect(out.ok).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted2).toBeUndefined();
  });
});
