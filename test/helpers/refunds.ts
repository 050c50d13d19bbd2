// The approval tests' fixture: refunds over 100 wait for a human, and each run is recorded.

import { z } from 'zod';
import { approvalGate, createDispatcher, defaultStack, ToolRegistry } from '../../index.js';

/**
 * A registry with `payments.refund`: gated when `amount > 100` (or as `requiresApproval` says),
 * it pushes the amount onto `refunds` and answers `refunded <amount>`.
 */
export function refundRegistry(
  refunds: number[],
  requiresApproval: boolean | ((args: { amount: number }) => boolean) = ({ amount }) => amount > 100,
): ToolRegistry {
  return new ToolRegistry().register({
    name: 'payments.refund',
    inputSchema: z.object({ amount: z.number() }),
    requiresApproval,
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

/**
 * Refunds that need a person only without an idempotency key (one with a key cannot run twice):
 * the gate's `decide` records in `keysSeen` the key of each call it is asked about.
 */
export function keyedRefunds() {
  const refunds: number[] = [];
  const keysSeen: Array<string | undefined> = [];
  const registry = refundRegistry(refunds, false);
  const gate = approvalGate({
    registry,
    decide: (call, byDefault) => {
      keysSeen.push(call.idempotencyKey);
      return call.idempotencyKey === undefined ? { action: 'require', reason: 'no key' } : byDefault;
    },
  });
  const dispatcher = createDispatcher(defaultStack({ registry, approval: gate }));
  return { registry, gate, dispatcher, refunds, keysSeen };
}

/**
 * Refunds that need a person only for the tenant `acme`: the gate's `decide` records in
 * `tenantsSeen` the tenant of each call it is asked about (up front and at dispatch).
 */
export function acmeGatedRefunds() {
  const refunds: number[] = [];
  const tenantsSeen: Array<string | undefined> = [];
  const registry = refundRegistry(refunds, false);
  const gate = approvalGate({
    registry,
    decide: (call, byDefault) => {
      tenantsSeen.push(call.tenant);
      return call.tenant === 'acme' ? { action: 'require', reason: 'acme refunds need a person' } : byDefault;
    },
  });
  const dispatcher = createDispatcher(defaultStack({ registry, approval: gate }));
  return { registry, gate, dispatcher, refunds, tenantsSeen };
}
