// A refund paused for approval, approved by a person, and run once even when the approved call
// is delivered twice; a denied one never runs. `npm run demo:approval`.

import { z } from 'zod';
import {
  approvalGate,
  createDispatcher,
  createRedactor,
  defaultStack,
  toToolMessage,
  ToolRegistry,
  type Outcome,
} from '../index.js';

const refunds: string[] = [];

const registry = new ToolRegistry()
  .register({
    name: 'payments.refund',
    description: 'Refund an order',
    inputSchema: z.object({ orderId: z.string(), amount: z.number().positive() }),
    // Small refunds run at once; larger ones wait for a person.
    requiresApproval: ({ amount }) => amount > 100,
    outputSchema: z.object({ refundId: z.string() }),
    handler: async ({ orderId, amount }) => {
      refunds.push(`${orderId}:${amount}`);
      return { refundId: `rf-${refunds.length}` };
    },
  })
  .register({
    name: 'orders.lookup',
    description: 'Read an order',
    inputSchema: z.object({ orderId: z.string() }),
    annotations: { readOnlyHint: true },
    handler: ({ orderId }) => ({ orderId, status: 'delivered' }),
  });

const gate = approvalGate({ registry });
const dispatcher = createDispatcher(defaultStack({ registry, approvals: gate }), {
  redact: createRedactor(),
  onEvent: (event) => {
    if (event.type === 'approval.decision')
      console.log(`  event  ${event.type}: ${event.action} (${event.source})`);
  },
});

function show(label: string, outcome: Outcome): void {
  console.log(`${label.padEnd(32)} → ${toToolMessage(outcome)}`);
}

async function main(): Promise<void> {
  show('orders.lookup (read-only)', await dispatcher.dispatch('orders.lookup', { orderId: 'o-1' }));
  show('refund 40 (small)', await dispatcher.dispatch('payments.refund', { orderId: 'o-1', amount: 40 }));

  const args = { orderId: 'o-2', amount: 250 };
  const paused = await dispatcher.dispatch('payments.refund', args, { idempotencyKey: 'refund-o-2' });
  show('refund 250 (the model sees)', paused);
  if (paused.ok || paused.approval === undefined) throw new Error('expected the refund to wait for approval');
  const { token, reason } = paused.approval;
  console.log(`  the reviewer sees: ${reason} (token kept out of the model's text)`);
  console.log(`  approved: ${await gate.approve(token, { by: 'ana' })}`);

  // The approval arrives twice (a retried webhook, say): the refund runs once.
  const [first, second] = await Promise.all([
    dispatcher.dispatch('payments.refund', args, { idempotencyKey: 'refund-o-2', approval: token }),
    dispatcher.dispatch('payments.refund', args, { idempotencyKey: 'refund-o-2', approval: token }),
  ]);
  show('refund 250 (approved)', first);
  show('refund 250 (approved, again)', second);

  const other = await dispatcher.dispatch('payments.refund', { orderId: 'o-3', amount: 900 });
  if (!other.ok && other.approval !== undefined)
    await gate.deny(other.approval.token, 'over the refund limit');
  const denied = await dispatcher.dispatch(
    'payments.refund',
    { orderId: 'o-3', amount: 900 },
    { approval: other.ok ? '' : (other.approval?.token ?? '') },
  );
  show('refund 900 (denied)', denied);
  console.log(`refunds run: ${refunds.length} (${refunds.join(', ')})`);
}

await main();
