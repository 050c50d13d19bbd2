// Regression (fixed): middleware/timeout.ts: when the attempt step does not claim the attempt, the layer calls
// attempt.own('layer', reject) only after next() returned. An interrupt that happened during
// next() (a synchronous caller abort) already ended the attempt with no reject to call, and the
// layer's own `attempt.end()` then returns false on both paths: its promise never settles.
// The dispatcher subscribed to the signal after it aborted, so dispatch() never resolves.
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createDispatcher, errorMapping, retry, timeout, ToolRegistry, toolLookup } from '../../index.js';
import { flush } from '../helpers/gate.js';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

it('an overall timeout + per-attempt timeout stack answers a caller that aborts synchronously', async () => {
  const controller = new AbortController();
  const registry = new ToolRegistry().register({
    name: 'slow.op',
    inputSchema: z.object({}),
    handler: () => {
      controller.abort();
      return new Promise<never>(() => {});
    },
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
    timeout({ defaultMs: 10_000 }), // one deadline over the whole call
    retry({ random: () => 0 }),
    timeout({ defaultMs: 1_000 }), // per attempt
  ]);
  let outcome: unknown;
  void dispatcher.dispatch('slow.op', {}, { signal: controller.signal }).then((o) => (outcome = o));
  await vi.advanceTimersByTimeAsync(60_000);
  await flush();
  expect(stackSettled).toBe(true);
  expect(outcome).toMatchObject({ kind: 'cancelled' }); // and so dispatch() never resolves
});
