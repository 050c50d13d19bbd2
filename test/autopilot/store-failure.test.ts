// Issue 34 item 8: an autopilot store that fails (Redis down, a timeout) makes the autopilot run
// that call on the static policy, with an event saying so, and never fails the call or the process.

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type AutopilotStore,
  autopilot,
  createDispatcher,
  type DispatchEvent,
  defaultStack,
  ToolRegistry,
  TransientError,
} from '../../index.js';

// A store whose every call fails as a remote one does: the deposit (sync, as the contract says)
// throws, the withdrawal and the balance reject.
const downStore: AutopilotStore = {
  deposit: () => {
    throw new Error('redis down');
  },
  withdraw: () => Promise.reject(new Error('redis down')),
  balance: () => Promise.reject(new Error('redis down')),
  exchangeSketch: () => Promise.reject(new Error('redis down')),
};

describe('an autopilot whose store fails', () => {
  it('retries under the static rules, says so, and the call succeeds', async () => {
    let attempts = 0;
    const registry = new ToolRegistry().register({
      name: 'flaky.op',
      inputSchema: z.object({}),
      handler: () => {
        attempts++;
        if (attempts === 1) throw new TransientError('busy');
        return 'done';
      },
    });
    const events: DispatchEvent[] = [];
    const pilot = autopilot({ store: downStore });
    const dispatcher = createDispatcher(
      defaultStack({ registry, autopilot: pilot, retry: { baseDelayMs: 0, random: () => 0 } }),
      { onEvent: (event) => events.push(event) },
    );
    const outcome = await dispatcher.dispatch('flaky.op', {});
    expect(outcome).toMatchObject({
      ok: true,
      attempts: 2,
      policy: { budget: 'unavailable', retried: true },
    });
    const fallbacks = events.filter((event) => event.type === 'autopilot.fallback');
    // The deposit's throw and the withdrawal's rejection, each named.
    expect(fallbacks.map((event) => event.type === 'autopilot.fallback' && event.knob)).toEqual([
      'retryBudget',
      'retryBudget',
    ]);
  });

  it("answers a snapshot without leaving the balance's rejection unhandled", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const pilot = autopilot({ store: downStore });
      expect(pilot.snapshot('search.web').retryBudget).toEqual({ balance: undefined });
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
