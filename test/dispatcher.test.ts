import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createBudget,
  createDispatcher,
  defaultStack,
  DispatchError,
  errorMapping,
  isDispatchError,
  retry,
  ToolRegistry,
  toolLookup,
  TransientError,
  type Middleware,
  type Outcome,
  type ToolContext,
} from '../index.js';
import { flush, gate } from './helpers/gate.js';
import { setup } from './helpers/dispatcher.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

function failure(outcome: Outcome): DispatchError {
  if (outcome.ok) throw new Error(`expected a failure, got ${JSON.stringify(outcome)}`);
  return outcome;
}

describe('dispatch: success', () => {
  it('resolves to the result and one attempt', async () => {
    const { dispatcher } = setup();
    await expect(dispatcher.dispatch('search.web', { query: 'x' })).resolves.toEqual({
      ok: true,
      result: 'result:x',
      attempts: 1,
    });
  });

  it('hands the handler the parsed args and its context', async () => {
    let seen: { args: unknown; ctx: ToolContext } | undefined;
    const registry = new ToolRegistry().register({
      name: 'db.get_user',
      inputSchema: z.object({ id: z.string(), limit: z.number().default(10) }),
      handler: (args, ctx) => {
        seen = { args, ctx };
        return args.id;
      },
    });
    const dispatcher = createDispatcher(defaultStack({ registry }));
    await dispatcher.dispatch(
      'db.get_user',
      { id: 'u1', extra: true },
      { idempotencyKey: 'k1', callId: 'tc_1' },
    );
    expect(seen?.args).toEqual({ id: 'u1', limit: 10 });
    expect(seen?.ctx).toMatchObject({ attempt: 1, idempotencyKey: 'k1', callId: 'tc_1' });
    expect(seen?.ctx.signal).toBeInstanceOf(AbortSignal);
  });

  it('gives each dispatch its own call id when none is passed', async () => {
    const ids: string[] = [];
    const { dispatcher } = setup({ handler: (_args, ctx) => ids.push(ctx.callId) });
    await dispatcher.dispatch('search.web', { query: 'a' });
    await dispatcher.dispatch('search.web', { query: 'b' });
    expect(new Set(ids).size).toBe(2);
  });

  it('accepts handlers that return synchronously', async () => {
    const { dispatcher } = setup({ handler: () => 7 });
    await expect(dispatcher.dispatch('search.web', { query: 'x' })).resolves.toMatchObject({ result: 7 });
  });
});

describe('dispatch: lookup and schema', () => {
  it.each(['nope', '__proto__', 'constructor', 'toString', 'hasOwnProperty'])(
    'reports %s as not_found with 0 attempts and code -32601',
    async (name) => {
      const { dispatcher, calls } = setup();
      const outcome = failure(await dispatcher.dispatch(name, { query: 'x' }));
      expect(outcome).toMatchObject({ ok: false, kind: 'not_found', attempts: 0, jsonrpcCode: -32601 });
      expect(calls).toHaveLength(0);
    },
  );

  it('lists every schema issue with its path and never calls the handler', async () => {
    const { dispatcher, calls } = setup();
    const outcome = failure(await dispatcher.dispatch('search.web', { query: 1, limit: 'ten' }));
    expect(outcome).toMatchObject({ kind: 'schema', attempts: 0, jsonrpcCode: -32602 });
    expect(outcome.message).toMatch(/query: .*expected string/);
    expect(outcome.message).toMatch(/limit: .*expected number/);
    expect(calls).toHaveLength(0);
  });

  it('gives nested issue paths with dots and indexes', async () => {
    const registry = new ToolRegistry().register({
      name: 'batch.run',
      inputSchema: z.object({ items: z.array(z.object({ id: z.string() })) }),
      handler: () => 'ok',
    });
    const dispatcher = createDispatcher(defaultStack({ registry }));
    const outcome = failure(await dispatcher.dispatch('batch.run', { items: [{ id: 'a' }, { id: 2 }] }));
    expect(outcome.message).toContain('items[1].id:');
  });

  it.each([
    ['null', null],
    ['an array', [1]],
    ['a string', 'x'],
    ['undefined', undefined],
  ])('rejects args that are %s as schema', async (_label, args) => {
    const { dispatcher } = setup();
    expect(failure(await dispatcher.dispatch('search.web', args))).toMatchObject({ kind: 'schema' });
  });

  it('rejects cyclic args as schema', async () => {
    const { dispatcher, calls } = setup();
    const args: Record<string, unknown> = { query: 'x' };
    args.self = args;
    expect(failure(await dispatcher.dispatch('search.web', args)).message).toMatch(/cycle/);
    expect(calls).toHaveLength(0);
  });

  it.each([
    ['timeoutMs 0', { timeoutMs: 0 }],
    ['timeoutMs -1', { timeoutMs: -1 }],
    ['timeoutMs NaN', { timeoutMs: Number.NaN }],
    ['an empty idempotencyKey', { idempotencyKey: '' }],
    ['budget NaN', { budget: Number.NaN }],
    ['a signal that is not an AbortSignal', { signal: {} }],
  ])('rejects %s as schema', async (_label, options) => {
    const { dispatcher, calls } = setup();
    const outcome = failure(await dispatcher.dispatch('search.web', { query: 'x' }, options as never));
    expect(outcome).toMatchObject({ kind: 'schema', attempts: 0, jsonrpcCode: -32602 });
    expect(calls).toHaveLength(0);
  });
});

