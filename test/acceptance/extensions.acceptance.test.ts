import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import koaCompose from 'koa-compose';
import {
  DispatchError,
  ToolRegistry,
  TransientError,
  budgetGuard,
  circuitBreaker,
  concurrencyLimit,
  createDispatcher,
  defaultStack,
  errorMapping,
  harnessStep,
  idempotency,
  logging,
  retry,
  schemaValidation,
  timeout,
  toToolMessage,
  toolLookup,
  type Logger,
  type Middleware,
} from '../../index.js';
import { compose } from '../../middleware/index.js';
import { eventLog, flush, gate, track, useFake } from './helpers.js';

beforeEach(() => useFake());
afterEach(() => {
  vi.useRealTimers();
});

function fakeLogger() {
  return { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() } satisfies Logger;
}

describe('circuitBreaker', () => {
  function breakerSetup(opts: Parameters<typeof circuitBreaker>[0] = {}) {
    const registry = new ToolRegistry();
    const log = eventLog();
    const breaker = circuitBreaker({ failureThreshold: 3, cooldownMs: 1_000, windowMs: 10_000, ...opts });
    let mode: 'fail' | 'ok' | 'gate' | 'transient' = 'fail';
    let g = gate<string>();
    const handler = vi.fn(async () => {
      if (mode === 'fail') throw new Error('backend down');
      if (mode === 'transient') throw new TransientError('busy');
      if (mode === 'gate') return g.promise;
      return 'ok';
    });
    registry.register({
      name: 'db.query',
      inputSchema: z.object({ backend: z.string().default('a') }),
      handler,
    });
    const disp = createDispatcher(
      [errorMapping(), breaker, toolLookup(registry), schemaValidation(), budgetGuard()],
      {
        onEvent: log.onEvent,
      },
    );
    return {
      registry,
      log,
      breaker,
      handler,
      disp,
      setMode: (m: typeof mode) => {
        mode = m;
      },
      newGate: () => {
        g = gate<string>();
        return g;
      },
    };
  }

  it('closed → open after N consecutive failures; open fails fast with circuit_open and retryAfterMs; no timers', async () => {
    const s = breakerSetup();
    expect(s.breaker.state('db.query')).toBe('closed');
    for (let i = 0; i < 2; i++)
      expect(await s.disp.dispatch('db.query', {})).toMatchObject({ kind: 'internal' });
    expect(s.breaker.state('db.query')).toBe('closed');
    await s.disp.dispatch('db.query', {});
    expect(s.breaker.state('db.query')).toBe('open');
    expect(s.log.types()).toContain('circuit.open');
    const out = await s.disp.dispatch('db.query', {});
    expect(out).toMatchObject({ ok: false, kind: 'circuit_open', jsonrpcCode: -32603, attempts: 0 });
    if (!out.ok) {
      expect(out.retryAfterMs).toBeGreaterThan(0);
      expect(out.retryAfterMs).toBeLessThanOrEqual(1_000);
    }
    expect(s.handler).toHaveBeenCalledTimes(3);
    expect(vi.getTimerCount()).toBe(0);
    const snap = s.breaker.snapshot();
    expect(snap['db.query']?.state).toBe('open');
    expect(() => JSON.stringify(snap)).not.toThrow();
  });

  it('after cool-down a single probe runs (others fail fast); success closes', async () => {
    const s = breakerSetup();
    for (let i = 0; i < 3; i++) await s.disp.dispatch('db.query', {});
    await vi.advanceTimersByTimeAsync(999);
    expect(await s.disp.dispatch('db.query', {})).toMatchObject({ kind: 'circuit_open' });
    await vi.advanceTimersByTimeAsync(1);
    s.setMode('gate');
    const g = s.newGate();
    const probe = track(s.disp.dispatch('db.query', {}));
    await flush();
    expect(s.breaker.state('db.query')).toBe('half_open');
    expect(s.log.types()).toContain('circuit.half_open');
    const others = await Promise.all([s.disp.dispatch('db.query', {}), s.disp.dispatch('db.query', {})]);
    for (const o of others) expect(o).toMatchObject({ kind: 'circuit_open' });
    expect(s.handler).toHaveBeenCalledTimes(4);
    g.resolve('recovered');
    await flush();
    expect(probe.value).toMatchObject({ ok: true, result: 'recovered' });
    expect(s.breaker.state('db.query')).toBe('closed');
    expect(s.log.types()).toContain('circuit.close');
    s.setMode('ok');
    expect(await s.disp.dispatch('db.query', {})).toMatchObject({ ok: true });
  });

  it('a failed probe re-opens the circuit for another cool-down', async () => {
    const s = breakerSetup();
    for (let i = 0; i < 3; i++) await s.disp.dispatch('db.query', {});
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await s.disp.dispatch('db.query', {})).toMatchObject({ kind: 'internal' });
    expect(s.breaker.state('db.query')).toBe('open');
    expect(await s.disp.dispatch('db.query', {})).toMatchObject({ kind: 'circuit_open' });
    await vi.advanceTimersByTimeAsync(1_000);
    s.setMode('ok');
    expect(await s.disp.dispatch('db.query', {})).toMatchObject({ ok: true });
    expect(s.breaker.state('db.query')).toBe('closed');
  });

  it('halfOpenMaxCalls allows that many concurrent probes', async () => {
    const s = breakerSetup({ halfOpenMaxCalls: 2 });
    for (let i = 0; i < 3; i++) await s.disp.dispatch('db.query', {});
    await vi.advanceTimersByTimeAsync(1_000);
    s.setMode('gate');
    const g = s.newGate();
    const ps = [0, 1, 2, 3].map(() => track(s.disp.dispatch('db.query', {})));
    await flush();
    expect(s.handler).toHaveBeenCalledTimes(5);
    expect(ps[2]!.value).toMatchObject({ kind: 'circuit_open' });
    expect(ps[3]!.value).toMatchObject({ kind: 'circuit_open' });
    g.resolve('ok');
    await flush();
    expect(s.breaker.state('db.query')).toBe('closed');
  });

  it('caller errors never trip it (schema, not_found, budget_exceeded, cancelled)', async () => {
    const s = breakerSetup({ failureThreshold: 2 });
    for (let i = 0; i < 5; i++) {
      await s.disp.dispatch('db.query', { backend: 42 });
      await s.disp.dispatch('db.query', {}, { budget: 0 });
      await s.disp.dispatch('db.query', {}, { signal: AbortSignal.abort() });
      await s.disp.dispatch('no.such', {});
    }
    expect(s.breaker.state('db.query')).toBe('closed');
    expect(s.breaker.state('no.such')).toBe('closed');
    expect(s.handler).not.toHaveBeenCalled();
  });

  it('a success resets the consecutive count; failures outside the window do not accumulate', async () => {
    const s = breakerSetup();
    await s.disp.dispatch('db.query', {});
    await s.disp.dispatch('db.query', {});
    s.setMode('ok');
    await s.disp.dispatch('db.query', {});
    s.setMode('fail');
    await s.disp.dispatch('db.query', {});
    await s.disp.dispatch('db.query', {});
    expect(s.breaker.state('db.query')).toBe('closed');
    await vi.advanceTimersByTimeAsync(10_001);
    await s.disp.dispatch('db.query', {});
    expect(s.breaker.state('db.query')).toBe('closed');
  });

  it('counts each attempt when placed inside retry', async () => {
    const registry = new ToolRegistry();
    const handler = vi.fn(async () => {
      throw new TransientError('busy');
    });
    registry.register({ name: 'db.query', inputSchema: z.object({}), handler });
    const breaker = circuitBreaker({ failureThreshold: 3 });
    const stack = defaultStack({ registry, retry: { random: () => 0 } });
    const at = stack.length - 1; // before timeout, inside retry
    stack.splice(at, 0, breaker);
    const disp = createDispatcher(stack);
    const p = disp.dispatch('db.query', {});
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await p).toMatchObject({ ok: false, attempts: 3 });
    expect(breaker.state('db.query')).toBe('open');
    const q = disp.dispatch('db.query', {});
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await q).toMatchObject({ ok: false, kind: 'circuit_open' });
    expect(handler).toHaveBeenCalledTimes(3);
  });

  it('key(ctx) partitions circuits (e.g. per backend)', async () => {
    const s = breakerSetup({
      key: (ctx) => `${ctx.toolName}:${(ctx.args as { backend?: string }).backend ?? 'a'}`,
    });
    // breaker sits before schema, so args are raw here
    for (let i = 0; i < 3; i++) await s.disp.dispatch('db.query', { backend: 'a' });
    expect(s.breaker.state('db.query:a')).toBe('open');
    expect(s.breaker.state('db.query:b')).toBe('closed');
    s.setMode('ok');
    expect(await s.disp.dispatch('db.query', { backend: 'b' })).toMatchObject({ ok: true });
    expect(await s.disp.dispatch('db.query', { backend: 'a' })).toMatchObject({ kind: 'circuit_open' });
  });

  it('isFailure customises what counts', async () => {
    const s = breakerSetup({ isFailure: (e) => e.kind === 'timeout' });
    for (let i = 0; i < 5; i++) await s.disp.dispatch('db.query', {});
    expect(s.breaker.state('db.query')).toBe('closed');
  });
});

