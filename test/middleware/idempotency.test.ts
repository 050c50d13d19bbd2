import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createDispatcher,
  defaultStack,
  errorMapping,
  idempotency,
  ToolRegistry,
  toolLookup,
  TransientError,
  type DispatchError,
  type Outcome,
} from '../../index.js';
import { flush, gate } from '../helpers/gate.js';
import { setup } from '../helpers/dispatcher.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const key = { idempotencyKey: 'step-1:search.web:abc' };

function failure(outcome: Outcome): DispatchError {
  if (outcome.ok) throw new Error('expected a failure');
  return outcome;
}

describe('idempotency alone', () => {
  it('never expires a success before ttlMs on a clock with fractions of a millisecond', async () => {
    let now = 0.5;
    let runs = 0;
    const registry = new ToolRegistry().register({
      name: 'a.b',
      inputSchema: z.object({}),
      handler: () => ++runs,
    });
    const dispatcher = createDispatcher([
      errorMapping(),
      toolLookup(registry),
      idempotency({ ttlMs: 10, clock: { now: () => now } }),
    ]);
    await dispatcher.dispatch('a.b', {}, { idempotencyKey: 'k' });
    now = 10.49; // 9.99 ms after the success
    expect(await dispatcher.dispatch('a.b', {}, { idempotencyKey: 'k' })).toMatchObject({ attempts: 0 });
    now = 12;
    expect(await dispatcher.dispatch('a.b', {}, { idempotencyKey: 'k' })).toMatchObject({ attempts: 1 });
    expect(runs).toBe(2);
  });

  it('passes calls without a key straight through', async () => {
    let runs = 0;
    const registry = new ToolRegistry().register({
      name: 'a.b',
      inputSchema: z.object({}),
      handler: () => ++runs,
    });
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), idempotency()]);
    await dispatcher.dispatch('a.b', {});
    await dispatcher.dispatch('a.b', {});
    expect(runs).toBe(2);
  });

  it('rejects bad options with a TypeError naming them', () => {
    expect(() => idempotency({ ttlMs: 0 })).toThrow(/ttlMs/);
    expect(() => idempotency({ maxEntries: 1.5 })).toThrow(/maxEntries/);
    expect(() => idempotency({ clock: {} as never })).toThrow(/clock/);
  });
});