describe('dispatch: handler failures', () => {
  it('maps a thrown Error to internal, not retried, code -32603', async () => {
    const { dispatcher, calls } = setup({
      handler: () => {
        throw new Error('boom');
      },
    });
    const outcome = failure(await dispatcher.dispatch('search.web', { query: 'x' }));
    expect(outcome).toMatchObject({ kind: 'internal', attempts: 1, jsonrpcCode: -32603, message: 'boom' });
    expect(calls).toHaveLength(1);
  });

  it('maps thrown non-Error values to internal', async () => {
    const { dispatcher } = setup({
      handler: async () => {
        throw { code: 42 };
      },
    });
    const outcome = failure(await dispatcher.dispatch('search.web', { query: 'x' }));
    expect(outcome).toMatchObject({ kind: 'internal', message: '{"code":42}' });
    expect(outcome.cause).toEqual({ code: 42 });
  });

  it('never puts a stack trace in the JSON-RPC error', async () => {
    const { dispatcher } = setup({
      handler: () => {
        throw new Error('boom');
      },
    });
    const rpc = failure(await dispatcher.dispatch('search.web', { query: 'x' })).toJsonRpcError();
    expect(rpc).toEqual({ code: -32603, message: 'boom', data: { kind: 'internal', attempts: 1 } });
    expect(JSON.stringify(failure(await dispatcher.dispatch('search.web', { query: 'y' })))).not.toMatch(
      /\n\s+at /,
    );
  });
});

describe('dispatch: retry inside the default stack', () => {
  it('retries a transient failure and reports the attempts', async () => {
    let failures = 2;
    const { dispatcher, eventTypes } = setup({
      handler: () => {
        if (failures-- > 0) throw new TransientError('busy');
        return 'ok';
      },
    });
    const pending = dispatcher.dispatch('search.web', { query: 'x' });
    await vi.runAllTimersAsync();
    await expect(pending).resolves.toEqual({ ok: true, result: 'ok', attempts: 3 });
    expect(eventTypes().filter((type) => type === 'dispatch.retry')).toHaveLength(2);
  });

  it('ends with transient and 3 attempts when every attempt fails', async () => {
    const { dispatcher, calls } = setup({
      handler: () => {
        throw new TransientError('busy');
      },
    });
    const pending = dispatcher.dispatch('search.web', { query: 'x' });
    await vi.runAllTimersAsync();
    expect(failure(await pending)).toMatchObject({ kind: 'transient', attempts: 3, jsonrpcCode: -32603 });
    expect(calls).toHaveLength(3);
  });

  it('waits 100 ms then 400 ms (random 0) before attempts 2 and 3', async () => {
    const startedAt: number[] = [];
    const { dispatcher } = setup({
      handler: () => {
        startedAt.push(Date.now());
        throw new TransientError('busy');
      },
    });
    const t0 = Date.now();
    const pending = dispatcher.dispatch('search.web', { query: 'x' });
    await vi.runAllTimersAsync();
    await pending;
    expect(startedAt.map((t) => t - t0)).toEqual([0, 100, 500]);
  });

  it('retries a timeout for idempotent tools only', async () => {
    const hang = () => new Promise<never>(() => {});
    const idempotent = setup({ idempotent: true, timeoutMs: 50, handler: hang });
    const write = setup({ idempotent: false, timeoutMs: 50, handler: hang });
    const a = idempotent.dispatcher.dispatch('search.web', { query: 'x' });
    const b = write.dispatcher.dispatch('search.web', { query: 'x' });
    await vi.runAllTimersAsync();
    expect(failure(await a)).toMatchObject({ kind: 'timeout', attempts: 3 });
    expect(failure(await b)).toMatchObject({ kind: 'timeout', attempts: 1 });
    expect(write.calls).toHaveLength(1);
  });
});

