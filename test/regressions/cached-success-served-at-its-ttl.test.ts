// Regression (issue 9, item 10): with a fractional clock (performance.now), a cached success was
// still served at exactly now − completedAt = ttlMs, where the contract says < ttlMs.
import { expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../../index.js';

it('stops serving a success at exactly its TTL on a fractional clock', async () => {
  let now = 1_000.25;
  let runs = 0;
  const registry = new ToolRegistry().register({
    name: 'kv.put',
    inputSchema: z.object({}),
    handler: () => ++runs,
  });
  const dispatcher = createDispatcher(
    defaultStack({ registry, idempotency: { ttlMs: 100, clock: { now: () => now } } }),
  );
  await dispatcher.dispatch('kv.put', {}, { idempotencyKey: 'k' });
  now = 1_100.2499;
  await expect(dispatcher.dispatch('kv.put', {}, { idempotencyKey: 'k' })).resolves.toMatchObject({
    result: 1,
    attempts: 0,
  });
  now = 1_100.25;
  await expect(dispatcher.dispatch('kv.put', {}, { idempotencyKey: 'k' })).resolves.toMatchObject({
    result: 2,
    attempts: 1,
  });
});
