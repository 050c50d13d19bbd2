import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createDispatcher,
  defaultStack,
  errorMapping,
  idempotency,
  toolLookup,
  ToolRegistry,
  type DispatchEvent,
  type ToolContext,
} from '../../index.js';
import { memoryIdempotencyStore } from '../../middleware/index.js';
import { lapsingIdempotencyStore } from '../helpers/lapsing-idempotency-store.js';
import type { IdempotencyStore } from '../../index.js';
import { flush, gate, type Gate } from '../helpers/gate.js';
import { fingerprint } from '../../src/fingerprint.js';
import { asyncIdempotencyStore } from './stores-async.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/**
 * The stacks a store-backed leader runs in: the default stack (layers between it and the
 * attempt step), and the idempotency layer right outside the attempt step.
 */
type Shape = 'default stack' | 'attempt step right inside';

/** One "process": its own dispatcher (own in-memory flights) on the shared store. */
function worker(
  store: IdempotencyStore,
  handler: (args: { n: number }, ctx: ToolContext) => unknown,
  shape: Shape = 'default stack',
  idempotent = false,
) {
  const events: DispatchEvent[] = [];
  const registry = new ToolRegistry().register({
    name: 'pay.charge',
    inputSchema: z.object({ n: z.number() }),
    idempotent,
    handler,
  });
  const stack =
    shape === 'default stack'
      ? defaultStack({
          registry,
          idempotency: { store, ttlMs: 60_000 },
          retry: { maxAttempts: 1 },
          timeout: { defaultMs: Infinity },
        })
      : [errorMapping(), toolLookup(registry), idempotency({ store, ttlMs: 60_000 })];
  const dispatcher = createDispatcher(stack, { onEvent: (event) => events.push(event) });
  const types = () => events.map((event) => event.type);
  return { dispatcher, events, types };
}

const key = { idempotencyKey: 'order-1' };

function gated() {
  const gates: Array<Gate<unknown>> = [];
  let runs = 0;
  const handler = () => {
    runs += 1;
    const g = gate<unknown>();
    gates.push(g);
    return g.promise;
  };
  return { handler, gates, runs: () => runs };
}

describe.each([
  ['a synchronous store (memory)', (store: IdempotencyStore) => store],
  ['a store that answers with promises', (store: IdempotencyStore) => asyncIdempotencyStore(store)],
])('idempotency on %s', (_name, wrapStore) => {
  it('serves a second call with the key from the store without running the handler', async () => {
    const store = wrapStore(memoryIdempotencyStore());
    let runs = 0;
    const a = worker(store, ({ n }) => ({ charged: n, run: ++runs }));
    const b = worker(store, ({ n }) => ({ charged: n, run: ++runs }));
    expect(await a.dispatcher.dispatch('pay.charge', { n: 5 }, key)).toEqual({
      ok: true,
      result: { charged: 5, run: 1 },
      attempts: 1,
    });
    expect(await b.dispatcher.dispatch('pay.charge', { n: 5 }, key)).toEqual({
      ok: true,
      result: { charged: 5, run: 1 },
      attempts: 0,
    });
    expect(b.events.find((event) => event.type === 'idempotency.hit')).toMatchObject({
      key: 'order-1',
      source: 'cache',
    });
    expect(runs).toBe(1);
  });

  it('makes a caller in another process wait for the running leader and get its result', async () => {
    const store = wrapStore(memoryIdempotencyStore());
    const { handler, gates, runs } = gated();
    const a = worker(store, handler);
    const b = worker(store, handler);
    const first = a.dispatcher.dispatch('pay.charge', { n: 1 }, key);
    await flush();
    const second = b.dispatcher.dispatch('pay.charge', { n: 1 }, key);
    await flush();
    expect(runs()).toBe(1);
    expect(b.types()).toContain('idempotency.hit');
    gates[0]?.open('charged');
    expect(await first).toEqual({ ok: true, result: 'charged', attempts: 1 });
    expect(await second).toEqual({ ok: true, result: 'charged', attempts: 0 });
    expect(runs()).toBe(1);
  });

  it('lets the follower run the key itself when the leader fails', async () => {
    const store = wrapStore(memoryIdempotencyStore());
    const { handler, gates, runs } = gated();
    const a = worker(store, handler);
    const b = worker(store, handler);
    const first = a.dispatcher.dispatch('pay.charge', { n: 1 }, key);
    await flush();
    const second = b.dispatcher.dispatch('pay.charge', { n: 1 }, key);
    await flush();
    gates[0]?.fail(new Error('card declined'));
    expect(await first).toMatchObject({ ok: false, kind: 'internal' });
    await flush();
    expect(runs()).toBe(2);
    gates[1]?.open('charged on the second try');
    expect(await second).toEqual({ ok: true, result: 'charged on the second try', attempts: 1 });
  });

  it('reports the same key with other args as idempotency_conflict across processes', async () => {
    const store = wrapStore(memoryIdempotencyStore());
    const { handler, gates } = gated();
    const a = worker(store, handler);
    const b = worker(store, handler);
    const first = a.dispatcher.dispatch('pay.charge', { n: 1 }, key);
    await flush();
    expect(await b.dispatcher.dispatch('pay.charge', { n: 2 }, key)).toMatchObject({
      ok: false,
      kind: 'idempotency_conflict',
    });
    gates[0]?.open('done');
    await first;
    expect(await b.dispatcher.dispatch('pay.charge', { n: 2 }, key)).toMatchObject({
      ok: false,
      kind: 'idempotency_conflict',
    });
  });

  it('shares one store claim among the callers of one process', async () => {
    const inner = asyncIdempotencyStore(memoryIdempotencyStore());
    const store = wrapStore(inner);
    const { handler, gates, runs } = gated();
    const a = worker(store, handler);
    const calls = [1, 2, 3].map(() => a.dispatcher.dispatch('pay.charge', { n: 1 }, key));
    await flush();
    gates[0]?.open('once');
    const outcomes = await Promise.all(calls);
    expect(outcomes.map((outcome) => outcome.ok && outcome.result)).toEqual(['once', 'once', 'once']);
    expect(runs()).toBe(1);
    expect(inner.faults.calls.claim).toBe(1);
  });

  it('lets a caller that aborts leave without ending the execution others wait on', async () => {
    const store = wrapStore(memoryIdempotencyStore());
    const { handler, gates } = gated();
    const a = worker(store, handler);
    const controller = new AbortController();
    const leaving = a.dispatcher.dispatch('pay.charge', { n: 1 }, { ...key, signal: controller.signal });
    const staying = a.dispatcher.dispatch('pay.charge', { n: 1 }, key);
    await flush();
    controller.abort();
    expect(await leaving).toMatchObject({ ok: false, kind: 'cancelled' });
    gates[0]?.open('kept');
    expect(await staying).toMatchObject({ ok: true, result: 'kept' });
  });
});

