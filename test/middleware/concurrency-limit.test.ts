import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { concurrencyLimit, createDispatcher, errorMapping, ToolRegistry, toolLookup } from '../../index.js';
import { flush, gate } from '../helpers/gate.js';

function withLimit(max: number) {
  const release = gate();
  const started: number[] = [];
  const registry = new ToolRegistry().register({
    name: 'net.fetch',
    inputSchema: z.object({ i: z.number() }),
    handler: async ({ i }) => {
      started.push(i);
      await release.promise;
      return i;
    },
  });
  const layer = concurrencyLimit({ max });
  const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), layer]);
  return { dispatcher, layer, release, started };
}

describe('concurrencyLimit alone', () => {
  it('lets `max` calls in and queues the rest in FIFO order', async () => {
    const { dispatcher, layer, release, started } = withLimit(3);
    const all = Promise.all(Array.from({ length: 10 }, (_, i) => dispatcher.dispatch('net.fetch', { i })));
    await flush();
    expect(started).toEqual([0, 1, 2]);
    expect(layer.load()).toEqual({ running: 3, queued: 7 });
    release.open();
    await all;
    expect(started).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(layer.load()).toEqual({ running: 0, queued: 0 });
  });

  it('hands the slot of a caller that left the queue to the next in line', async () => {
    const { dispatcher, layer, release, started } = withLimit(1);
    const first = dispatcher.dispatch('net.fetch', { i: 0 });
    const leaving = new AbortController();
    const gone = dispatcher.dispatch('net.fetch', { i: 1 }, { signal: leaving.signal });
    const third = dispatcher.dispatch('net.fetch', { i: 2 });
    await flush();
    leaving.abort();
    expect(await gone).toMatchObject({ kind: 'cancelled', attempts: 0 });
    expect(layer.load().queued).toBe(1);
    release.open();
    await Promise.all([first, third]);
    expect(started).toEqual([0, 2]);
  });

  it('frees the slot when the inner layers fail', async () => {
    const registry = new ToolRegistry().register({
      name: 'bad.op',
      inputSchema: z.object({}),
      handler: () => {
        throw new Error('x');
      },
    });
    const layer = concurrencyLimit({ max: 1 });
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), layer]);
    await dispatcher.dispatch('bad.op', {});
    await dispatcher.dispatch('bad.op', {});
    expect(layer.load()).toEqual({ running: 0, queued: 0 });
  });

  it.each([[0], [1.5], [Number.NaN], [Infinity]])('rejects max %s with a TypeError naming it', (max) => {
    expect(() => concurrencyLimit({ max })).toThrow(/max/);
  });

  it('is a named async function', () => {
    expect(concurrencyLimit().name).toBe('concurrencyLimit');
  });
});