describe('logging', () => {
  it('one JSON-serialisable record per event; retries warn, final failure error', async () => {
    const logger = fakeLogger();
    const registry = new ToolRegistry();
    registry.register({
      name: 't.flaky',
      inputSchema: z.object({}),
      handler: async () => {
        throw new TransientError('busy');
      },
    });
    const log = eventLog();
    const disp = createDispatcher(
      [logging({ logger }), ...defaultStack({ registry, retry: { random: () => 0 } })],
      {
        onEvent: log.onEvent,
      },
    );
    const p = disp.dispatch('t.flaky', {}, { callId: 'c-1' });
    await vi.advanceTimersByTimeAsync(1_000);
    await p;
    const all = [
      ...logger.debug.mock.calls,
      ...logger.info.mock.calls,
      ...logger.warn.mock.calls,
      ...logger.error.mock.calls,
    ].map((c) => c[0]);
    expect(all.length).toBe(log.events.length);
    for (const r of all) {
      expect(JSON.parse(JSON.stringify(r))).toEqual(r);
      expect(r).toMatchObject({ tool: 't.flaky', callId: 'c-1' });
      expect(typeof r.event).toBe('string');
      expect(typeof r.attempt).toBe('number');
      expect(typeof r.durationMs).toBe('number');
    }
    const warnEvents = logger.warn.mock.calls.map((c) => c[0].event);
    expect(warnEvents.filter((e: string) => e === 'dispatch.retry')).toHaveLength(2);
    const errorRecords = logger.error.mock.calls.map((c) => c[0]);
    expect(errorRecords).toHaveLength(1);
    expect(errorRecords[0]).toMatchObject({ event: 'dispatch.failure', kind: 'transient', attempt: 3 });
  });

  it('success is not logged as warn/error; timing is recorded from the fake clock', async () => {
    const logger = fakeLogger();
    const registry = new ToolRegistry();
    const g = gate<string>();
    registry.register({ name: 't.ok', inputSchema: z.object({}), handler: () => g.promise });
    const disp = createDispatcher([logging({ logger }), ...defaultStack({ registry })]);
    const p = disp.dispatch('t.ok', {});
    await vi.advanceTimersByTimeAsync(250);
    g.resolve('ok');
    await p;
    expect(logger.warn).not.toHaveBeenCalled();
    expect(logger.error).not.toHaveBeenCalled();
    const success = [...logger.info.mock.calls, ...logger.debug.mock.calls]
      .map((c) => c[0])
      .find((r) => r.event === 'dispatch.success');
    expect(success).toBeDefined();
    expect(success.durationMs).toBe(250);
  });

  it('a throwing logger never breaks a dispatch', async () => {
    const boom = () => {
      throw new Error('logger down');
    };
    const logger = { debug: boom, info: boom, warn: boom, error: boom };
    const registry = new ToolRegistry();
    registry.register({ name: 't.ok', inputSchema: z.object({}), handler: async () => 1 });
    const disp = createDispatcher([logging({ logger }), ...defaultStack({ registry })]);
    expect(await disp.dispatch('t.ok', {})).toMatchObject({ ok: true, result: 1 });
  });

  it('logging works placed anywhere in the stack (innermost too) and sees the final failure', async () => {
    const logger = fakeLogger();
    const registry = new ToolRegistry();
    registry.register({
      name: 't.bad',
      inputSchema: z.object({}),
      handler: async () => {
        throw new Error('x');
      },
    });
    const disp = createDispatcher([...defaultStack({ registry }), logging({ logger })]);
    await disp.dispatch('t.bad', {});
    expect(logger.error.mock.calls.map((c) => c[0].event)).toContain('dispatch.failure');
  });
});

