// The approval tests' fixture: refunds over 100 wait for a human, and each run is recorded.

import { z } from 'zod';
import { approvalGate, createDispatcher, defaultStack, ToolRegistry } from '../../index.js';

/**
 * A registry with `payments.refund` (gated when `amount > 100`, answering `refunded <amount>`),
 * its approval gate, a default-stack dispatcher with that gate, and the amounts refunded.
 */
export function gatedRefunds() {
  const refunds: number[] = [];
  const registry = new ToolRegistry().register({
    name: 'payments.refund',
    inputSchema: z.object({ amount: z.number() }),
    requiresApproval: ({ amount }) => amount > 100,
    handler: ({ amount }) => {
      refunds.push(amount);
      return `refunded ${amount}`;
    },
  });
  const gate = approvalGate({ registry });
  const dispatcher = createDispatcher(defaultStack({ registry, approval: gate }));
  return { registry, gate, dispatcher, refunds };
}