describe('dispatch: timeout', () => {
  it('aborts the attempt signal and ignores the late outcome', async () => {
    const unhandled = vi.fn();
    process.on('unhandledRejection', unhandled);
    const late = gate<string>();
    let signal: AbortSignal | undefined;
    const { dispatcher } = setup({
      idempotent: false,
      timeoutMs: 1_000,
      handler: (_args, ctx) => {
        signal = ctx.signal;
        return late.promise;
      },
    });
    const pending = dispatcher.dispatch('search.web', { query: 'x' });
    await vi.advanceTimersByTimeAsync(1_000);
    const outcome = failure(await pending);
    expect(outcome).toMatchObject({ kind: 'timeout', attempts: 1 });
    expect(signal?.aborted).toBe(true);
    late.fail(new Error('too late'));
    vi.useRealTimers();
    // Node reports unhandled rejections after the microtask queue drains: give it a real turn.
    await new Promise((resolve) => setImmediate(resolve));
    process.off('unhandledRejection', unhandled);
    expect(unhandled).not.toHaveBeenCalled();
  });

  it('prefers the call override, then the tool, then the layer default', async () => {
    const hang = () => new Promise<never>(() => {});
    const registry = new ToolRegistry()
      .register({ name: 'own', inputSchema: z.object({}), timeoutMs: 200, handler: hang })
      .register({ name: 'plain', inputSchema: z.object({}), handler: hang });
    const dispatcher = createDispatcher(
      defaultStack({ registry, timeout: { defaultMs: 300 }, retry: { maxAttempts: 1 } }),
    );
    const settledAt: Record<string, number> = {};
    const t0 = Date.now();
    const track = (label: string, promise: Promise<Outcome>) =>
      promise.then(() => {
        settledAt[label] = Date.now() - t0;
      });
    const all = Promise.all([
      track('override', dispatcher.dispatch('own', {}, { timeoutMs: 100 })),
      track('tool', dispatcher.dispatch('own', {})),
      track('default', dispatcher.dispatch('plain', {})),
    ]);
    await vi.advanceTimersByTimeAsync(300);
    await all;
    expect(settledAt).toEqual({ override: 100, tool: 200, default: 300 });
  });

  it('treats timeoutMs Infinity as no timeout', async () => {
    const release = gate<string>();
    const { dispatcher } = setup({ handler: () => release.promise });
    const pending = dispatcher.dispatch('search.web', { query: 'x' }, { timeoutMs: Infinity });
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    release.open('late but fine');
    await expect(pending).resolves.toMatchObject({ ok: true, result: 'late but fine' });
  });

  it('does not report a handler’s own timeout error as a dispatcher timeout', async () => {
    const { dispatcher, calls } = setup({
      handler: () => {
        throw new DispatchError('timeout', 'upstream said timeout');
      },
    });
    const outcome = failure(await dispatcher.dispatch('search.web', { query: 'x' }));
    expect(outcome.kind).toBe('internal');
    expect(calls).toHaveLength(1);
  });
});

