// Found by a property test: when a handler threw synchronously, the default stack's hand-fused
// runner (since retired) let retry decide at once, inside dispatch() itself, so a second attempt
// started (and took a budget unit) before the caller could abort in the same turn. Retry must
// decide a promise turn later and see the abort.

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createBudget, createDispatcher, defaultStack, ToolRegistry, TransientError } from '../../index.js';

describe('a synchronous handler failure in the default stack', () => {
  it('is retried only after the caller has had its turn to abort', async () => {
    let attempts = 0;
    const registry = new ToolRegistry().register({
      name: 'kv.get',
      inputSchema: z.object({ id: z.number() }),
      handler: () => {
        attempts += 1;
        throw new TransientError('busy');
      },
    });
    const dispatcher = createDispatcher(defaultStack({ registry, retry: { baseDelayMs: 0 } }));
    const budget = createBudget(5);
    const controller = new AbortController();
    const pending = dispatcher.dispatch('kv.get', { id: 1 }, { budget, signal: controller.signal });
    controller.abort(new Error('caller left'));
    expect(await pending).toMatchObject({ ok: false, kind: 'cancelled', attempts: 1 });
    expect(attempts).toBe(1);
    expect(budget.remaining).toBe(4);
  });
});
