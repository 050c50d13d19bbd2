// Exactly once, or explained: a charge whose answer is lost is reconciled against the bank instead
// of being charged again, and a refund that cannot be reconciled is refused under the same key.
//
//   npx tsx examples/exactly-once.ts

import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry, toToolMessage } from '../index.js';
import { memoryReceiptStore } from '../middleware/index.js';

// A bank that keeps its own ledger, keyed by the idempotency key it is given, and answers slowly
// enough that the call times out after the money moved.
const ledger = new Map<string, { id: string; amount: number }>();
function slowBank(key: string, amount: number, signal: AbortSignal): Promise<never> {
  ledger.set(key, { id: `ch_${ledger.size + 1}`, amount });
  return new Promise((_resolve, reject) => {
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

const registry = new ToolRegistry()
  .register({
    name: 'payments.charge',
    inputSchema: z.object({ amount: z.number().positive() }),
    timeoutMs: 100,
    handler: ({ amount }, { idempotencyKey, signal }) => slowBank(idempotencyKey ?? '', amount, signal),
    // Asked once before anything may run the charge again: did it take effect?
    reconcile: (_args, { idempotencyKey }) => {
      const charge = ledger.get(idempotencyKey ?? '');
      return charge === undefined
        ? 'not_committed'
        : { status: 'committed', result: charge, evidence: { id: charge.id } };
    },
    reconcileTimeoutMs: 1_000,
  })
  .register({
    // No way to ask the bank about a refund: a timeout leaves it in doubt.
    name: 'payments.refund',
    inputSchema: z.object({ amount: z.number().positive() }),
    timeoutMs: 100,
    handler: ({ amount }, { idempotencyKey, signal }) => slowBank(`refund:${idempotencyKey}`, amount, signal),
  });

const receipts = memoryReceiptStore();
const dispatcher = createDispatcher(defaultStack({ registry, idempotency: { receipts } }));

const charge = await dispatcher.dispatch('payments.charge', { amount: 25 }, { idempotencyKey: 'order-1042' });
console.log(
  charge.ok
    ? `charge (timed out, reconciled)  → ok ${JSON.stringify(charge.result)}, window ${charge.reconciled?.window}`
    : `charge → ${charge.kind}`,
);
const again = await dispatcher.dispatch('payments.charge', { amount: 25 }, { idempotencyKey: 'order-1042' });
console.log(
  `charge (same key again)         → ${again.ok ? `ok after ${again.attempts} attempts` : again.kind}`,
);

const refund = await dispatcher.dispatch('payments.refund', { amount: 10 }, { idempotencyKey: 'refund-7' });
console.log(`refund (timed out)              → ${refund.ok ? 'ok' : refund.kind}`);
const retried = await dispatcher.dispatch('payments.refund', { amount: 10 }, { idempotencyKey: 'refund-7' });
console.log(
  `refund (same key again)         → ${retried.ok ? 'ok' : `${retried.kind}, window ${retried.window}`}`,
);
if (!retried.ok) console.log(`  the model reads: ${toToolMessage(retried)}`);

console.log(`bank ledger rows: ${ledger.size} (one charge, one refund)`);
console.log('receipts:');
for (const receipt of receipts.list()) {
  const how = receipt.window === undefined ? '' : ` (${receipt.window}, by ${receipt.settledBy})`;
  console.log(`  ${receipt.key.padEnd(11)} ${receipt.tool.padEnd(16)} ${receipt.status}${how}`);
}
console.log(
  `in doubt for an operator: ${receipts
    .list({ inDoubt: true })
    .map((each) => each.key)
    .join(', ')}`,
);