describe('dispatch: cancellation', () => {
  it('ends an already-aborted call at once with cancelled', async () => {
    const { dispatcher, calls } = setup();
    const outcome = failure(
      await dispatcher.dispatch('search.web', { query: 'x' }, { signal: AbortSignal.abort() }),
    );
    expect(outcome).toMatchObject({ kind: 'cancelled', attempts: 0, jsonrpcCode: -32603 });
    expect(calls).toHaveLength(0);
  });

  it('ends a running attempt at once and aborts the handler signal', async () => {
    let signal: AbortSignal | undefined;
    const { dispatcher } = setup({
      handler: (_args, ctx) => {
        signal = ctx.signal;
        return new Promise<never>(() => {});
      },
    });
    const caller = new AbortController();
    const pending = dispatcher.dispatch('search.web', { query: 'x' }, { signal: caller.signal });
    await flush();
    caller.abort();
    expect(failure(await pending)).toMatchObject({ kind: 'cancelled', attempts: 1 });
    expect(signal?.aborted).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('ends a backoff wait at once and leaves no timer behind', async () => {
    const { dispatcher, calls } = setup({
      handler: () => {
        throw new TransientError('busy');
      },
    });
    const caller = new AbortController();
    const pending = dispatcher.dispatch('search.web', { query: 'x' }, { signal: caller.signal });
    await flush();
    expect(vi.getTimerCount()).toBe(1);
    caller.abort();
    expect(failure(await pending)).toMatchObject({ kind: 'cancelled', attempts: 1 });
    expect(vi.getTimerCount()).toBe(0);
    expect(calls).toHaveLength(1);
  });
});

describe('dispatch: budget', () => {
  it('fails fast with budget_exceeded for a number <= 0', async () => {
    const { dispatcher, calls } = setup();
    for (const budget of [0, -3]) {
      const outcome = failure(await dispatcher.dispatch('search.web', { query: 'x' }, { budget }));
      expect(outcome).toMatchObject({ kind: 'budget_exceeded', attempts: 0, jsonrpcCode: -32603 });
    }
    expect(calls).toHaveLength(0);
  });

  it('takes one unit per attempt from a shared budget', async () => {
    let failures = 1;
    const { dispatcher } = setup({
      handler: () => {
        if (failures-- > 0) throw new TransientError('busy');
        return 'ok';
      },
    });
    const budget = createBudget(10);
    const pending = dispatcher.dispatch('search.web', { query: 'x' }, { budget });
    await vi.runAllTimersAsync();
    await expect(pending).resolves.toMatchObject({ ok: true, attempts: 2 });
    expect(budget.remaining).toBe(8);
  });

  it('stops retrying when the budget runs out, with the attempts made so far', async () => {
    const { dispatcher, calls } = setup({
      handler: () => {
        throw new TransientError('busy');
      },
    });
    const budget = createBudget(2);
    const pending = dispatcher.dispatch('search.web', { query: 'x' }, { budget });
    await vi.runAllTimersAsync();
    expect(failure(await pending)).toMatchObject({ kind: 'budget_exceeded', attempts: 2 });
    expect(calls).toHaveLength(2);
    expect(budget.remaining).toBe(0);
  });

  it('is never overspent by concurrent dispatches', async () => {
    const { dispatcher, calls } = setup();
    const budget = createBudget(5);
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, i) => dispatcher.dispatch('search.web', { query: `${i}` }, { budget })),
    );
    expect(outcomes.filter((o) => o.ok)).toHaveLength(5);
    expect(outcomes.filter((o) => !o.ok && o.kind === 'budget_exceeded')).toHaveLength(15);
    expect(calls).toHaveLength(5);
    expect(budget.remaining).toBe(0);
  });
});

describe('dispatch: concurrency', () => {
  it('runs at most 8 handlers at once and the rest in FIFO order', async () => {
    const release = gate();
    let running = 0;
    let peak = 0;
    const started: string[] = [];
    const { dispatcher } = setup({
      handler: async ({ query }) => {
        started.push(query);
        running += 1;
        peak = Math.max(peak, running);
        await release.promise;
        running -= 1;
        return query;
      },
    });
    const all = Promise.all(
      Array.from({ length: 40 }, (_, i) => dispatcher.dispatch('search.web', { query: `${i}` })),
    );
    await flush();
    expect(running).toBe(8);
    release.open();
    const outcomes = await all;
    expect(peak).toBe(8);
    expect(started).toEqual(Array.from({ length: 40 }, (_, i) => `${i}`));
    expect(outcomes.every((o) => o.ok)).toBe(true);
  });

  it('frees the slot when an attempt times out, even if the handler never settles', async () => {
    let entered = 0;
    const { dispatcher } = setup({
      idempotent: false,
      timeoutMs: 100,
      stack: { concurrency: { max: 1 } },
      handler: ({ query }) => {
        entered += 1;
        return query === 'hang' ? new Promise<never>(() => {}) : 'ok';
      },
    });
    const stuck = dispatcher.dispatch('search.web', { query: 'hang' });
    const next = dispatcher.dispatch('search.web', { query: 'next' });
    await flush();
    expect(entered).toBe(1);
    await vi.advanceTimersByTimeAsync(100);
    expect(failure(await stuck).kind).toBe('timeout');
    await expect(next).resolves.toMatchObject({ ok: true, result: 'ok' });
  });

  it('lets a queued caller that aborts leave at once', async () => {
    const release = gate();
    const { dispatcher, calls } = setup({
      stack: { concurrency: { max: 1 } },
      handler: () => release.promise,
    });
    const first = dispatcher.dispatch('search.web', { query: 'a' });
    const caller = new AbortController();
    const queued = dispatcher.dispatch('search.web', { query: 'b' }, { signal: caller.signal });
    await flush();
    caller.abort();
    expect(failure(await queued)).toMatchObject({ kind: 'cancelled', attempts: 0 });
    release.open();
    await expect(first).resolves.toMatchObject({ ok: true });
    expect(calls.map((c) => c.query)).toEqual(['a']);
  });
});