describe('idempotency in the default stack', () => {
  it('serves a recent success again without running the handler (attempts 0)', async () => {
    const { dispatcher, calls, eventTypes } = setup();
    await expect(dispatcher.dispatch('search.web', { query: 'x' }, key)).resolves.toMatchObject({
      attempts: 1,
    });
    await expect(dispatcher.dispatch('search.web', { query: 'x' }, key)).resolves.toEqual({
      ok: true,
      result: 'result:x',
      attempts: 0,
    });
    expect(calls).toHaveLength(1);
    expect(eventTypes()).toContain('idempotency.hit');
  });

  it('serves the success while now − completedAt < ttlMs, then runs again', async () => {
    const { dispatcher, calls } = setup({ stack: { idempotency: { ttlMs: 60_000 } } });
    await dispatcher.dispatch('search.web', { query: 'x' }, key);
    await vi.advanceTimersByTimeAsync(59_999);
    await dispatcher.dispatch('search.web', { query: 'x' }, key);
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    await dispatcher.dispatch('search.web', { query: 'x' }, key);
    expect(calls).toHaveLength(2);
  });

  it('makes a concurrent same-key call wait for the one in flight', async () => {
    const release = gate<string>();
    const { dispatcher, calls } = setup({ handler: () => release.promise });
    const leader = dispatcher.dispatch('search.web', { query: 'x' }, key);
    const follower = dispatcher.dispatch('search.web', { query: 'x' }, key);
    await flush();
    release.open('shared');
    await expect(leader).resolves.toEqual({ ok: true, result: 'shared', attempts: 1 });
    await expect(follower).resolves.toEqual({ ok: true, result: 'shared', attempts: 0 });
    expect(calls).toHaveLength(1);
  });

  it('gives followers the leader’s failure with the leader’s attempts, and caches nothing', async () => {
    const { dispatcher, calls } = setup({
      handler: () => {
        throw new TransientError('down');
      },
    });
    const leader = dispatcher.dispatch('search.web', { query: 'x' }, key);
    const follower = dispatcher.dispatch('search.web', { query: 'x' }, key);
    await vi.runAllTimersAsync();
    expect(failure(await leader)).toMatchObject({ kind: 'transient', attempts: 3 });
    expect(failure(await follower)).toMatchObject({ kind: 'transient', attempts: 3 });
    expect(calls).toHaveLength(3);
    const again = dispatcher.dispatch('search.web', { query: 'x' }, key);
    await vi.runAllTimersAsync();
    await again;
    expect(calls).toHaveLength(6);
  });

  it('lets followers take no concurrency slot', async () => {
    const release = gate<string>();
    const { dispatcher, calls } = setup({
      stack: { concurrency: { max: 1 } },
      handler: ({ query }) => (query === 'x' ? release.promise : 'other'),
    });
    const leader = dispatcher.dispatch('search.web', { query: 'x' }, key);
    const followers = Array.from({ length: 5 }, () => dispatcher.dispatch('search.web', { query: 'x' }, key));
    await flush();
    release.open('done');
    await Promise.all([leader, ...followers]);
    expect(calls).toHaveLength(1);
  });

  it('reports the same key with other args as idempotency_conflict', async () => {
    const { dispatcher, calls } = setup();
    await dispatcher.dispatch('search.web', { query: 'x' }, key);
    const outcome = failure(await dispatcher.dispatch('search.web', { query: 'y' }, key));
    expect(outcome).toMatchObject({ kind: 'idempotency_conflict', attempts: 0, jsonrpcCode: -32602 });
    expect(calls).toHaveLength(1);
  });

  it('reports the same key with another tool as idempotency_conflict, in flight too', async () => {
    const release = gate<string>();
    const { registry, dispatcher } = setup({ handler: () => release.promise });
    registry.register({
      name: 'other.tool',
      inputSchema: z.object({ query: z.string() }),
      handler: () => 'o',
    });
    const leader = dispatcher.dispatch('search.web', { query: 'x' }, key);
    await flush();
    const outcome = failure(await dispatcher.dispatch('other.tool', { query: 'x' }, key));
    expect(outcome.kind).toBe('idempotency_conflict');
    release.open('r');
    await leader;
  });

  it('compares parsed args by a key-sorted fingerprint', async () => {
    const { dispatcher, calls } = setup();
    await dispatcher.dispatch('search.web', { query: 'x', limit: 2 }, key);
    await expect(dispatcher.dispatch('search.web', { limit: 2, query: 'x' }, key)).resolves.toMatchObject({
      attempts: 0,
    });
    await expect(
      dispatcher.dispatch('search.web', { limit: 2, query: 'x', ignored: 1 }, key),
    ).resolves.toMatchObject({ attempts: 0 });
    expect(calls).toHaveLength(1);
  });

  it('keeps at most maxEntries successes, evicting the oldest first', async () => {
    const { dispatcher, calls } = setup({ stack: { idempotency: { maxEntries: 2 } } });
    for (const k of ['a', 'b', 'c'])
      await dispatcher.dispatch('search.web', { query: 'x' }, { idempotencyKey: k });
    await dispatcher.dispatch('search.web', { query: 'x' }, { idempotencyKey: 'c' });
    await dispatcher.dispatch('search.web', { query: 'x' }, { idempotencyKey: 'b' });
    expect(calls).toHaveLength(3);
    await dispatcher.dispatch('search.web', { query: 'x' }, { idempotencyKey: 'a' });
    expect(calls).toHaveLength(4);
  });

  it('evicts expired entries on access, with no timer of its own', async () => {
    const layer = idempotency({ ttlMs: 1_000 });
    const registry = new ToolRegistry().register({
      name: 'a.b',
      inputSchema: z.object({}),
      handler: () => 1,
    });
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), layer]);
    for (let i = 0; i < 50; i++) await dispatcher.dispatch('a.b', {}, { idempotencyKey: `k${i}` });
    expect(layer.size().cached).toBe(50);
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(1_000);
    await dispatcher.dispatch('a.b', {}, { idempotencyKey: 'fresh' });
    expect(layer.size().cached).toBe(1);
  });

  it('detaches only the caller that aborts; the others still get the result', async () => {
    const release = gate<string>();
    let signal: AbortSignal | undefined;
    const { dispatcher, calls } = setup({
      handler: (_args, ctx) => {
        signal = ctx.signal;
        return release.promise;
      },
    });
    const leaderCaller = new AbortController();
    const leader = dispatcher.dispatch('search.web', { query: 'x' }, { ...key, signal: leaderCaller.signal });
    const follower = dispatcher.dispatch('search.web', { query: 'x' }, key);
    await flush();
    leaderCaller.abort();
    expect(failure(await leader)).toMatchObject({ kind: 'cancelled', jsonrpcCode: -32603 });
    expect(signal?.aborted).toBe(false);
    release.open('still useful');
    await expect(follower).resolves.toEqual({ ok: true, result: 'still useful', attempts: 0 });
    expect(calls).toHaveLength(1);
  });

  it('aborts the shared execution only when every waiting caller has aborted', async () => {
    let signal: AbortSignal | undefined;
    const { dispatcher } = setup({
      handler: (_args, ctx) => {
        signal = ctx.signal;
        return new Promise<never>(() => {});
      },
    });
    const callers = [new AbortController(), new AbortController()];
    const pending = callers.map((c) =>
      dispatcher.dispatch('search.web', { query: 'x' }, { ...key, signal: c.signal }),
    );
    await flush();
    callers[1]?.abort();
    await flush();
    expect(signal?.aborted).toBe(false);
    callers[0]?.abort();
    await flush();
    expect(signal?.aborted).toBe(true);
    const outcomes = await Promise.all(pending);
    expect(outcomes.map((o) => (o.ok ? 'ok' : o.kind))).toEqual(['cancelled', 'cancelled']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('runs again after an execution every caller abandoned', async () => {
    let runs = 0;
    const { dispatcher } = setup({ handler: () => (++runs === 1 ? new Promise<never>(() => {}) : 'second') });
    const caller = new AbortController();
    const first = dispatcher.dispatch('search.web', { query: 'x' }, { ...key, signal: caller.signal });
    await flush();
    caller.abort();
    await first;
    await flush();
    await expect(dispatcher.dispatch('search.web', { query: 'x' }, key)).resolves.toMatchObject({
      result: 'second',
    });
  });

  it('remembers a success that finished after every caller left, as with a store', async () => {
    let runs = 0;
    const registry = new ToolRegistry().register({
      name: 'a.b',
      inputSchema: z.object({}),
      handler: () => ++runs,
    });
    const held = gate<void>();
    // A layer that ignores its signal after the handler succeeded (say, a slow audit write).
    const slowAfter = async (_ctx: unknown, next: () => Promise<void>) => {
      await next();
      await held.promise;
    };
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), idempotency(), slowAfter]);
    const caller = new AbortController();
    const first = dispatcher.dispatch('a.b', {}, { idempotencyKey: 'late', signal: caller.signal });
    await flush();
    caller.abort();
    expect(failure(await first).kind).toBe('cancelled');
    held.open();
    await flush();
    expect(await dispatcher.dispatch('a.b', {}, { idempotencyKey: 'late' })).toMatchObject({
      ok: true,
      result: 1,
      attempts: 0,
    });
    expect(runs).toBe(1);
  });

  it('leaves no abort listener on a caller signal after the call', async () => {
    const { dispatcher } = setup();
    const caller = new AbortController();
    await dispatcher.dispatch('search.web', { query: 'x' }, { ...key, signal: caller.signal });
    await dispatcher.dispatch('search.web', { query: 'x' }, { ...key, signal: caller.signal });
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
  });
});

