// Regression (issue 34, found by the autopilot bench): an attempt the autopilot cut off at its
// deadline was never retried, even on an idempotent tool. The autopilot returns at its deadline
// while the timeout layer inside it is still settling; that layer's restore, run afterwards, put
// back the autopilot's ended limit, so retry found the call's signal aborted and gave up with the
// timeout. A limit restored over by a layer outside it now leaves the context alone.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { autopilot, createDispatcher, defaultStack, ToolRegistry } from '../../index.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('an attempt the autopilot cuts off', () => {
  it('is retried on an idempotent tool, and the retry answers', async () => {
    const registry = new ToolRegistry().register({
      name: 'search.web',
      inputSchema: z.object({ slow: z.boolean() }),
      idempotent: true,
      handler: ({ slow }, { attempt, signal }) =>
        new Promise<string>((resolve, reject) => {
          const timer = setTimeout(() => resolve(`answer ${attempt}`), slow && attempt === 1 ? 500 : 5);
          signal.addEventListener(
            'abort',
            () => {
              clearTimeout(timer);
              reject(signal.reason);
            },
            { once: true },
          );
        }),
    });
    const pilot = autopilot({ timeout: { quantile: 0.5, factor: 2, minMs: 1, minSamples: 5 } });
    const dispatcher = createDispatcher(
      defaultStack({ registry, autopilot: pilot, retry: { baseDelayMs: 1 } }),
    );
    for (let call = 0; call < 5; call++) {
      const warm = dispatcher.dispatch('search.web', { slow: false });
      await vi.advanceTimersByTimeAsync(5);
      expect((await warm).ok).toBe(true);
    }
    const slow = dispatcher.dispatch('search.web', { slow: true });
    await vi.advanceTimersByTimeAsync(100);
    const outcome = await slow;
    expect(outcome).toMatchObject({ ok: true, result: 'answer 2', attempts: 2 });
    expect(outcome.policy).toMatchObject({ retried: true });
  });
});