describe('gatherBounded', () => {
  it('resolves outcomes in input order, failures included', async () => {
    const { dispatcher } = setup();
    const outcomes = await dispatcher.gatherBounded([
      { name: 'search.web', args: { query: 'a' } },
      { name: 'nope', args: {} },
      { name: 'search.web', args: { query: 1 } },
      { name: 'search.web', args: { query: 'd' }, options: { idempotencyKey: 'k' } },
    ]);
    expect(outcomes.map((o) => (o.ok ? o.result : o.kind))).toEqual([
      'result:a',
      'not_found',
      'schema',
      'result:d',
    ]);
  });

  it('runs at most `concurrency` calls at once without the concurrency layer', async () => {
    const registry = new ToolRegistry();
    let running = 0;
    let peak = 0;
    registry.register({
      name: 'net.fetch',
      inputSchema: z.object({ i: z.number() }),
      handler: async ({ i }) => {
        running += 1;
        peak = Math.max(peak, running);
        await new Promise((resolve) => setTimeout(resolve, 10));
        running -= 1;
        return i;
      },
    });
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry)]);
    const pending = dispatcher.gatherBounded(
      Array.from({ length: 40 }, (_, i) => ({ name: 'net.fetch', args: { i } })),
      { concurrency: 3 },
    );
    await vi.runAllTimersAsync();
    const outcomes = await pending;
    expect(peak).toBe(3);
    expect(outcomes.map((o) => (o.ok ? o.result : -1))).toEqual(Array.from({ length: 40 }, (_, i) => i));
  });

  it('defaults to 8 at once', async () => {
    const release = gate();
    let running = 0;
    const registry = new ToolRegistry().register({
      name: 'net.fetch',
      inputSchema: z.object({}),
      handler: async () => {
        running += 1;
        await release.promise;
      },
    });
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry)]);
    const pending = dispatcher.gatherBounded(
      Array.from({ length: 40 }, () => ({ name: 'net.fetch', args: {} })),
    );
    await flush();
    expect(running).toBe(8);
    release.open();
    await pending;
  });

  it('rejects a bad concurrency with a TypeError naming it', async () => {
    const { dispatcher } = setup();
    await expect(dispatcher.gatherBounded([], { concurrency: 0 })).rejects.toThrow(/concurrency/);
  });
});

