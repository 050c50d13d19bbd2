// Regression: an approved token delivered again after the idempotency layer's ttlMs had passed
// (the token itself still valid) found no entry under its key and ran the handler a second time.

import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { approvalGate, createDispatcher, defaultStack, ToolRegistry, type Outcome } from '../../index.js';

afterEach(() => {
  vi.useRealTimers();
});

function setup() {
  let runs = 0;
  const registry = new ToolRegistry().register({
    name: 'payments.refund',
    inputSchema: z.object({ amount: z.number() }),
    requiresApproval: true,
    handler: ({ amount }) => {
      runs += 1;
      return `refunded ${amount} (run ${runs})`;
    },
  });
  const gate = approvalGate({ registry, ttlMs: 60_000 });
  const dispatcher = createDispatcher(
    defaultStack({ registry, approval: gate, idempotency: { ttlMs: 1_000 } }),
  );
  return { gate, dispatcher, runs: () => runs };
}

function tokenOf(outcome: Outcome): string {
  const token = outcome.ok ? undefined : outcome.approval?.token;
  if (token === undefined) throw new Error('expected approval_required');
  return token;
}

describe('a redeemed approval token delivered after the idempotency ttl', () => {
  it.each([
    ['under approval:<token>', {}],
    ["under the call's key", { idempotencyKey: 'r-7' }],
  ])('runs the handler once %s', async (_, keyed) => {
    vi.useFakeTimers();
    const { gate, dispatcher, runs } = setup();
    const args = { amount: 5 };
    const token = tokenOf(await dispatcher.dispatch('payments.refund', args, keyed));
    await gate.approve(token, { by: 'ana' });
    const first = await dispatcher.dispatch('payments.refund', args, { ...keyed, approval: token });
    expect(first).toMatchObject({ ok: true, result: 'refunded 5 (run 1)', attempts: 1 });

    await vi.advanceTimersByTimeAsync(30_000);
    const again = await dispatcher.dispatch('payments.refund', args, { ...keyed, approval: token });

    expect(again).toMatchObject({ ok: true, result: 'refunded 5 (run 1)', attempts: 0 });
    expect(runs()).toBe(1);

    // Once the token is gone, a redelivery is a request for a new approval: still no run.
    await vi.advanceTimersByTimeAsync(30_000);
    const expired = await dispatcher.dispatch('payments.refund', args, { ...keyed, approval: token });
    expect(expired.ok ? undefined : expired.kind).toBe('approval_required');
    expect(runs()).toBe(1);
  });
});
