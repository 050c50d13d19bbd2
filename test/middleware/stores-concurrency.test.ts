import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  concurrencyLimit,
  createDispatcher,
  defaultStack,
  DispatchError,
  errorMapping,
  ToolRegistry,
  toolLookup,
  type DispatchEvent,
} from '../../index.js';
import { memorySlotStore } from '../../middleware/index.js';
import type { SlotStore } from '../../index.js';
import { flush, gate, type Gate } from '../helpers/gate.js';
import { asyncSlotStore } from './stores-async.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

function gated() {
  const gates: Array<Gate<unknown>> = [];
  let running = 0;
  let most = 0;
  const handler = async () => {
    running += 1;
    most = Math.max(most, running);
    const g = gate<unknown>();
    gates.push(g);
    try {
      return await g.promise;
    } finally {
      running -= 1;
    }
  };
  return { handler, gates, running: () => running, most: () => most };
}

function worker(
  handler: () => unknown,
  concurrency: { max: number; store?: SlotStore; onStoreError?: 'fail' | 'local' },
) {
  const events: DispatchEvent[] = [];
  const registry = new ToolRegistry().register({ name: 'api.call', inputSchema: z.object({}), handler });
  const dispatcher = createDispatcher(
    defaultStack({ registry, concurrency, retry: { maxAttempts: 1 }, timeout: { defaultMs: Infinity } }),
    { onEvent: (event) => events.push(event) },
  );
  return { dispatcher, events, types: () => events.map((event) => event.type) };
}

describe.each([
  ['a synchronous store (memory)', (store: SlotStore) => store],
  ['a store that answers with promises', (store: SlotStore) => asyncSlotStore(store)],
])('concurrencyLimit on %s', (_name, wrapStore) => {
  it("caps calls across processes at the pool size, on top of each process's own cap", async () => {
    const pool = memorySlotStore({ max: 3, pool: 'api' });
    const store = wrapStore(pool);
    const { handler, gates, running, most } = gated();
    const a = worker(handler, { max: 2, store });
    const b = worker(handler, { max: 2, store });
    const calls = [a, a, a, b, b, b].map((w) => w.dispatcher.dispatch('api.call', {}));
    await flush(40);
    expect(running()).toBe(3);
    expect(a.types().concat(b.types())).toContain('concurrency.queued');
    for (let i = 0; i < 6; i++) {
      gates[i]?.open(i);
      await flush(40);
    }
    const outcomes = await Promise.all(calls);
    expect(outcomes.every((outcome) => outcome.ok)).toBe(true);
    expect(most()).toBe(3);
    expect(pool.load()).toEqual({ running: 0, queued: 0 });
  });

  it("gives the pool's permit back when a queued caller aborts", async () => {
    const pool = memorySlotStore({ max: 1 });
    const store = wrapStore(pool);
    const { handler, gates } = gated();
    const a = worker(handler, { max: 4, store });
    const first = a.dispatcher.dispatch('api.call', {});
    const controller = new AbortController();
    const waiting = a.dispatcher.dispatch('api.call', {}, { signal: controller.signal });
    await flush(40);
    controller.abort();
    expect(await waiting).toMatchObject({ ok: false, kind: 'cancelled' });
    gates[0]?.open('first');
    expect(await first).toMatchObject({ ok: true });
    await flush(40);
    expect(pool.load()).toEqual({ running: 0, queued: 0 });
    const third = a.dispatcher.dispatch('api.call', {});
    await flush(40);
    gates[1]?.open('third');
    expect(await third).toMatchObject({ ok: true, result: 'third' });
  });
});

// A pool that cannot be reached: every acquire fails, as a store past its deadline does.
function downStore(): SlotStore {
  const down = () => {
    throw new DispatchError('store_unavailable', 'the pool is down');
  };
  return { pool: 'down', max: 1, tryAcquire: down, enqueue: down, renew: down, release: down, load: down };
}

describe('concurrencyLimit on a store that fails', () => {
  it('fails closed with store_unavailable, without running the handler, by default', async () => {
    let runs = 0;
    const a = worker(() => ++runs, { max: 2, store: downStore() });
    expect(await a.dispatcher.dispatch('api.call', {})).toMatchObject({
      ok: false,
      kind: 'store_unavailable',
    });
    expect(runs).toBe(0);
  });

  it("runs under the process's own cap with onStoreError: 'local'", async () => {
    let runs = 0;
    const a = worker(() => ++runs, { max: 2, store: downStore(), onStoreError: 'local' });
    expect(await a.dispatcher.dispatch('api.call', {})).toEqual({ ok: true, result: 1, attempts: 1 });
  });

  it('fails a queued caller with store_unavailable when the store fails its waiter', async () => {
    const pool = memorySlotStore({ max: 1 });
    const store: SlotStore = {
      ...pool,
      enqueue: (waiter) => {
        queueMicrotask(() => waiter.fail(new DispatchError('store_unavailable', 'lost the pool')));
        return () => {};
      },
    };
    const { handler, gates } = gated();
    const a = worker(handler, { max: 4, store });
    const first = a.dispatcher.dispatch('api.call', {});
    expect(await a.dispatcher.dispatch('api.call', {})).toMatchObject({
      ok: false,
      kind: 'store_unavailable',
    });
    gates[0]?.open('ok');
    expect(await first).toMatchObject({ ok: true });
  });

  it('validates its store and onStoreError', () => {
    expect(() => concurrencyLimit({ store: {} as SlotStore })).toThrow(/store must be a SlotStore/);
    expect(() => concurrencyLimit({ store: memorySlotStore(), onStoreError: 'open' as 'local' })).toThrow(
      /onStoreError/,
    );
  });

  it('works as a plain layer outside the default stack', async () => {
    const registry = new ToolRegistry().register({
      name: 'api.call',
      inputSchema: z.object({}),
      handler: () => 'ok',
    });
    const dispatcher = createDispatcher([
      errorMapping(),
      toolLookup(registry),
      concurrencyLimit({ max: 1, store: asyncSlotStore(memorySlotStore({ max: 1 })) }),
    ]);
    expect(await dispatcher.dispatch('api.call', {})).toMatchObject({ ok: true, result: 'ok' });
  });
});
