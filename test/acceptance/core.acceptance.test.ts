import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  DispatchError,
  ToolRegistry,
  TransientError,
  createBudget,
  createDispatcher,
  defaultStack,
  isDispatchError,
  type StandardSchemaV1,
} from '../../index.js';
import { flush, useFake, setup } from './helpers.js';

beforeEach(() => useFake());
afterEach(() => {
  vi.useRealTimers();
});

describe('registry', () => {
  it('register returns the registry, description defaults to empty, get/has work', () => {
    const registry = new ToolRegistry();
    const returned = registry.register({
      name: 'db.get_user',
      inputSchema: z.object({ id: z.string() }),
      handler: async () => 1,
    });
    expect(returned).toBe(registry);
    expect(registry.has('db.get_user')).toBe(true);
    const tool = registry.get('db.get_user');
    expect(tool?.name).toBe('db.get_user');
    expect(tool?.description).toBe('');
    expect(tool?.idempotent).toBe(false);
    expect(registry.get('nope')).toBeUndefined();
  });

  it('duplicate name throws unless { override: true }, and override replaces the handler', async () => {
    const registry = new ToolRegistry();
    const schema = z.object({});
    registry.register({ name: 'a.b', inputSchema: schema, handler: async () => 'first' });
    expect(() =>
      registry.register({ name: 'a.b', inputSchema: schema, handler: async () => 'dup' }),
    ).toThrow();
    registry.register(
      { name: 'a.b', inputSchema: schema, handler: async () => 'second' },
      { override: true },
    );
    const d = createDispatcher(defaultStack({ registry }));
    const out = await d.dispatch('a.b', {});
    expect(out).toMatchObject({ ok: true, result: 'second', attempts: 1 });
  });

  it('Object.prototype names are unknown tools', async () => {
    const registry = new ToolRegistry();
    for (const n of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      expect(registry.has(n)).toBe(false);
      expect(registry.get(n)).toBeUndefined();
    }
    const d = createDispatcher(defaultStack({ registry }));
    for (const n of ['__proto__', 'constructor', 'toString']) {
      const out = await d.dispatch(n, {});
      expect(out.ok).toBe(false);
      if (!out.ok) {
        expect(out.kind).toBe('not_found');
        expect(out.jsonrpcCode).toBe(-32601);
        expect(out.attempts).toBe(0);
      }
    }
  });

  it('list() gives JSON Schema for inputs plus defaults', () => {
    const registry = new ToolRegistry()
      .register({
        name: 'search.web',
        description: 'Search the web',
        inputSchema: z.object({ query: z.string(), limit: z.number().optional() }),
        idempotent: true,
        timeoutMs: 5_000,
        handler: async () => [],
      })
      .register({ name: 'db.write', inputSchema: z.object({ row: z.string() }), handler: async () => 1 });
    const list = registry.list();
    expect(list).toHaveLength(2);
    const search = list.find((t) => t.name === 'search.web')!;
    expect(search).toMatchObject({ description: 'Search the web', idempotent: true, timeoutMs: 5_000 });
    expect(search.inputSchema).toMatchObject({ type: 'object', properties: { query: { type: 'string' } } });
    expect(search.inputSchema.required).toEqual(['query']);
    const write = list.find((t) => t.name === 'db.write')!;
    expect(write).toMatchObject({ description: '', idempotent: false, timeoutMs: undefined });
    // JSON-serialisable for a model's tool list
    expect(() => JSON.stringify(list)).not.toThrow();
  });
});

