// Regression: an approved token ran its handler once only while the memory idempotency layer
// remembered the outcome: after 10 000 other keyed successes the outcome was evicted, and a
// redelivery inside the token's hour ran the refund again. Two workers (each with its own
// idempotency memory) given the same token at once both ran it.

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  approvalGate,
  createDispatcher,
  defaultStack,
  memoryApprovalStore,
  ToolRegistry,
  type ApprovalStore,
  type Outcome,
} from '../../index.js';

function tokenOf(outcome: Outcome): string {
  if (outcome.ok || outcome.approval === undefined) throw new Error('expected approval_required');
  return outcome.approval.token;
}

// One worker: its own registry, gate and (memory) idempotency layer, over a shared approval store.
function worker(store: ApprovalStore, refunds: string[], name: string, gateOpen?: Promise<void>) {
  const registry = new ToolRegistry()
    .register({
      name: 'payments.refund',
      inputSchema: z.object({ amount: z.number() }),
      requiresApproval: true,
      handler: async ({ amount }) => {
        refunds.push(name);
        await gateOpen;
        return { refunded: amount, by: name };
      },
    })
    .register({
      name: 'notes.add',
      inputSchema: z.object({ n: z.number() }),
      requiresApproval: false,
      handler: ({ n }) => n,
    });
  const gate = approvalGate({ registry, store });
  return { gate, dispatcher: createDispatcher(defaultStack({ registry, approval: gate })) };
}

describe('an approved token', () => {
  it.each([
    ['under approval:<token>', {}],
    ["under the call's key", { idempotencyKey: 'r-7' }],
  ])('runs its handler once after 10 000 other keyed successes, %s', async (_, keyed) => {
    const refunds: string[] = [];
    const { gate, dispatcher } = worker(memoryApprovalStore(), refunds, 'a');
    const args = { amount: 5 };
    const token = tokenOf(await dispatcher.dispatch('payments.refund', args, keyed));
    await gate.approve(token, { by: 'ana' });
    const first = await dispatcher.dispatch('payments.refund', args, { ...keyed, approval: token });
    expect(first).toMatchObject({ ok: true, attempts: 1 });

    // Enough other keyed successes kept as long (as other tokens' runs are) to push the refund's
    // outcome out of the idempotency layer's memory (10 000 entries by default).
    const kept = { idempotencyTtlMs: 2 * 3_600_000 };
    for (let n = 0; n < 10_000; n++) {
      await dispatcher.dispatch('notes.add', { n }, { ...kept, idempotencyKey: `n-${n}` });
    }
    const again = await dispatcher.dispatch('payments.refund', args, { ...keyed, approval: token });

    expect(again).toMatchObject({ ok: true, result: { refunded: 5, by: 'a' }, attempts: 0 });
    expect(refunds).toEqual(['a']);
  });

  it('runs once when two workers get it at once, and both then get the outcome', async () => {
    const store = memoryApprovalStore();
    const refunds: string[] = [];
    let open = () => {};
    const gateOpen = new Promise<void>((resolve) => (open = resolve));
    const a = worker(store, refunds, 'a', gateOpen);
    const b = worker(store, refunds, 'b', gateOpen);
    const args = { amount: 9 };
    const token = tokenOf(await a.dispatcher.dispatch('payments.refund', args));
    await b.gate.approve(token, { by: 'ana' });

    const onA = a.dispatcher.dispatch('payments.refund', args, { approval: token });
    const onB = await b.dispatcher.dispatch('payments.refund', args, { approval: token });
    open();

    expect(onB.ok ? 'ran' : onB.kind).toBe('idempotency_result_unavailable');
    expect(await onA).toMatchObject({ ok: true, result: { refunded: 9, by: 'a' }, attempts: 1 });
    const later = await b.dispatcher.dispatch('payments.refund', args, { approval: token });
    expect(later).toMatchObject({ ok: true, result: { refunded: 9, by: 'a' }, attempts: 0 });
    expect(refunds).toEqual(['a']);
  });
});
