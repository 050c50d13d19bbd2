// Regression (fixed): onAbort() on a signal that is already aborted never fires. The idempotency leader subscribes to
// its caller's abort only after next() has run the inner layers synchronously, and the dispatcher
// subscribes only after run(ctx). A caller that aborts synchronously while dispatch() runs (from a
// handler or an onEvent listener) is never answered, and its execution is never abandoned.
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { createDispatcher, defaultStack, ToolRegistry } from '../../index.js';
import { z } from 'zod';
import { flush, gate } from '../helpers/gate.js';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

it('a leader whose caller aborts while the handler starts is cancelled at once', async () => {
  const controller = new AbortController();
  const release = gate<string>();
  let seen: AbortSignal | undefined;
  const registry = new ToolRegistry().register({
    name: 'slow.op',
    inputSchema: z.object({}),
    handler: (_args, ctx) => {
      seen = ctx.signal;
      controller.abort(); // e.g. a "stop" tool that cancels the whole turn
      return release.promise;
    },
  });
  const dispatcher = createDispatcher(defaultStack({ registry }));
  let outcome: unknown;
  void dispatcher
    .dispatch('slow.op', {}, { idempotencyKey: 'k', signal: controller.signal })
    .then((o) => (outcome = o));
  await vi.advanceTimersByTimeAsync(0);
  await flush();
  expect(outcome).toMatchObject({ kind: 'cancelled' });
  expect(seen?.aborted).toBe(true); // the only caller left: the execution should be abandoned
});

it('a leader whose caller aborts on concurrency.queued leaves the queue', async () => {
  const controller = new AbortController();
  const busy = gate<string>();
  let runs = 0;
  const registry = new ToolRegistry().register({
    name: 'slow.op',
    inputSchema: z.object({ n: z.number() }),
    handler: () => {
      runs += 1;
      return busy.promise;
    },
  });
  const dispatcher = createDispatcher(defaultStack({ registry, concurrency: { max: 1 } }), {
    onEvent: (event) => {
      if (event.type === 'concurrency.queued' && event.callId === 'queued') controller.abort();
    },
  });
  void dispatcher.dispatch('slow.op', { n: 1 });
  let outcome: unknown;
  void dispatcher
    .dispatch('slow.op', { n: 2 }, { idempotencyKey: 'k', signal: controller.signal, callId: 'queued' })
    .then((o) => (outcome = o));
  await vi.advanceTimersByTimeAsync(0);
  expect(outcome).toMatchObject({ kind: 'cancelled' });
  busy.open('done');
  await vi.advanceTimersByTimeAsync(0);
  expect(runs).toBe(1);
});