describe('one dispatch: success, context, events', () => {
  it('resolves { ok, result, attempts } and the handler gets parsed args and a ToolContext', async () => {
    const { registry, log, make } = setup();
    const seen: unknown[] = [];
    registry.register({
      name: 'search.web',
      inputSchema: z.object({
        query: z.string().transform((s) => s.toUpperCase()),
        limit: z.number().default(5),
      }),
      handler: async (args, ctx) => {
        seen.push(args, ctx.attempt, ctx.idempotencyKey, ctx.callId, ctx.signal instanceof AbortSignal);
        return { hits: args.limit };
      },
    });
    const out = await make().dispatch(
      'search.web',
      { query: 'x' },
      { idempotencyKey: 'k1', callId: 'call-42' },
    );
    expect(out).toEqual(expect.objectContaining({ ok: true, result: { hits: 5 }, attempts: 1 }));
    expect(seen).toEqual([{ query: 'X', limit: 5 }, 1, 'k1', 'call-42', true]);
    const types = log.types();
    expect(types).toContain('dispatch.attempt');
    expect(types).toContain('dispatch.success');
    for (const e of log.events) {
      expect(e.tool).toBe('search.web');
      expect(e.callId).toBe('call-42');
      expect(typeof e.attempt).toBe('number');
    }
    // idempotencyKey is undefined when not given; callId generated
    const out2 = await make().dispatch('search.web', { query: 'y' });
    expect(out2.ok).toBe(true);
    expect(seen[7]).toBeUndefined();
    expect(typeof seen[8]).toBe('string');
    expect((seen[8] as string).length).toBeGreaterThan(0);
  });

  it('a throwing onEvent never breaks a dispatch', async () => {
    const registry = new ToolRegistry().register({
      name: 't.ok',
      inputSchema: z.object({}),
      handler: async () => 7,
    });
    const d = createDispatcher(defaultStack({ registry }), {
      onEvent: () => {
        throw new Error('listener boom');
      },
    });
    expect(await d.dispatch('t.ok', {})).toMatchObject({ ok: true, result: 7 });
    expect(await d.dispatch('nope', {})).toMatchObject({ ok: false, kind: 'not_found' });
  });

  it('no timers and no abort listeners are left behind after a success', async () => {
    const { EventEmitter } = await import('node:events');
    const getEventListeners = EventEmitter.getEventListeners;
    const registry = new ToolRegistry().register({
      name: 't.ok',
      inputSchema: z.object({}),
      handler: async () => 7,
    });
    const d = createDispatcher(defaultStack({ registry }));
    const ac = new AbortController();
    const out = await d.dispatch('t.ok', {}, { signal: ac.signal, idempotencyKey: 'k' });
    expect(out.ok).toBe(true);
    await flush();
    expect(vi.getTimerCount()).toBe(0);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  });
});