describe('createDispatcher with custom stacks', () => {
  it('makes exactly one attempt without retry', async () => {
    const registry = new ToolRegistry().register({
      name: 'flaky.op',
      inputSchema: z.object({}),
      handler: () => {
        throw new TransientError('busy');
      },
    });
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry)]);
    expect(failure(await dispatcher.dispatch('flaky.op', {}))).toMatchObject({
      kind: 'transient',
      attempts: 1,
    });
  });

  it('turns an error escaping a stack without errorMapping into an envelope', async () => {
    const registry = new ToolRegistry().register({
      name: 'a.b',
      inputSchema: z.object({}),
      handler: () => 'x',
    });
    const explode: Middleware = async () => {
      throw new Error('layer broke');
    };
    const dispatcher = createDispatcher([toolLookup(registry), explode]);
    const outcome = await dispatcher.dispatch('a.b', {});
    expect(isDispatchError(outcome)).toBe(true);
    expect(failure(outcome)).toMatchObject({ kind: 'internal', message: 'layer broke' });
  });

  it('reports a stack without toolLookup as internal', async () => {
    const dispatcher = createDispatcher([errorMapping()]);
    expect(failure(await dispatcher.dispatch('a.b', {})).kind).toBe('internal');
  });

  it('runs a Koa-style third-party middleware unchanged', async () => {
    const seen: string[] = [];
    const koaStyle = async (ctx: { toolName: string }, next: () => Promise<unknown>) => {
      seen.push(`before ${ctx.toolName}`);
      await next();
      seen.push('after');
    };
    const { registry } = setup();
    const dispatcher = createDispatcher([koaStyle, ...defaultStack({ registry })]);
    await dispatcher.dispatch('search.web', { query: 'x' });
    expect(seen).toEqual(['before search.web', 'after']);
  });

  it('survives an onEvent that throws', async () => {
    const { registry } = setup();
    const dispatcher = createDispatcher(defaultStack({ registry }), {
      onEvent: () => {
        throw new Error('observer broke');
      },
    });
    await expect(dispatcher.dispatch('search.web', { query: 'x' })).resolves.toMatchObject({ ok: true });
  });

  it('retries through a custom stack with retry directly around the attempt', async () => {
    let failures = 1;
    const registry = new ToolRegistry().register({
      name: 'flaky.op',
      inputSchema: z.object({}),
      handler: () => {
        if (failures-- > 0) throw new TransientError('busy');
        return 'ok';
      },
    });
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), retry({ baseDelayMs: 0 })]);
    await expect(dispatcher.dispatch('flaky.op', {})).resolves.toEqual({
      ok: true,
      result: 'ok',
      attempts: 2,
    });
  });
});

describe('events', () => {
  it('emits attempt, retry, success and failure with tool, callId and attempt', async () => {
    let failures = 1;
    const { dispatcher, events } = setup({
      handler: () => {
        if (failures-- > 0) throw new TransientError('busy');
        return 'ok';
      },
    });
    const pending = dispatcher.dispatch('search.web', { query: 'x' }, { callId: 'c1' });
    await vi.runAllTimersAsync();
    await pending;
    expect(events.map(({ type, attempt }) => [type, attempt])).toEqual([
      ['dispatch.attempt', 1],
      ['dispatch.attempt_failed', 1],
      ['dispatch.retry', 1],
      ['dispatch.attempt', 2],
      ['dispatch.success', 2],
    ]);
    expect(events[1]).toMatchObject({ tool: 'search.web', callId: 'c1', kind: 'transient' });
    expect(events[2]).toMatchObject({ tool: 'search.web', callId: 'c1', delayMs: 100, kind: 'transient' });
    await dispatcher.dispatch('nope', {});
    expect(events.at(-1)).toMatchObject({ type: 'dispatch.failure', kind: 'not_found' });
  });

  it('emits concurrency.queued when a call waits for a slot', async () => {
    const release = gate();
    const { dispatcher, eventTypes } = setup({
      stack: { concurrency: { max: 1 } },
      handler: () => release.promise,
    });
    const all = Promise.all([
      dispatcher.dispatch('search.web', { query: 'a' }),
      dispatcher.dispatch('search.web', { query: 'b' }),
    ]);
    await flush();
    expect(eventTypes()).toContain('concurrency.queued');
    release.open();
    await all;
  });
});

describe('events for calls that end before any layer runs', () => {
  it('emits dispatch.failure for bad options and an already-aborted signal', async () => {
    const { dispatcher, events } = setup();
    await dispatcher.dispatch('search.web', { query: 'x' }, { timeoutMs: -1 });
    await dispatcher.dispatch('search.web', { query: 'x' }, { signal: AbortSignal.abort() });
    expect(events.map((e) => [e.type, e.kind])).toEqual([
      ['dispatch.failure', 'schema'],
      ['dispatch.failure', 'cancelled'],
    ]);
  });
});

describe('tool names that are not strings', () => {
  it.each([
    ['a number', 42],
    ['a symbol', Symbol('x')],
    ['null', null],
    [
      'an object whose toString throws',
      {
        toString: () => {
          throw new Error('x');
        },
      },
    ],
  ])('reports %s as not_found', async (_label, name) => {
    const { dispatcher } = setup();
    expect(await dispatcher.dispatch(name as never, { query: 'x' })).toMatchObject({
      kind: 'not_found',
      attempts: 0,
    });
  });
});