describe('idempotency on a store that fails', () => {
  it('fails closed with store_unavailable, without running the handler, when the claim fails', async () => {
    const store = asyncIdempotencyStore(memoryIdempotencyStore());
    store.faults.failing.add('claim');
    let runs = 0;
    const a = worker(store, () => ++runs);
    const outcome = await a.dispatcher.dispatch('pay.charge', { n: 1 }, key);
    expect(outcome).toMatchObject({ ok: false, kind: 'store_unavailable', jsonrpcCode: -32603 });
    expect(runs).toBe(0);
  });

  it('returns the result when the completion fails, and stores it once the store is back', async () => {
    const store = asyncIdempotencyStore(memoryIdempotencyStore());
    store.faults.failing.add('complete');
    let runs = 0;
    const a = worker(store, () => ++runs);
    const b = worker(store, () => ++runs);
    expect(await a.dispatcher.dispatch('pay.charge', { n: 1 }, key)).toEqual({
      ok: true,
      result: 1,
      attempts: 1,
    });
    expect(a.events.find((event) => event.type === 'idempotency.store_error')).toMatchObject({
      key: 'order-1',
      operation: 'complete',
    });
    store.faults.failing.delete('complete');
    await vi.advanceTimersByTimeAsync(60);
    expect(await b.dispatcher.dispatch('pay.charge', { n: 1 }, key)).toEqual({
      ok: true,
      result: 1,
      attempts: 0,
    });
    expect(runs).toBe(1);
  });

  it("serves the winner's stored result to a leader whose late completion lost", async () => {
    const store = asyncIdempotencyStore(lapsingIdempotencyStore({ leaseMs: 300 }));
    const gates: Array<Gate<unknown>> = [];
    // The handler ignores its signal, as a charge in progress would.
    const handler = () => {
      const g = gate<unknown>();
      gates.push(g);
      return g.promise;
    };
    // Idempotent: a tool that is not is never run again over a lapsed lease (issue 31, item 17).
    const a = worker(store, handler, 'default stack', true);
    const b = worker(store, handler, 'default stack', true);
    store.faults.faked.add('renew');
    const first = a.dispatcher.dispatch('pay.charge', { n: 1 }, key);
    await vi.advanceTimersByTimeAsync(301);
    const second = b.dispatcher.dispatch('pay.charge', { n: 1 }, key);
    await flush();
    gates[1]?.open('B');
    expect(await second).toMatchObject({ ok: true, result: 'B' });
    gates[0]?.open('A');
    expect(await first).toMatchObject({ ok: true, result: 'B' });
  });

  it("lets a waiting caller run the key once a crashed leader's lease has ended", async () => {
    const store = asyncIdempotencyStore(lapsingIdempotencyStore({ leaseMs: 300 }));
    // A crashed leader: it claimed the key and never renewed, completed or released it.
    expect((await store.claim('order-1', fingerprint('pay.charge', { n: 1 }))).kind).toBe('lead');
    let runs = 0;
    const b = worker(store, () => ++runs);
    const outcome = b.dispatcher.dispatch('pay.charge', { n: 1 }, key);
    await vi.advanceTimersByTimeAsync(299);
    expect(runs).toBe(0);
    await vi.advanceTimersByTimeAsync(2);
    expect(await outcome).toEqual({ ok: true, result: 1, attempts: 1 });
  });
});

