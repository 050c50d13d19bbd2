// Regression (fixed): docs/concepts.md: "Were `timeout` outside `retry`, it would be one deadline over all attempts
// and backoffs". The attempt step claims the outer timeout's AttemptAbort and ends it when
// attempt 1 settles, which cancels the deadline: attempt 2 runs with no deadline at all.
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
} from '../../index.js';
import { flush } from '../helpers/gate.js';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

it('a timeout placed outside retry still bounds the later attempts', async () => {
  let calls = 0;
  const registry = new ToolRegistry().register({
    name: 'slow.op',
    inputSchema: z.object({}),
    handler: () => {
      calls += 1;
      if (calls === 1) return Promise.reject(new TransientError('flaky'));
      return new Promise<never>(() => {}); // attempt 2 hangs
    },
  });
  const dispatcher = createDispatcher([
    errorMapping(),
    toolLookup(registry),
    timeout({ defaultMs: 1_000 }),
    retry({ random: () => 0 }),
  ]);
  let outcome: unknown;
  void dispatcher.dispatch('slow.op', {}).then((o) => (outcome = o));
  await vi.advanceTimersByTimeAsync(5_000);
  await flush();
  expect(calls).toBe(2);
  expect(outcome).toMatchObject({ kind: 'timeout' });
});