describe('one caller signal shared by many calls', () => {
  it('keeps a single abort listener on it and none after the calls, with no warning', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    const release = gate();
    const { dispatcher } = setup({ handler: () => release.promise });
    const caller = new AbortController();
    const all = Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        dispatcher.dispatch('search.web', { query: `${i}` }, { signal: caller.signal }),
      ),
    );
    await flush();
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(1);
    release.open();
    await all;
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
    process.off('warning', onWarning);
    expect(warnings).toEqual([]);
  });

  it('answers a caller at the abort even while a custom layer ignores the signal', async () => {
    const { registry } = setup();
    const stubborn: Middleware = () => new Promise<never>(() => {});
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), stubborn]);
    const caller = new AbortController();
    const pending = dispatcher.dispatch('search.web', { query: 'x' }, { signal: caller.signal });
    await flush();
    caller.abort();
    expect(await pending).toMatchObject({ kind: 'cancelled', attempts: 0 });
  });
});

describe('subscribe', () => {
  it('hears every event onEvent hears, in the same order', async () => {
    const heard: string[] = [];
    const { dispatcher, eventTypes } = setup();
    dispatcher.subscribe((event) => heard.push(event.type));
    await dispatcher.dispatch('search.web', { query: 'x' });
    expect(heard).toContain('dispatch.success');
    expect(heard).toEqual(eventTypes());
  });

  it('feeds several listeners and stops feeding one once it unsubscribes', async () => {
    const { dispatcher } = setup();
    const first: string[] = [];
    const second: string[] = [];
    const stopFirst = dispatcher.subscribe((event) => first.push(event.type));
    dispatcher.subscribe((event) => second.push(event.type));
    await dispatcher.dispatch('search.web', { query: 'x' });
    stopFirst();
    stopFirst();
    await dispatcher.dispatch('search.web', { query: 'y' });
    expect(first.filter((type) => type === 'dispatch.success')).toHaveLength(1);
    expect(second.filter((type) => type === 'dispatch.success')).toHaveLength(2);
  });

  it('ignores a listener that throws or rejects, and still feeds the others', async () => {
    const { dispatcher } = setup();
    const heard: string[] = [];
    dispatcher.subscribe(() => {
      throw new Error('broken listener');
    });
    dispatcher.subscribe((() => Promise.reject(new Error('broken async listener'))) as never);
    dispatcher.subscribe((event) => heard.push(event.type));
    await expect(dispatcher.dispatch('search.web', { query: 'x' })).resolves.toMatchObject({ ok: true });
    expect(heard).toContain('dispatch.success');
  });

  it('keeps feeding the subscribers when onEvent throws', async () => {
    const heard: string[] = [];
    const registry = new ToolRegistry().register({
      name: 'echo',
      description: 'echoes',
      inputSchema: z.object({}),
      handler: () => 'ok',
    });
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry)], {
      onEvent: () => {
        throw new Error('broken onEvent');
      },
    });
    dispatcher.subscribe((event) => heard.push(event.type));
    await dispatcher.dispatch('echo', {});
    expect(heard).toContain('dispatch.success');
  });

  it('stops hearing a call in flight once it unsubscribes', async () => {
    const release = gate();
    const registry = new ToolRegistry().register({
      name: 'slow',
      description: 'waits',
      inputSchema: z.object({}),
      handler: () => release.promise.then(() => 'done'),
    });
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry)]);
    const heard: string[] = [];
    const unsubscribe = dispatcher.subscribe((event) => heard.push(event.type));
    const running = dispatcher.dispatch('slow', {});
    await flush();
    unsubscribe();
    release.open();
    await running;
    expect(heard).toContain('dispatch.attempt');
    expect(heard).not.toContain('dispatch.success');
  });

  it('passes events through the redactor before a subscriber sees them', async () => {
    const { createRedactor } = await import('../index.js');
    const registry = new ToolRegistry().register({
      name: 'leaky',
      description: 'fails with a secret',
      inputSchema: z.object({}),
      handler: () => {
        throw new Error('token sk-live-0123456789abcdefghijklmnop refused');
      },
    });
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry)], { redact: createRedactor() });
    const heard: unknown[] = [];
    dispatcher.subscribe((event) => heard.push(event));
    await dispatcher.dispatch('leaky', {});
    expect(JSON.stringify(heard)).not.toContain('sk-live-0123456789abcdefghijklmnop');
  });

  it('rejects a listener that is not a function, naming it', () => {
    const { dispatcher } = setup();
    expect(() => dispatcher.subscribe('nope' as never)).toThrow(/listener/);
  });
});
