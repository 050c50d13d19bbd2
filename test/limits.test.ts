// ctx.limit and the attempt step: a layer states a deadline or a stop signal, and the attempt
// step alone calls the handler, ends its attempt once and reports the timeout.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createDispatcher,
  type DispatchContext,
  type DispatchEvent,
  errorMapping,
  type Middleware,
  retry,
  type ToolContext,
  timeout,
  ToolRegistry,
  toolLookup,
  TransientError,
} from '../index.js';
import { cancelled, raceAbort } from '../middleware/index.js';
import { flush, gate } from './helpers/gate.js';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

function registryWith(handler: (args: unknown, ctx: ToolContext) => unknown) {
  return new ToolRegistry().register({ name: 'op', inputSchema: z.object({ q: z.string() }), handler });
}

describe('dispatchJson without the schema layer', () => {
  it('hands the handler its parsed args, never the text', async () => {
    let seen: unknown;
    const registry = registryWith((args) => {
      seen = args;
      return 'ok';
    });
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), retry(), timeout()]);
    expect(await dispatcher.dispatchJson('op', '{"q":"hi"}')).toEqual({
      ok: true,
      result: 'ok',
      attempts: 1,
    });
    expect(seen).toEqual({ q: 'hi' });
    expect(Object.getPrototypeOf(seen)).toBe(Object.prototype);
  });

  it('fails bad JSON with schema and no attempt, through the layers', async () => {
    const handler = vi.fn();
    const seenByLayer: unknown[] = [];
    const watch: Middleware = async (_ctx, next) => {
      try {
        await next();
      } catch (error) {
        seenByLayer.push((error as { kind?: string }).kind);
        throw error;
      }
    };
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registryWith(handler)), watch, retry()]);
    const outcome = await dispatcher.dispatchJson('op', '{not json');
    expect(outcome).toMatchObject({ ok: false, kind: 'schema', attempts: 0 });
    expect(seenByLayer).toEqual(['schema']);
    expect(handler).not.toHaveBeenCalled();
  });
});

describe('ctx.limit', () => {
  it('ends the attempt at the deadline, emits dispatch.timeout and puts the old limits back', async () => {
    const states: Array<[number, boolean]> = [];
    const deadlines: number[] = [];
    const registry = registryWith((_args, ctx) => {
      deadlines.push(ctx.deadline);
      return new Promise(() => {});
    });
    const bounded: Middleware = async (ctx, next) => {
      states.push([ctx.deadline, ctx.signal.aborted]);
      const restore = ctx.limit({ timeoutMs: 100 });
      try {
        await next();
      } finally {
        restore();
        states.push([ctx.deadline, ctx.signal.aborted]);
      }
    };
    const events: DispatchEvent[] = [];
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), bounded], {
      onEvent: (event) => void events.push(event),
    });
    const started = Date.now();
    const pending = dispatcher.dispatch('op', { q: 'x' });
    await vi.advanceTimersByTimeAsync(100);
    expect(await pending).toMatchObject({ ok: false, kind: 'timeout', attempts: 1 });
    expect(deadlines).toEqual([started + 100]);
    expect(states).toEqual([
      [Infinity, false],
      [Infinity, false],
    ]);
    expect(events.map((event) => event.type)).toEqual([
      'dispatch.attempt',
      'dispatch.timeout',
      'dispatch.attempt_failed',
      'dispatch.failure',
    ]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('only ever tightens a deadline', async () => {
    const registry = registryWith(() => new Promise(() => {}));
    const loose: Middleware = async (ctx, next) => {
      const restore = ctx.limit({ timeoutMs: 500 });
      try {
        await next();
      } finally {
        restore();
      }
    };
    const dispatcher = createDispatcher([
      errorMapping(),
      toolLookup(registry),
      timeout({ defaultMs: 100 }),
      loose,
    ]);
    let outcome: unknown;
    void dispatcher.dispatch('op', { q: 'x' }).then((value) => (outcome = value));
    await vi.advanceTimersByTimeAsync(100);
    expect(outcome).toMatchObject({ kind: 'timeout', message: expect.stringMatching(/after 100 ms/) });
  });

  it('ends a layer that waits on ctx.signal inside a deadline with timeout', async () => {
    const hold = gate<void>();
    const registry = registryWith(() => 'never reached');
    const waits: Middleware = async (ctx, next) => {
      const { signal } = ctx;
      await raceAbort(hold.promise, signal, () => cancelled(ctx, signal));
      await next();
    };
    const dispatcher = createDispatcher([
      errorMapping(),
      toolLookup(registry),
      timeout({ defaultMs: 50 }),
      waits,
    ]);
    let outcome: unknown;
    void dispatcher.dispatch('op', { q: 'x' }).then((value) => (outcome = value));
    await vi.advanceTimersByTimeAsync(50);
    expect(outcome).toMatchObject({ ok: false, kind: 'timeout', attempts: 0 });
  });

  it('with a signal of its own, ends the attempt on that signal and not on the caller', async () => {
    const own = new AbortController();
    const caller = new AbortController();
    const signals: AbortSignal[] = [];
    const release = gate<string>();
    const registry = registryWith((_args, ctx) => {
      signals.push(ctx.signal);
      return release.promise;
    });
    let inner: Promise<void> | undefined;
    const detached: Middleware = (ctx: DispatchContext, next) => {
      const restore = ctx.limit({ signal: own.signal });
      inner = next().finally(restore);
      return inner;
    };
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), detached]);
    const pending = dispatcher.dispatch('op', { q: 'x' }, { signal: caller.signal });
    await vi.advanceTimersByTimeAsync(0);
    caller.abort();
    expect(await pending).toMatchObject({ kind: 'cancelled' });
    expect(signals[0]?.aborted).toBe(false);
    own.abort('stop');
    await expect(inner).rejects.toMatchObject({ kind: 'cancelled', cause: 'stop' });
    expect(signals[0]?.aborted).toBe(true);
  });

  it('leaves no timer or listener behind, and a late failure of the handler is nobody’s', async () => {
    const unhandled = vi.fn();
    process.on('unhandledRejection', unhandled);
    try {
      const late = gate<never>();
      const registry = registryWith(() => late.promise);
      const caller = new AbortController();
      const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), timeout({ defaultMs: 20 })]);
      const pending = dispatcher.dispatch('op', { q: 'x' }, { signal: caller.signal });
      await vi.advanceTimersByTimeAsync(20);
      expect(await pending).toMatchObject({ kind: 'timeout' });
      late.fail(new Error('too late'));
      await vi.advanceTimersByTimeAsync(0);
      expect(vi.getTimerCount()).toBe(0);
      vi.useRealTimers();
      await new Promise((resolve) => setTimeout(resolve, 5));
      expect(unhandled).not.toHaveBeenCalled();
    } finally {
      process.off('unhandledRejection', unhandled);
    }
  });
});