describe('idempotency fingerprint', () => {
  it('copes with huge args', async () => {
    const registry = new ToolRegistry().register({
      name: 'a.b',
      inputSchema: z.object({ blob: z.string() }),
      handler: () => 'ok',
    });
    const layer = idempotency();
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), layer]);
    const blob = 'x'.repeat(1_000_000);
    await dispatcher.dispatch('a.b', { blob }, key);
    await expect(dispatcher.dispatch('a.b', { blob }, key)).resolves.toMatchObject({ attempts: 0 });
    const other = await dispatcher.dispatch('a.b', { blob: `${blob}y` }, key);
    expect(other.ok ? 'ok' : other.kind).toBe('idempotency_conflict');
  });

  it('copes with cyclic args that reach it without schema validation', async () => {
    const registry = new ToolRegistry().register({ name: 'a.b', inputSchema: z.any(), handler: () => 'ok' });
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), idempotency()]);
    const args: Record<string, unknown> = { a: 1 };
    args.self = args;
    await expect(dispatcher.dispatch('a.b', args, key)).resolves.toMatchObject({ ok: true, attempts: 1 });
    await expect(dispatcher.dispatch('a.b', args, key)).resolves.toMatchObject({ ok: true, attempts: 0 });
  });

  it('works inside any stack order that has the tool resolved', async () => {
    const registry = new ToolRegistry().register({
      name: 'a.b',
      inputSchema: z.object({}),
      handler: () => 'ok',
    });
    const dispatcher = createDispatcher(defaultStack({ registry }));
    await dispatcher.dispatch('a.b', {}, key);
    await expect(dispatcher.dispatch('a.b', {}, key)).resolves.toMatchObject({ attempts: 0 });
  });
});