describe('harnessStep / toToolMessage', () => {
  it('maps each outcome to the SPEC §4 hook', () => {
    expect(harnessStep({ ok: true, result: 1, attempts: 1 }, { maxAttempts: 3 })).toEqual({
      hook: 'none',
      replan: false,
    });
    for (const kind of ['schema', 'not_found']) {
      expect(harnessStep(new DispatchError(kind, 'x'), { maxAttempts: 3 })).toEqual({
        hook: 'on_error',
        replan: true,
      });
    }
    expect(harnessStep(new DispatchError('budget_exceeded', 'x'), { maxAttempts: 3 }).hook).toBe(
      'on_budget_exceeded',
    );
    for (const kind of ['timeout', 'transient']) {
      const exhausted = harnessStep(new DispatchError(kind, 'x', { attempts: 3 }), { maxAttempts: 3 });
      expect(exhausted).toEqual({ hook: 'on_error', replan: true });
      const step = harnessStep(new DispatchError(kind, 'x', { attempts: 1 }), { maxAttempts: 3 });
      expect(step.hook).toBe('on_error');
      expect(typeof step.replan).toBe('boolean');
    }
    expect(harnessStep(new DispatchError('internal', 'x', { attempts: 1 })).hook).toBe('on_error');
  });

  it('toToolMessage: compact, mentions the kind, no stack traces', async () => {
    const registry = new ToolRegistry();
    registry.register({
      name: 't.bad',
      inputSchema: z.object({ q: z.string() }),
      handler: async () => {
        throw new Error('database exploded');
      },
    });
    registry.register({ name: 't.ok', inputSchema: z.object({}), handler: async () => ({ rows: [1, 2] }) });
    const disp = createDispatcher(defaultStack({ registry }));
    const bad = await disp.dispatch('t.bad', { q: 'x' });
    const msg = toToolMessage(bad);
    expect(msg).toContain('internal');
    expect(msg).not.toMatch(/\n\s+at /);
    expect(msg).not.toContain('.ts:');
    const schemaMsg = toToolMessage(await disp.dispatch('t.bad', { q: 1 }));
    expect(schemaMsg).toContain('schema');
    expect(schemaMsg).toContain('q');
    const ok = toToolMessage(await disp.dispatch('t.ok', {}));
    expect(ok).toContain('rows');
  });
});