describe('schema layer', () => {
  it('invalid args: kind schema, -32602, attempts 0, every issue with its path, handler never called', async () => {
    const { registry, make } = setup();
    const handler = vi.fn(async () => 1);
    registry.register({
      name: 'db.put',
      inputSchema: z.object({
        query: z.string(),
        limit: z.number(),
        nested: z.object({ inner: z.string() }),
      }),
      handler,
    });
    const out = await make().dispatch('db.put', { query: 1, limit: 'x', nested: { inner: 2 } });
    expect(out.ok).toBe(false);
    if (out.ok) return;
    expect(out.kind).toBe('schema');
    expect(out.jsonrpcCode).toBe(-32602);
    expect(out.attempts).toBe(0);
    expect(out.message).toContain('query');
    expect(out.message).toContain('limit');
    expect(out.message).toMatch(/nested.{0,3}inner/);
    expect(handler).not.toHaveBeenCalled();
  });

  it.each([
    ['a string', 'hello'],
    ['null', null],
    ['a number', 3],
    ['undefined', undefined],
  ])('non-object args (%s) are kind schema', async (_label, args) => {
    const { registry, make } = setup();
    const handler = vi.fn(async () => 1);
    registry.register({ name: 't.x', inputSchema: z.object({}).passthrough(), handler });
    const out = await make().dispatch('t.x', args);
    expect(out).toMatchObject({ ok: false, kind: 'schema', attempts: 0 });
    expect(handler).not.toHaveBeenCalled();
  });

  it('cyclic args are kind schema, and the dispatcher keeps working', async () => {
    const { registry, make } = setup();
    registry.register({ name: 't.x', inputSchema: z.any(), handler: async () => 'fine' });
    const d = make();
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(await d.dispatch('t.x', cyclic)).toMatchObject({ ok: false, kind: 'schema' });
    expect(await d.dispatch('t.x', { a: 1 })).toMatchObject({ ok: true, result: 'fine' });
  });

  it('a non-zod Standard Schema v1 validator works (sync and async), and issues become schema errors', async () => {
    const sync: StandardSchemaV1<unknown, { n: number }> = {
      '~standard': {
        version: 1,
        vendor: 'hand-rolled',
        validate: (value: unknown) => {
          const v = value as { n?: unknown } | null;
          return v && typeof v === 'object' && typeof v.n === 'number'
            ? { value: { n: v.n * 2 } }
            : { issues: [{ message: 'n must be a number', path: ['n'] }] };
        },
      },
    };
    const asyncSchema: StandardSchemaV1<unknown, { s: string }> = {
      '~standard': {
        version: 1,
        vendor: 'hand-rolled-async',
        validate: async (value: unknown) => {
          const v = value as { s?: unknown };
          return typeof v?.s === 'string'
            ? { value: { s: v.s + '!' } }
            : { issues: [{ message: 'need s', path: [{ key: 's' }] }] };
        },
      },
    };
    const registry = new ToolRegistry()
      .register({ name: 'std.sync', inputSchema: sync, handler: async (a) => a.n })
      .register({ name: 'std.async', inputSchema: asyncSchema, handler: async (a) => a.s });
    const d = createDispatcher(defaultStack({ registry }));
    expect(await d.dispatch('std.sync', { n: 21 })).toMatchObject({ ok: true, result: 42 });
    expect(await d.dispatch('std.async', { s: 'hi' })).toMatchObject({ ok: true, result: 'hi!' });
    const bad = await d.dispatch('std.sync', { n: 'x' });
    expect(bad).toMatchObject({ ok: false, kind: 'schema', attempts: 0 });
    if (!bad.ok) expect(bad.message).toContain('n must be a number');
    const bad2 = await d.dispatch('std.async', {});
    expect(bad2).toMatchObject({ ok: false, kind: 'schema' });
    if (!bad2.ok) expect(bad2.message).toContain('need s');
    expect(() => registry.list()).not.toThrow();
  });

  it.each([
    ['timeoutMs 0', { timeoutMs: 0 }],
    ['timeoutMs -1', { timeoutMs: -1 }],
    ['timeoutMs NaN', { timeoutMs: Number.NaN }],
    ['empty idempotencyKey', { idempotencyKey: '' }],
  ])('bad per-call option (%s) is kind schema and the handler is not called', async (_l, options) => {
    const { registry, make } = setup();
    const handler = vi.fn(async () => 1);
    registry.register({ name: 't.x', inputSchema: z.object({}), handler });
    const out = await make().dispatch('t.x', {}, options);
    expect(out).toMatchObject({ ok: false, kind: 'schema' });
    expect(handler).not.toHaveBeenCalled();
  });
});

