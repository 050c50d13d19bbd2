// Regression (fixed): src/context.ts: the `signal` setter replaces the base signal and drops the lazy attempt abort;
// timeout's cleanup then only calls setAttemptAbort(previous). A layer inside timeout that
// narrows ctx.signal and restores it as docs/writing-middleware.md asks ("restore what you
// change") writes the attempt's own signal back as the *base* signal, so after the attempt the
// caller's signal is gone from ctx: retry's backoff no longer ends on abort and the next attempt
// runs the handler for a caller that has already been answered `cancelled`.
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createDispatcher,
  errorMapping,
  retry,
  timeout,
  ToolRegistry,
  toolLookup,
  TransientError,
  type Middleware,
} from '../../index.js';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

// The documented pattern: narrow ctx.signal for the layers inside, restore it in finally.
const narrow: Middleware = async function narrow(ctx, next) {
  const parent = ctx.signal;
  const controller = new AbortController();
  const onAbort = () => controller.abort(parent.reason);
  parent.addEventListener('abort', onAbort, { once: true });
  ctx.signal = controller.signal;
  try {
    await next();
  } finally {
    parent.removeEventListener('abort', onAbort);
    ctx.signal = parent;
  }
};

it('a caller abort during backoff stops the retry loop', async () => {
  let calls = 0;
  const registry = new ToolRegistry().register({
    name: 'flaky.op',
    inputSchema: z.object({}),
    handler: async () => {
      calls += 1;
      throw new TransientError('busy');
    },
  });
  const dispatcher = createDispatcher([
    errorMapping(),
    toolLookup(registry),
    retry({ random: () => 0 }),
    timeout({ defaultMs: 1_000 }),
    narrow,
  ]);
  const controller = new AbortController();
  const pending = dispatcher.dispatch('flaky.op', {}, { signal: controller.signal });
  await vi.advanceTimersByTimeAsync(10); // attempt 1 failed, retry is in its 100 ms backoff
  expect(calls).toBe(1);
  controller.abort();
  expect(await pending).toMatchObject({ kind: 'cancelled' });
  await vi.advanceTimersByTimeAsync(5_000);
  expect(calls).toBe(1);
  expect(vi.getTimerCount()).toBe(0);
});