describe('custom stacks, compose and Koa compatibility', () => {
  it('Koa-style middleware runs in onion order, sees ctx.outcome after next()', async () => {
    const registry = new ToolRegistry();
    registry.register({ name: 't.ok', inputSchema: z.object({}), handler: async () => 'r' });
    const order: string[] = [];
    const outer: Middleware = async (ctx, next) => {
      order.push(`outer-in:${ctx.toolName}`);
      await next();
      order.push(`outer-out:${ctx.outcome?.ok}`);
    };
    const inner: Middleware = async (_ctx, next) => {
      order.push('inner-in');
      await next();
      order.push('inner-out');
    };
    const disp = createDispatcher([outer, ...defaultStack({ registry }), inner]);
    expect(await disp.dispatch('t.ok', {})).toMatchObject({ ok: true, result: 'r' });
    expect(order).toEqual(['outer-in:t.ok', 'inner-in', 'inner-out', 'outer-out:true']);
  });

  it('a middleware composed with koa-compose runs unchanged inside the stack', async () => {
    const registry = new ToolRegistry();
    registry.register({ name: 't.ok', inputSchema: z.object({}), handler: async () => 'r' });
    const seen: string[] = [];
    const koaSub = koaCompose<Parameters<Middleware>[0]>([
      async (ctx, next) => {
        seen.push('a:' + ctx.toolName);
        await next();
      },
      async (_ctx, next) => {
        seen.push('b');
        await next();
      },
    ]);
    const disp = createDispatcher([errorMapping(), koaSub, toolLookup(registry), schemaValidation()]);
    expect(await disp.dispatch('t.ok', {})).toMatchObject({ ok: true, result: 'r', attempts: 1 });
    expect(seen).toEqual(['a:t.ok', 'b']);
  });

  it('third-party middleware may short-circuit by throwing its own DispatchError kind', async () => {
    const registry = new ToolRegistry();
    const handler = vi.fn(async () => 1);
    registry.register({ name: 't.ok', inputSchema: z.object({}), handler });
    const rateLimit: Middleware = async () => {
      throw new DispatchError('rate_limited', 'too many calls', { cause: new Error('quota') });
    };
    const disp = createDispatcher([
      ...defaultStack({ registry }).slice(0, 2),
      rateLimit,
      ...defaultStack({ registry }).slice(2),
    ]);
    const out = await disp.dispatch('t.ok', {});
    expect(out).toMatchObject({
      ok: false,
      kind: 'rate_limited',
      message: 'too many calls',
      jsonrpcCode: -32603,
      attempts: 0,
    });
    if (!out.ok)
      expect(out.toJsonRpcError()).toEqual({
        code: -32603,
        message: 'too many calls',
        data: { kind: 'rate_limited', attempts: 0 },
      });
    expect(handler).not.toHaveBeenCalled();
  });

  it('anything thrown by a custom stack without errorMapping still becomes a DispatchError', async () => {
    const registry = new ToolRegistry();
    registry.register({
      name: 't.bad',
      inputSchema: z.object({}),
      handler: async () => {
        throw new Error('x');
      },
    });
    const boom: Middleware = async () => {
      throw 'not an error';
    };
    const d1 = createDispatcher([toolLookup(registry)]);
    expect(await d1.dispatch('t.bad', {})).toMatchObject({ ok: false, kind: 'internal', attempts: 1 });
    const d2 = createDispatcher([boom]);
    const out = await d2.dispatch('t.bad', {});
    expect(out.ok).toBe(false);
    expect(out).toBeInstanceOf(DispatchError);
    const d3 = createDispatcher([]);
    expect((await d3.dispatch('t.bad', {})).ok).toBe(false);
  });

  it('a stack without retry makes exactly one attempt', async () => {
    const registry = new ToolRegistry();
    const handler = vi.fn(async () => {
      throw new TransientError('x');
    });
    registry.register({ name: 't.f', inputSchema: z.object({}), handler });
    const disp = createDispatcher([errorMapping(), toolLookup(registry), schemaValidation(), timeout()]);
    expect(await disp.dispatch('t.f', {})).toMatchObject({ ok: false, kind: 'transient', attempts: 1 });
    expect(handler).toHaveBeenCalledTimes(1);
  });

  it('a custom middleware can call next() again after it settled (its own retry)', async () => {
    const registry = new ToolRegistry();
    let n = 0;
    registry.register({
      name: 't.f',
      inputSchema: z.object({}),
      handler: async () => {
        if (++n < 2) throw new TransientError('x');
        return 'second';
      },
    });
    const again: Middleware = async (ctx, next) => {
      try {
        await next();
      } catch {
        await next();
      }
      void ctx;
    };
    const disp = createDispatcher([errorMapping(), toolLookup(registry), schemaValidation(), again]);
    expect(await disp.dispatch('t.f', {})).toMatchObject({ ok: true, result: 'second', attempts: 2 });
  });

  it('compose(): koa-compose contract, plus sequential re-entry of next()', async () => {
    const calls: string[] = [];
    const fn = compose<{ n: number }>([
      async (ctx, next) => {
        calls.push('a');
        await next();
        await next();
        ctx.n++;
      },
      async (ctx) => {
        calls.push('b');
        ctx.n += 10;
      },
    ]);
    const ctx = { n: 0 };
    await fn(ctx);
    expect(calls).toEqual(['a', 'b', 'b']);
    expect(ctx.n).toBe(21);

    const concurrent = compose<object>([
      async (_ctx, next) => {
        await Promise.all([next(), next()]);
      },
      async () => {
        await Promise.resolve();
      },
    ]);
    await expect(concurrent({})).rejects.toThrow(/multiple/);

    const koaConcurrent = koaCompose<object>([
      async (_ctx, next) => {
        await Promise.all([next(), next()]);
      },
      async () => {},
    ]);
    await expect(koaConcurrent({})).rejects.toThrow(/multiple/);

    // final next passed to the composed function is called
    const last = vi.fn(async () => {});
    await compose<object>([
      async (_c, next) => {
        await next();
      },
    ])({}, last);
    expect(last).toHaveBeenCalledTimes(1);
    expect(() => compose([1 as never])).toThrow(TypeError);
  });

  it('layer factories can be used standalone in a reordered stack', async () => {
    const registry = new ToolRegistry();
    let n = 0;
    registry.register({ name: 't.x', inputSchema: z.object({}), handler: async () => ++n });
    const disp = createDispatcher([
      errorMapping(),
      toolLookup(registry),
      schemaValidation(),
      concurrencyLimit({ max: 2 }),
      idempotency(),
      retry({ maxAttempts: 2 }),
      timeout({ defaultMs: 1_000 }),
      budgetGuard(),
    ]);
    expect(await disp.dispatch('t.x', {}, { idempotencyKey: 'k' })).toMatchObject({ ok: true, result: 1 });
    expect(await disp.dispatch('t.x', {}, { idempotencyKey: 'k' })).toMatchObject({
      ok: true,
      result: 1,
      attempts: 0,
    });
  });
});