describe('handler errors map to envelopes', () => {
  it.each([
    ['an Error', () => Promise.reject(new Error('boom'))],
    [
      'a sync throw',
      () => {
        throw new Error('sync boom');
      },
    ],
    ['a string', () => Promise.reject('just a string')],
    ['undefined', () => Promise.reject(undefined)],
    ['a plain object', () => Promise.reject({ code: 42 })],
    [
      'a rejected thenable',
      () => ({ then: (_: unknown, rej: (e: unknown) => void) => rej(new Error('thenable')) }),
    ],
  ])('%s → internal, attempts 1, never retried, no stack in message', async (_label, h) => {
    const { registry, make } = setup();
    const handler = vi.fn(h as () => Promise<unknown>);
    registry.register({ name: 't.bad', inputSchema: z.object({}), idempotent: true, handler });
    const p = make().dispatch('t.bad', {});
    await vi.advanceTimersByTimeAsync(5_000);
    const out = await p;
    expect(out.ok).toBe(false);
    if (out.ok) return;
    expect(out.kind).toBe('internal');
    expect(out.jsonrpcCode).toBe(-32603);
    expect(out.attempts).toBe(1);
    expect(handler).toHaveBeenCalledTimes(1);
    expect(out.message).not.toMatch(/\n\s+at /);
    expect(out.toJsonRpcError().message).not.toMatch(/\n\s+at /);
  });

  it('TransientError is retried to 3 attempts in total, then kind transient', async () => {
    const { registry, make } = setup();
    const handler = vi.fn(async () => {
      throw new TransientError('busy');
    });
    registry.register({ name: 't.flaky', inputSchema: z.object({}), handler });
    const p = make().dispatch('t.flaky', {});
    await vi.advanceTimersByTimeAsync(10_000);
    expect(await p).toMatchObject({ ok: false, kind: 'transient', attempts: 3, jsonrpcCode: -32603 });
    expect(handler).toHaveBeenCalledTimes(3);
  });
});

describe('DispatchError and the JSON-RPC shape', () => {
  it('third-party construction derives the code from the kind, defaults attempts to 0', () => {
    const e = new DispatchError('schema', 'bad args');
    expect(e).toBeInstanceOf(Error);
    expect(e).toBeInstanceOf(DispatchError);
    expect(e.ok).toBe(false);
    expect(e.kind).toBe('schema');
    expect(e.message).toBe('bad args');
    expect(e.attempts).toBe(0);
    expect(e.jsonrpcCode).toBe(-32602);
    expect(isDispatchError(e)).toBe(true);
    expect(isDispatchError(new Error('x'))).toBe(false);
    expect(isDispatchError({ ok: false, kind: 'schema' })).toBe(false);

    const cause = new Error('root');
    const custom = new DispatchError('rate_limited', 'slow down', { attempts: 2, cause });
    expect(custom.jsonrpcCode).toBe(-32603);
    expect(custom.attempts).toBe(2);
    expect(custom.cause).toBe(cause);

    const explicit = new DispatchError('quota', 'bad quota arg', { jsonrpcCode: -32602 });
    expect(explicit.jsonrpcCode).toBe(-32602);

    expect(new DispatchError('not_found', 'x').jsonrpcCode).toBe(-32601);
    expect(new DispatchError('idempotency_conflict', 'x').jsonrpcCode).toBe(-32602);
    for (const k of ['timeout', 'transient', 'internal', 'budget_exceeded', 'circuit_open', 'cancelled']) {
      expect(new DispatchError(k, 'x').jsonrpcCode).toBe(-32603);
    }
  });

  it('keeps a third-party DispatchError within the three JSON-RPC codes (SPEC §4)', () => {
    // A JS middleware author passing a server-range code or garbage should get a TypeError or the
    // derived code, never an envelope whose toJsonRpcError() has a non-conforming `code`.
    for (const bad of [-32000, -1, 'x', 3.5]) {
      let e: DispatchError | undefined;
      try {
        e = new DispatchError('rate_limited', 'slow down', { jsonrpcCode: bad as never });
      } catch (error) {
        expect(error).toBeInstanceOf(TypeError);
        continue;
      }
      expect([-32601, -32602, -32603]).toContain(e.jsonrpcCode);
      expect([-32601, -32602, -32603]).toContain(e.toJsonRpcError().code);
    }
  });

  it('toJsonRpcError() is { code, message, data: { kind, attempts } }', () => {
    const e = new DispatchError('transient', 'gave up', { attempts: 3 });
    expect(e.toJsonRpcError()).toEqual({
      code: -32603,
      message: 'gave up',
      data: { kind: 'transient', attempts: 3 },
    });
    expect(JSON.parse(JSON.stringify(e.toJsonRpcError()))).toEqual(e.toJsonRpcError());
  });

  it('a dispatched envelope is a DispatchError with a cause', async () => {
    const { registry, make } = setup();
    const root = new Error('root cause');
    registry.register({
      name: 't.bad',
      inputSchema: z.object({}),
      handler: async () => {
        throw root;
      },
    });
    const out = await make().dispatch('t.bad', {});
    expect(out).toBeInstanceOf(DispatchError);
    expect(isDispatchError(out)).toBe(true);
    if (!out.ok) expect(out.cause).toBe(root);
  });
});

