import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  circuitBreaker,
  createDispatcher,
  defaultStack,
  toToolMessage,
  ToolError,
  ToolRegistry,
  type DispatchEvent,
  type Middleware,
  type ProgressUpdate,
  type ToolContext,
} from '../index.js';
import { hasProgressListener, signalEndsWithAttempt } from '../middleware/index.js';

beforeEach(() => vi.useFakeTimers({ now: 1_000_000 }));
afterEach(() => vi.useRealTimers());

describe('ToolError', () => {
  it('fails the call as tool_error with the message as is, never retried, never a breaker failure', async () => {
    let runs = 0;
    const registry = new ToolRegistry().register({
      name: 'payments.charge',
      inputSchema: z.object({}),
      idempotent: true,
      handler: () => {
        runs += 1;
        throw new ToolError('The card was declined');
      },
    });
    const breaker = circuitBreaker({ failureThreshold: 2 });
    const dispatcher = createDispatcher([breaker, ...defaultStack({ registry })]);
    for (let i = 0; i < 3; i++) {
      const outcome = await dispatcher.dispatch('payments.charge', {});
      expect(outcome).toMatchObject({
        ok: false,
        kind: 'tool_error',
        attempts: 1,
        jsonrpcCode: -32603,
        message: 'The card was declined',
      });
      expect(toToolMessage(outcome)).toContain('The card was declined');
    }
    expect(runs).toBe(3);
    expect(breaker.state('payments.charge')).toBe('closed');
  });
});

describe("a handler's deadline and progress", () => {
  it('sees its attempt deadline as epoch ms, or Infinity without one', async () => {
    const deadlines: number[] = [];
    const registry = new ToolRegistry()
      .register({
        name: 'a.timed',
        inputSchema: z.object({}),
        timeoutMs: 5_000,
        handler: (_a, ctx) => void deadlines.push(ctx.deadline),
      })
      .register({
        name: 'a.free',
        inputSchema: z.object({}),
        timeoutMs: Infinity,
        handler: (_a, ctx) => void deadlines.push(ctx.deadline),
      });
    const dispatcher = createDispatcher(defaultStack({ registry }));
    await dispatcher.dispatch('a.timed', {});
    await dispatcher.dispatch('a.timed', {}, { timeoutMs: 50 });
    await dispatcher.dispatch('a.free', {});
    expect(deadlines).toEqual([1_005_000, 1_000_050, Infinity]);
  });

  it('reports progress to onProgress, ignores a throwing listener, and is a no-op without one', async () => {
    const updates: ProgressUpdate[] = [];
    const registry = new ToolRegistry().register({
      name: 'files.copy',
      inputSchema: z.object({}),
      handler: (_a, ctx) => {
        ctx.progress(1, 3, 'first');
        ctx.progress(2);
        return 'done';
      },
    });
    const dispatcher = createDispatcher(defaultStack({ registry }));
    await expect(
      dispatcher.dispatch('files.copy', {}, { onProgress: (u) => void updates.push(u) }),
    ).resolves.toMatchObject({ ok: true });
    expect(updates).toEqual([{ progress: 1, total: 3, message: 'first' }, { progress: 2 }]);
    await expect(
      dispatcher.dispatch(
        'files.copy',
        {},
        {
          onProgress: () => {
            throw new Error('x');
          },
        },
      ),
    ).resolves.toMatchObject({ ok: true });
    await expect(dispatcher.dispatch('files.copy', {})).resolves.toMatchObject({ ok: true });
    await expect(dispatcher.dispatch('files.copy', {}, { onProgress: 'no' as never })).resolves.toMatchObject(
      { kind: 'schema' },
    );
  });
});

describe('dispatchJson and displayName', () => {
  const registry = new ToolRegistry().register({
    name: 'search.web',
    inputSchema: z.object({ query: z.string().optional() }),
    handler: (args) => args,
  });

  it('parses JSON args inside the stack: "" is {}, bad JSON a schema outcome observers see', async () => {
    const events: DispatchEvent[] = [];
    const dispatcher = createDispatcher(defaultStack({ registry }), { onEvent: (e) => void events.push(e) });
    await expect(dispatcher.dispatchJson('search.web', '{"query":"x"}')).resolves.toEqual({
      ok: true,
      result: { query: 'x' },
      attempts: 1,
    });
    await expect(dispatcher.dispatchJson('search.web', '  ')).resolves.toEqual({
      ok: true,
      result: {},
      attempts: 1,
    });
    const bad = await dispatcher.dispatchJson('search.web', '{"query": "oops', {
      displayName: 'search__web',
    });
    expect(bad).toMatchObject({ ok: false, kind: 'schema', attempts: 0 });
    expect(bad.ok ? '' : bad.message).toMatch(/^Arguments for "search__web" are not valid JSON: /);
    expect(events.at(-1)).toMatchObject({ type: 'dispatch.failure', kind: 'schema' });
  });

  it('quotes the display name in model-facing messages', async () => {
    const dispatcher = createDispatcher(defaultStack({ registry }));
    const outcome = await dispatcher.dispatch('search.web', { query: 1 }, { displayName: 'search__web' });
    expect(outcome).toMatchObject({
      kind: 'schema',
      message: expect.stringContaining('Invalid args for "search__web"'),
    });
    await expect(dispatcher.dispatch('nope', {}, { displayName: 'nope__x' })).resolves.toMatchObject({
      message: 'No tool named "nope__x"',
    });
    await expect(dispatcher.dispatch('search.web', {}, { displayName: '' })).resolves.toMatchObject({
      kind: 'schema',
    });
  });
});