describe('more third-party middleware shapes', () => {
  function reg() {
    return new ToolRegistry()
      .register({ name: 't.x', inputSchema: z.object({}), handler: async () => 'real' })
      .register({
        name: 't.bad',
        inputSchema: z.object({}),
        handler: async () => {
          throw new Error('x');
        },
      });
  }

  it('a caching middleware can short-circuit by setting ctx.outcome without calling next()', async () => {
    const registry = reg();
    const cache: Middleware = async (ctx) => {
      ctx.outcome = { ok: true, result: 'cached', attempts: 0 };
    };
    expect(await createDispatcher([cache, ...defaultStack({ registry })]).dispatch('t.x', {})).toEqual({
      ok: true,
      result: 'cached',
      attempts: 0,
    });
    expect(
      await createDispatcher([...defaultStack({ registry }).slice(0, 3), cache]).dispatch('t.x', {}),
    ).toMatchObject({ result: 'cached' });
  });

  it('a middleware that neither calls next() nor sets an outcome yields an internal envelope', async () => {
    const out = await createDispatcher([async () => {}, ...defaultStack({ registry: reg() })]).dispatch(
      't.x',
      {},
    );
    expect(out).toMatchObject({ ok: false, kind: 'internal' });
  });

  it('sync Koa-style middleware (returns next()) and sync throwers work', async () => {
    const registry = reg();
    const syncMw = ((ctx: { state: Record<string, unknown> }, next: () => Promise<void>) => {
      ctx.state.x = 1;
      return next();
    }) as unknown as Middleware;
    expect(await createDispatcher([syncMw, ...defaultStack({ registry })]).dispatch('t.x', {})).toMatchObject(
      { ok: true, result: 'real' },
    );
    const syncThrow = (() => {
      throw new Error('sync mw');
    }) as unknown as Middleware;
    expect(
      await createDispatcher([syncThrow, ...defaultStack({ registry })]).dispatch('t.x', {}),
    ).toMatchObject({ ok: false, kind: 'internal' });
  });

  it('a fallback middleware inside errorMapping can catch and replace a failure', async () => {
    const registry = reg();
    const fallback: Middleware = async (ctx, next) => {
      try {
        await next();
      } catch {
        ctx.outcome = { ok: true, result: 'fallback', attempts: 0 };
      }
    };
    const stack = defaultStack({ registry });
    const disp = createDispatcher([...stack.slice(0, 2), fallback, ...stack.slice(2)]);
    expect(await disp.dispatch('t.bad', {})).toMatchObject({ ok: true, result: 'fallback' });
  });

  it('a handler throwing a DispatchError (e.g. from a nested dispatcher) is internal, not that kind', async () => {
    const registry = new ToolRegistry();
    for (const kind of ['timeout', 'schema', 'not_found', 'budget_exceeded']) {
      registry.register({
        name: `nested.${kind}`,
        inputSchema: z.object({}),
        idempotent: true,
        handler: async () => {
          throw new DispatchError(kind, 'inner');
        },
      });
    }
    const disp = createDispatcher(defaultStack({ registry }));
    for (const kind of ['timeout', 'schema', 'not_found', 'budget_exceeded']) {
      const p = disp.dispatch(`nested.${kind}`, {});
      await vi.advanceTimersByTimeAsync(1_000);
      expect(await p).toMatchObject({ ok: false, kind: 'internal', attempts: 1 });
    }
  });

  it('circuitBreaker outside retry still counts each attempt', async () => {
    const registry = new ToolRegistry().register({
      name: 'db.q',
      inputSchema: z.object({}),
      handler: async () => {
        throw new TransientError('busy');
      },
    });
    const breaker = circuitBreaker({ failureThreshold: 3 });
    const stack = defaultStack({ registry, retry: { random: () => 0 } });
    stack.splice(1, 0, breaker);
    const disp = createDispatcher(stack);
    const p = disp.dispatch('db.q', {});
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await p).toMatchObject({ kind: 'transient', attempts: 3 });
    expect(breaker.state('db.q')).toBe('open');
    expect(breaker.snapshot()['db.q']).toMatchObject({ state: 'open', failures: 3 });
  });
});