describe('budget', () => {
  it('createBudget: remaining, limit, tryConsume, TypeError for negative/NaN', () => {
    const b = createBudget(3);
    expect(b.limit).toBe(3);
    expect(b.remaining).toBe(3);
    expect(b.tryConsume()).toBe(true);
    expect(b.tryConsume(2)).toBe(true);
    expect(b.remaining).toBe(0);
    expect(b.tryConsume()).toBe(false);
    expect(b.remaining).toBe(0);
    expect(() => createBudget(-1)).toThrow(TypeError);
    expect(() => createBudget(Number.NaN)).toThrow(TypeError);
    expect(createBudget(0).remaining).toBe(0);
  });

  it.each([0, -1])('budget %d fails fast with budget_exceeded, attempts 0', async (budget) => {
    const { registry, make } = setup();
    const handler = vi.fn(async () => 1);
    registry.register({ name: 't.x', inputSchema: z.object({}), handler });
    const out = await make().dispatch('t.x', {}, { budget });
    expect(out).toMatchObject({ ok: false, kind: 'budget_exceeded', attempts: 0, jsonrpcCode: -32603 });
    expect(handler).not.toHaveBeenCalled();
  });

  it('a shared budget that runs out stops the retry loop with the attempts made so far', async () => {
    const { registry, make } = setup();
    const handler = vi.fn(async () => {
      throw new TransientError('busy');
    });
    registry.register({ name: 't.flaky', inputSchema: z.object({}), handler });
    const budget = createBudget(2);
    const p = make().dispatch('t.flaky', {}, { budget });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(await p).toMatchObject({ ok: false, kind: 'budget_exceeded', attempts: 2 });
    expect(handler).toHaveBeenCalledTimes(2);
    expect(budget.remaining).toBe(0);
  });

  it("a number budget is this dispatch's own and each attempt uses a unit", async () => {
    const { registry, make } = setup();
    let n = 0;
    registry.register({
      name: 't.flaky',
      inputSchema: z.object({}),
      handler: async () => {
        n++;
        throw new TransientError('busy');
      },
    });
    const d = make();
    const p1 = d.dispatch('t.flaky', {}, { budget: 1 });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(await p1).toMatchObject({ ok: false, kind: 'budget_exceeded', attempts: 1 });
    // a second dispatch with its own number budget is not affected by the first
    const p2 = d.dispatch('t.flaky', {}, { budget: 5 });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(await p2).toMatchObject({ ok: false, kind: 'transient', attempts: 3 });
    expect(n).toBe(4);
  });

  it('a shared budget is never overspent by concurrent dispatches', async () => {
    const { registry, make } = setup();
    const handler = vi.fn(async () => 'ok');
    registry.register({ name: 't.x', inputSchema: z.object({}), handler });
    const d = make();
    const budget = createBudget(3);
    const outs = await Promise.all(Array.from({ length: 10 }, () => d.dispatch('t.x', {}, { budget })));
    expect(outs.filter((o) => o.ok)).toHaveLength(3);
    expect(outs.filter((o) => !o.ok && o.kind === 'budget_exceeded')).toHaveLength(7);
    expect(handler).toHaveBeenCalledTimes(3);
    expect(budget.remaining).toBe(0);
  });
});