describe('listen()', () => {
  it('returns a function that removes the listener', async () => {
    const seen: string[] = [];
    const registry = new ToolRegistry().register({
      name: 't.x',
      inputSchema: z.object({}),
      handler: () => 1,
    });
    const dispatcher = createDispatcher([
      async (ctx, next) => {
        const stop = ctx.listen((event) => void seen.push(event.type));
        await next();
        stop();
        stop();
      },
      ...defaultStack({ registry }),
    ]);
    await dispatcher.dispatch('t.x', {});
    expect(seen).toEqual(['dispatch.attempt']);
  });
});

describe('ToolError kinds', () => {
  it('lets a tool fronting a remote one report not_found or schema, never retried, never timeout', async () => {
    const registry = new ToolRegistry()
      .register({
        name: 'remote.gone',
        inputSchema: z.object({}),
        handler: () => {
          throw new ToolError('Unknown tool: x', { kind: 'not_found' });
        },
      })
      .register({
        name: 'remote.bad',
        inputSchema: z.object({}),
        handler: () => {
          throw new ToolError('q must be a string', { kind: 'schema' });
        },
      });
    const dispatcher = createDispatcher(defaultStack({ registry }));
    await expect(dispatcher.dispatch('remote.gone', {})).resolves.toMatchObject({
      kind: 'not_found',
      attempts: 1,
      jsonrpcCode: -32601,
    });
    await expect(dispatcher.dispatch('remote.bad', {})).resolves.toMatchObject({
      kind: 'schema',
      attempts: 1,
      jsonrpcCode: -32602,
    });
    expect(() => new ToolError('x', { kind: 'timeout' as never })).toThrow(TypeError);
  });
});

describe('hasProgressListener', () => {
  it('tells a handler whether the dispatch listens for its progress, lean context or full', async () => {
    const seen: boolean[] = [];
    const registry = new ToolRegistry()
      .register({
        name: 'full.ctx',
        inputSchema: z.object({}),
        handler: (_args, ctx) => void seen.push(hasProgressListener(ctx)),
      })
      .register({
        name: 'lean.ctx',
        inputSchema: z.object({}),
        // Declares only its args: it gets the lean context, whose fields are prototype getters.
        handler: function (this: unknown, _args: unknown) {
          // biome-ignore lint/complexity/noArguments: the lean context is reachable only this way
          seen.push(hasProgressListener(arguments[1] as ToolContext));
        },
      });
    const dispatcher = createDispatcher(defaultStack({ registry }));
    for (const name of ['full.ctx', 'lean.ctx']) {
      await dispatcher.dispatch(name, {});
      await dispatcher.dispatch(name, {}, { onProgress: () => {} });
    }
    expect(seen).toEqual([false, true, false, true]);
  });
});

describe('signalEndsWithAttempt', () => {
  it("is true wherever the attempt's signal is its own: every attempt under a deadline", async () => {
    const seen: Record<string, boolean[]> = {};
    const note = (key: string, value: boolean) => void (seen[key] ??= []).push(value);
    const registry = new ToolRegistry()
      .register({
        name: 'full.ctx',
        inputSchema: z.object({}),
        handler: (_args, ctx) => note('full', signalEndsWithAttempt(ctx)),
      })
      .register({
        name: 'lean.ctx',
        inputSchema: z.object({}),
        handler: function (this: unknown, _args: unknown) {
          // biome-ignore lint/complexity/noArguments: the lean context is reachable only this way
          note('lean', signalEndsWithAttempt(arguments[1] as ToolContext));
        },
      })
      .register({
        name: 'no.deadline',
        inputSchema: z.object({}),
        timeoutMs: Infinity,
        handler: (_args, ctx) => note('none', signalEndsWithAttempt(ctx)),
      });
    await createDispatcher(defaultStack({ registry })).dispatch('full.ctx', {});
    await createDispatcher(defaultStack({ registry })).dispatch('lean.ctx', {});
    await createDispatcher(defaultStack({ registry })).dispatch('no.deadline', {});
    // A layer between the timeout and the attempt changes nothing: the attempt's signal is its own.
    const between: Middleware = (_ctx, next) => next();
    await createDispatcher([...defaultStack({ registry }), between]).dispatch('full.ctx', {});
    expect(seen).toEqual({ full: [true, true], lean: [true], none: [false] });
    expect(signalEndsWithAttempt({ ...fakeContext() })).toBe(false);
  });
});

function fakeContext(): ToolContext {
  return {
    signal: new AbortController().signal,
    attempt: 1,
    idempotencyKey: undefined,
    callId: 'call-1',
    deadline: Infinity,
    progress: () => {},
  };
}
