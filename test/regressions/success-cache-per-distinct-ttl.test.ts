// Regression: the memory idempotency store made one success cache per distinct TTL and kept it
// for ever, so calls each asking their own `idempotencyTtlMs` (or a task store settling each task
// for the time its task has left) grew a list of caches that every claim scanned. The layer's TTL
// keeps its cache; every other TTL shares one whose entries carry their own.
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';

const built = vi.hoisted(() => ({ caches: 0 }));
vi.mock('../../middleware/idempotency/success-cache.js', async (original) => {
  const real = await original<typeof import('../../middleware/idempotency/success-cache.js')>();
  class CountedCache extends real.SuccessCache {
    constructor(...args: ConstructorParameters<typeof real.SuccessCache>) {
      super(...args);
      built.caches += 1;
    }
  }
  return { ...real, SuccessCache: CountedCache };
});

const { createDispatcher, defaultStack, ToolRegistry } = await import('../../index.js');

function kv(now: () => number) {
  let runs = 0;
  const registry = new ToolRegistry().register({
    name: 'kv.put',
    inputSchema: z.object({}),
    handler: () => ++runs,
  });
  return createDispatcher(defaultStack({ registry, idempotency: { ttlMs: 1_000, clock: { now } } }));
}

describe('success caches of the memory idempotency store', () => {
  it('stay two however many TTLs calls ask for', async () => {
    built.caches = 0;
    const dispatcher = kv(() => 0);
    for (let i = 1; i <= 200; i++) {
      await dispatcher.dispatch('kv.put', {}, { idempotencyKey: `k${i}`, idempotencyTtlMs: 10_000 + i });
    }
    await dispatcher.dispatch('kv.put', {}, { idempotencyKey: 'plain' });
    expect(built.caches).toBeLessThanOrEqual(2);
  });

  it('serves each success for its own TTL in the shared cache, a longer one ahead of it or not', async () => {
    let now = 0;
    const dispatcher = kv(() => now);
    const call = (key: string, idempotencyTtlMs?: number) =>
      dispatcher.dispatch(
        'kv.put',
        {},
        idempotencyTtlMs === undefined ? { idempotencyKey: key } : { idempotencyKey: key, idempotencyTtlMs },
      );
    await call('long', 100);
    await call('short', 50);
    now = 49;
    await expect(call('short', 50)).resolves.toMatchObject({ attempts: 0 });
    now = 50;
    await expect(call('short', 50)).resolves.toMatchObject({ attempts: 1 });
    now = 99;
    await expect(call('long', 100)).resolves.toMatchObject({ attempts: 0 });
    now = 100;
    await expect(call('long', 100)).resolves.toMatchObject({ attempts: 1 });
  });
});