describe('idempotency at scale', () => {
  it('keeps maxEntries across its shards and serves every live key', async () => {
    const layer = idempotency({ maxEntries: 20_000, ttlMs: 1_000_000 });
    const registry = new ToolRegistry().register({
      name: 'a.b',
      inputSchema: z.object({ n: z.number() }),
      handler: ({ n }) => n,
    });
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), layer]);
    for (let n = 0; n < 25_000; n++) await dispatcher.dispatch('a.b', { n }, { idempotencyKey: `k${n}` });
    expect(layer.size().cached).toBe(20_000);
    expect(await dispatcher.dispatch('a.b', { n: 24_999 }, { idempotencyKey: 'k24999' })).toMatchObject({
      attempts: 0,
      result: 24_999,
    });
    expect(await dispatcher.dispatch('a.b', { n: 5_000 }, { idempotencyKey: 'k5000' })).toMatchObject({
      attempts: 0,
    });
    expect(await dispatcher.dispatch('a.b', { n: 4_999 }, { idempotencyKey: 'k4999' })).toMatchObject({
      attempts: 1,
    });
  });

  it('tells args apart by content, not by identity or key order, including nested values', async () => {
    const { dispatcher, calls } = setup();
    const k = { idempotencyKey: 'nested' };
    const registry2 = new ToolRegistry().register({ name: 'n.t', inputSchema: z.any(), handler: () => 'ok' });
    const d = createDispatcher([errorMapping(), toolLookup(registry2), idempotency()]);
    await d.dispatch('n.t', { a: [1, { b: 'x', c: null }], d: 1n, e: new Date(5) }, k);
    expect(await d.dispatch('n.t', { e: new Date(5), d: 1n, a: [1, { c: null, b: 'x' }] }, k)).toMatchObject({
      attempts: 0,
    });
    for (const other of [
      { a: [1, { b: 'x', c: 0 }], d: 1n, e: new Date(5) },
      { a: ['1', { b: 'x', c: null }], d: 1n, e: new Date(5) },
      { a: [1, { b: 'x', c: null }], d: 2n, e: new Date(5) },
    ]) {
      expect(await d.dispatch('n.t', other, k)).toMatchObject({ kind: 'idempotency_conflict' });
    }
    expect(calls).toHaveLength(0);
    void dispatcher;
  });
});
