import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  concurrencyLimit,
  createDispatcher,
  defaultStack,
  errorMapping,
  ToolRegistry,
  toolLookup,
  type DispatchContext,
  type DispatchEvent,
  type Middleware,
} from '../../index.js';
import { flush, gate } from '../helpers/gate.js';

const byTenant = (ctx: DispatchContext) => (ctx.args as { t?: string }).t;

function gatedRegistry() {
  const release = gate();
  const started: string[] = [];
  const registry = new ToolRegistry().register({
    name: 'api.call',
    inputSchema: z.object({ t: z.string().optional(), i: z.number() }),
    handler: async ({ t, i }) => {
      started.push(`${t ?? '-'}${i}`);
      await release.promise;
      return i;
    },
  });
  return { registry, release, started };
}

function plain(registry: ToolRegistry, layer: Middleware) {
  const events: DispatchEvent[] = [];
  const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), layer], {
    onEvent: (event) => events.push(event),
  });
  return { dispatcher, events };
}

describe('concurrencyLimit partitions (key)', () => {
  it('gives each key its own max and its own FIFO queue', async () => {
    const { registry, release, started } = gatedRegistry();
    const layer = concurrencyLimit({ max: 1, key: byTenant });
    const { dispatcher, events } = plain(registry, layer);
    const calls = [
      dispatcher.dispatch('api.call', { t: 'a', i: 0 }),
      dispatcher.dispatch('api.call', { t: 'a', i: 1 }),
      dispatcher.dispatch('api.call', { t: 'b', i: 2 }),
      dispatcher.dispatch('api.call', { i: 3 }),
    ];
    await flush();
    expect(started).toEqual(['a0', 'b2', '-3']);
    expect(layer.load()).toEqual({ running: 3, queued: 1 });
    expect(events.find((event) => event.type === 'concurrency.queued')).toMatchObject({
      queued: 1,
      max: 1,
      key: 'a',
    });
    release.open();
    await Promise.all(calls);
    expect(started).toEqual(['a0', 'b2', '-3', 'a1']);
  });

  it('keeps idle partitions to a bound, over 100 000 tenants', async () => {
    const registry = new ToolRegistry().register({
      name: 'api.call',
      inputSchema: z.object({ t: z.string(), i: z.number() }),
      handler: ({ i }) => i,
    });
    const layer = concurrencyLimit({ max: 2, key: byTenant });
    const { dispatcher } = plain(registry, layer);
    for (let batch = 0; batch < 100; batch++) {
      const calls = Array.from({ length: 1000 }, (_, i) =>
        dispatcher.dispatch('api.call', { t: `tenant-${batch * 1000 + i}`, i }),
      );
      await Promise.all(calls);
      // Swept each time the map has doubled: about twice the 1 000 busy at once, at most.
      expect(layer.partitionCount()).toBeLessThanOrEqual(2_048);
    }
    expect(layer.load()).toEqual({ running: 0, queued: 0 });
  });

  it('keys the default stack', async () => {
    const { registry, release, started } = gatedRegistry();
    const dispatcher = createDispatcher(
      defaultStack({ registry, concurrency: { max: 1, key: byTenant }, timeout: { defaultMs: Infinity } }),
    );
    const calls = ['a', 'a', 'b', 'c'].map((t, i) => dispatcher.dispatch('api.call', { t, i }));
    await flush();
    expect(started).toEqual(['a0', 'b2', 'c3']);
    release.open();
    expect((await Promise.all(calls)).every((outcome) => outcome.ok)).toBe(true);
    expect(started).toEqual(['a0', 'b2', 'c3', 'a1']);
  });

  it('fails a call internal naming key when the key function answers junk', async () => {
    const { registry, release } = gatedRegistry();
    release.open();
    const layer = concurrencyLimit({ key: () => 42 as unknown as string });
    const { dispatcher } = plain(registry, layer);
    expect(await dispatcher.dispatch('api.call', { i: 0 })).toMatchObject({
      ok: false,
      kind: 'internal',
      message: expect.stringMatching(/key/),
    });
    expect(layer.load()).toEqual({ running: 0, queued: 0 });
  });
});

describe('concurrencyLimit maxQueue', () => {
  it('fails a call overloaded at once, attempts 0, when maxQueue are waiting', async () => {
    const { registry, release, started } = gatedRegistry();
    const layer = concurrencyLimit({ max: 1, maxQueue: 2, key: byTenant });
    const { dispatcher } = plain(registry, layer);
    const calls = [0, 1, 2].map((i) => dispatcher.dispatch('api.call', { t: 'a', i }));
    await flush();
    const refused = await dispatcher.dispatch('api.call', { t: 'a', i: 3 });
    expect(refused).toMatchObject({ ok: false, kind: 'overloaded', attempts: 0, jsonrpcCode: -32603 });
    // Another partition has its own queue.
    const other = dispatcher.dispatch('api.call', { t: 'b', i: 4 });
    await flush();
    expect(started).toEqual(['a0', 'b4']);
    release.open();
    await Promise.all([...calls, other]);
    expect(started).toEqual(['a0', 'b4', 'a1', 'a2']);
  });

  it('with maxQueue 0 never queues, and the default stack does not retry overloaded', async () => {
    const { registry, release } = gatedRegistry();
    const dispatcher = createDispatcher(
      defaultStack({ registry, concurrency: { max: 1, maxQueue: 0 }, timeout: { defaultMs: Infinity } }),
    );
    const first = dispatcher.dispatch('api.call', { i: 0 });
    await flush();
    expect(await dispatcher.dispatch('api.call', { i: 1 })).toMatchObject({
      kind: 'overloaded',
      attempts: 0,
    });
    release.open();
    expect(await first).toMatchObject({ ok: true });
  });

  it('waits without bound by default', async () => {
    const { registry, release, started } = gatedRegistry();
    const layer = concurrencyLimit({ max: 1 });
    const { dispatcher } = plain(registry, layer);
    const calls = Array.from({ length: 50 }, (_, i) => dispatcher.dispatch('api.call', { i }));
    await flush();
    expect(layer.load()).toEqual({ running: 1, queued: 49 });
    release.open();
    expect((await Promise.all(calls)).every((outcome) => outcome.ok)).toBe(true);
    expect(started).toHaveLength(50);
  });

  it.each([
    [{ maxQueue: -1 }, /maxQueue/],
    [{ maxQueue: 1.5 }, /maxQueue/],
    [{ maxQueue: Number.NaN }, /maxQueue/],
    [{ key: 'tenant' as unknown as () => string }, /key/],
  ])('rejects %o with a TypeError naming the option', (options, name) => {
    expect(() => concurrencyLimit(options)).toThrow(TypeError);
    expect(() => concurrencyLimit(options)).toThrow(name);
  });
});
