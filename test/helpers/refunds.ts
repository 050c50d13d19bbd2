// The approval tests' fixture: refunds over 100 wait for a human, and each run is recorded.

import { z } from 'zod';
import { approvalGate, createDispatcher, defaultStack, ToolRegistry } from '../../index.js';

/**
 * A registry with `payments.refund`: gated when `amount > 100`, it pushes the amount onto
 * `refunds` and answers `refunded <amount>`.
 */
export function refundRegistry(refunds: number[]): ToolRegistry {
  return new ToolRegistry().register({
    name: 'payments.refund',
    inputSchema: z.object({ amount: z.number() }),
    requiresApproval: ({ amount }) => amount > 100,
    handler: ({ amount }) => {
      refunds.push(amount);
      return `refunded ${amount}`;
    },
  });
}

/** {@link refundRegistry}'s registry, its approval gate, a default-stack dispatcher with it, and the amounts refunded. */
export function gatedRefunds() {
  const refunds: number[] = [];
  const registry = refundRegistry(refunds);
  const gate = approvalGate({ registry });
  const dispatcher = createDispatcher(defaultStack({ registry, approval: gate }));
  return { registry, gate, dispatcher, refunds };
}