describe.each<Shape>(['default stack', 'attempt step right inside'])(
  'a store-backed leader in the %s',
  (shape) => {
    it("aborts the leader that lost its lease, says so, and gives its callers the new leader's result", async () => {
      const store = asyncIdempotencyStore(lapsingIdempotencyStore({ leaseMs: 300 }));
      const aborted: unknown[] = [];
      const gates: Array<Gate<unknown>> = [];
      const handler = (_args: unknown, ctx: ToolContext) => {
        const g = gate<unknown>();
        gates.push(g);
        ctx.signal.addEventListener('abort', () => {
          aborted.push(ctx.signal.reason);
          g.fail(ctx.signal.reason);
        });
        return g.promise;
      };
      // Idempotent: a tool that is not is never run again over a lapsed lease (issue 31, item 17).
      const a = worker(store, handler, shape, true);
      const b = worker(store, handler, shape, true);
      // A's renewals never reach the store (a partition), so its lease lapses.
      store.faults.faked.add('renew');
      const first = a.dispatcher.dispatch('pay.charge', { n: 1 }, key);
      await vi.advanceTimersByTimeAsync(301);
      const second = b.dispatcher.dispatch('pay.charge', { n: 1 }, key);
      await flush();
      expect(gates).toHaveLength(2);
      store.faults.faked.delete('renew');
      await vi.advanceTimersByTimeAsync(100);
      expect(a.types()).toContain('idempotency.lease_lost');
      expect(aborted).toEqual([expect.objectContaining({ kind: 'lease_lost' })]);
      expect(a.events.find((event) => event.type === 'dispatch.attempt_failed')).toMatchObject({
        kind: 'cancelled',
      });
      gates[1]?.open('charged by B');
      expect(await second).toMatchObject({ ok: true, result: 'charged by B' });
      expect(await first).toMatchObject({ ok: true, result: 'charged by B' });
    });

    it('stops a leader whose handler ignores its signal as soon as its lease is lost', async () => {
      const store = asyncIdempotencyStore(lapsingIdempotencyStore({ leaseMs: 300 }));
      const gates: Array<Gate<unknown>> = [];
      const handler = () => {
        const g = gate<unknown>();
        gates.push(g);
        return g.promise;
      };
      const a = worker(store, handler, shape, true);
      const b = worker(store, handler, shape, true);
      store.faults.faked.add('renew');
      const first = a.dispatcher.dispatch('pay.charge', { n: 1 }, key);
      await vi.advanceTimersByTimeAsync(301);
      const second = b.dispatcher.dispatch('pay.charge', { n: 1 }, key);
      await flush();
      store.faults.faked.delete('renew');
      await vi.advanceTimersByTimeAsync(100);
      expect(a.types()).toContain('idempotency.lease_lost');
      // A follows B now, although its own handler never settled.
      gates[1]?.open('charged by B');
      expect(await first).toMatchObject({ ok: true, result: 'charged by B' });
      expect(await second).toMatchObject({ ok: true, result: 'charged by B' });
    });

    it('aborts the execution with the reason of the last caller to leave', async () => {
      const store = asyncIdempotencyStore(memoryIdempotencyStore());
      const reasons: unknown[] = [];
      const handler = (_args: unknown, ctx: ToolContext) =>
        new Promise((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => {
            reasons.push(ctx.signal.reason);
            reject(ctx.signal.reason);
          });
        });
      const a = worker(store, handler, shape);
      const controller = new AbortController();
      const call = a.dispatcher.dispatch('pay.charge', { n: 1 }, { ...key, signal: controller.signal });
      await flush();
      controller.abort('caller gone');
      expect(await call).toMatchObject({ ok: false, kind: 'cancelled' });
      await flush();
      expect(reasons).toEqual(['caller gone']);
      // The key was released: the next caller leads at once.
      const again = worker(store, () => 'ran again', shape);
      expect(await again.dispatcher.dispatch('pay.charge', { n: 1 }, key)).toMatchObject({
        ok: true,
        result: 'ran again',
      });
    });

    it('gives the handler no deadline and a signal that has not aborted', async () => {
      const store = asyncIdempotencyStore(memoryIdempotencyStore());
      const seen: Array<{ deadline: number; aborted: boolean }> = [];
      const a = worker(
        store,
        (_args, ctx) => {
          seen.push({ deadline: ctx.deadline, aborted: ctx.signal.aborted });
          return 'ok';
        },
        shape,
      );
      expect(await a.dispatcher.dispatch('pay.charge', { n: 1 }, key)).toMatchObject({
        ok: true,
        result: 'ok',
      });
      expect(seen).toEqual([{ deadline: Infinity, aborted: false }]);
    });
  },
);