// Behaviours once pinned as bugs of the claim protocol between timeout and the attempt step; the
// protocol is gone, the behaviours stay.
describe('limits across retries and nested timeouts', () => {
  it('a timeout placed outside retry still bounds the later attempts', async () => {
    let calls = 0;
    const registry = registryWith(() => {
      calls += 1;
      if (calls === 1) return Promise.reject(new TransientError('flaky'));
      return new Promise<never>(() => {});
    });
    const dispatcher = createDispatcher([
      errorMapping(),
      toolLookup(registry),
      timeout({ defaultMs: 1_000 }),
      retry({ random: () => 0 }),
    ]);
    let outcome: unknown;
    void dispatcher.dispatch('op', { q: 'x' }).then((value) => (outcome = value));
    await vi.advanceTimersByTimeAsync(5_000);
    await flush();
    expect(calls).toBe(2);
    expect(outcome).toMatchObject({ kind: 'timeout' });
  });

  it('an overall and a per-attempt timeout answer a caller that aborts while the handler starts', async () => {
    const caller = new AbortController();
    const registry = registryWith(() => {
      caller.abort();
      return new Promise<never>(() => {});
    });
    let stackSettled = false;
    const dispatcher = createDispatcher([
      async (_ctx, next) => {
        try {
          await next();
        } finally {
          stackSettled = true;
        }
      },
      errorMapping(),
      toolLookup(registry),
      timeout({ defaultMs: 10_000 }),
      retry({ random: () => 0 }),
      timeout({ defaultMs: 1_000 }),
    ]);
    let outcome: unknown;
    void dispatcher.dispatch('op', { q: 'x' }, { signal: caller.signal }).then((value) => (outcome = value));
    await vi.advanceTimersByTimeAsync(60_000);
    await flush();
    expect(stackSettled).toBe(true);
    expect(outcome).toMatchObject({ kind: 'cancelled' });
  });

  it('a layer inside timeout that sets and restores ctx.signal itself keeps the caller’s abort working', async () => {
    const narrow: Middleware = async function narrow(ctx, next) {
      const parent = ctx.signal;
      const controller = new AbortController();
      const onParentAbort = () => controller.abort(parent.reason);
      parent.addEventListener('abort', onParentAbort, { once: true });
      ctx.signal = controller.signal;
      try {
        await next();
      } finally {
        parent.removeEventListener('abort', onParentAbort);
        ctx.signal = parent;
      }
    };
    let calls = 0;
    const registry = registryWith(async () => {
      calls += 1;
      throw new TransientError('busy');
    });
    const dispatcher = createDispatcher([
      errorMapping(),
      toolLookup(registry),
      retry({ random: () => 0 }),
      timeout({ defaultMs: 1_000 }),
      narrow,
    ]);
    const caller = new AbortController();
    const pending = dispatcher.dispatch('op', { q: 'x' }, { signal: caller.signal });
    await vi.advanceTimersByTimeAsync(10); // attempt 1 failed, retry is in its 100 ms backoff
    expect(calls).toBe(1);
    caller.abort();
    expect(await pending).toMatchObject({ kind: 'cancelled' });
    await vi.advanceTimersByTimeAsync(5_000);
    expect(calls).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
  });
});
