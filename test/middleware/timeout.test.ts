import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createDispatcher,
  errorMapping,
  timeout,
  ToolRegistry,
  toolLookup,
  type DispatchEvent,
  type TimeoutOptions,
  type ToolHandler,
} from '../../index.js';
import { flush, gate } from '../helpers/gate.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

function withTimeout(
  handler: ToolHandler<Record<string, never>>,
  options: TimeoutOptions = {},
  toolTimeoutMs?: number,
) {
  const events: DispatchEvent[] = [];
  const registry = new ToolRegistry().register({
    name: 'slow.op',
    inputSchema: z.object({}),
    ...(toolTimeoutMs === undefined ? {} : { timeoutMs: toolTimeoutMs }),
    handler,
  });
  const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), timeout(options)], {
    onEvent: (event) => events.push(event),
  });
  return { dispatcher, events };
}

describe('timeout', () => {
  it('defaults to 30 s', async () => {
    const { dispatcher } = withTimeout(() => new Promise<never>(() => {}));
    const pending = dispatcher.dispatch('slow.op', {});
    await vi.advanceTimersByTimeAsync(29_999);
    let settled = false;
    void pending.then(() => {
      settled = true;
    });
    await flush();
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await pending).toMatchObject({ kind: 'timeout', attempts: 1, jsonrpcCode: -32603 });
  });

  it('fails at the deadline even when the handler ignores its signal, and emits dispatch.timeout', async () => {
    const { dispatcher, events } = withTimeout(() => new Promise<never>(() => {}), { defaultMs: 50 });
    const pending = dispatcher.dispatch('slow.op', {});
    await vi.advanceTimersByTimeAsync(50);
    expect(await pending).toMatchObject({ kind: 'timeout' });
    expect(events.find((e) => e.type === 'dispatch.timeout')).toMatchObject({ timeoutMs: 50 });
  });

  it('aborts the handler’s signal with the timeout as the reason', async () => {
    let signal: AbortSignal | undefined;
    const { dispatcher } = withTimeout(
      (_args, ctx) => {
        signal = ctx.signal;
        return new Promise<never>(() => {});
      },
      { defaultMs: 50 },
    );
    const pending = dispatcher.dispatch('slow.op', {});
    await vi.advanceTimersByTimeAsync(50);
    await pending;
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toMatchObject({ kind: 'timeout' });
  });

  it('clears its timer when the handler finishes first', async () => {
    const { dispatcher } = withTimeout(() => 'fast', { defaultMs: 50 });
    await expect(dispatcher.dispatch('slow.op', {})).resolves.toMatchObject({ ok: true });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('uses the tool’s timeoutMs over the default, and the call’s over both', async () => {
    const release = gate();
    const { dispatcher } = withTimeout(() => release.promise, { defaultMs: 1_000 }, 500);
    const byTool = dispatcher.dispatch('slow.op', {});
    const byCall = dispatcher.dispatch('slow.op', {}, { timeoutMs: 100 });
    await vi.advanceTimersByTimeAsync(100);
    expect(await byCall).toMatchObject({ kind: 'timeout' });
    await vi.advanceTimersByTimeAsync(400);
    expect(await byTool).toMatchObject({ kind: 'timeout' });
  });

  it('sets no timer for Infinity', async () => {
    const release = gate<string>();
    const { dispatcher } = withTimeout(() => release.promise, { defaultMs: Infinity });
    const pending = dispatcher.dispatch('slow.op', {});
    await flush();
    expect(vi.getTimerCount()).toBe(0);
    release.open('done');
    await expect(pending).resolves.toMatchObject({ result: 'done' });
  });

  it('reports a caller abort as cancelled and removes its listener', async () => {
    const caller = new AbortController();
    const { dispatcher } = withTimeout(() => new Promise<never>(() => {}), { defaultMs: 1_000 });
    const pending = dispatcher.dispatch('slow.op', {}, { signal: caller.signal });
    await flush();
    caller.abort();
    expect(await pending).toMatchObject({ kind: 'cancelled' });
    expect(vi.getTimerCount()).toBe(0);
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
  });

  it.each([[0], [-1], [Number.NaN], ['5']])(
    'rejects defaultMs %s with a TypeError naming it',
    (defaultMs) => {
      expect(() => timeout({ defaultMs } as never)).toThrow(/defaultMs/);
    },
  );
});

describe('timeout under fake timers advanced synchronously', () => {
  it('fires when the clock is moved on right after the call started', async () => {
    const { dispatcher } = withTimeout(() => new Promise<never>(() => {}), { defaultMs: 50 });
    const pending = dispatcher.dispatch('slow.op', {});
    vi.advanceTimersByTime(50);
    expect(await pending).toMatchObject({ kind: 'timeout' });
  });
});
