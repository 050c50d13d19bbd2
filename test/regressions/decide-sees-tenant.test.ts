// Regression: `approvalGate({ decide })` got only the tool, args, call id and key, so a policy
// per tenant could not be written, and the tool's name had to be read off `call.tool`.

import { describe, expect, it } from 'vitest';
import { approvalGate, createDispatcher, defaultStack, type ApprovalCall } from '../../index.js';
import { refundRegistry } from '../helpers/refunds.js';

describe('decide(call, byDefault)', () => {
  it('sees the tenant and the tool name, so a per-tenant policy can be written', async () => {
    const refunds: number[] = [];
    const registry = refundRegistry(refunds, false);
    const seen: Array<Pick<ApprovalCall, 'toolName' | 'tenant'>> = [];
    const gate = approvalGate({
      registry,
      decide: (call, byDefault) => {
        seen.push({ toolName: call.toolName, tenant: call.tenant });
        return call.toolName === 'payments.refund' && call.tenant === 'trial'
          ? { action: 'deny', reason: 'trial workspaces cannot refund' }
          : byDefault;
      },
    });
    const dispatcher = createDispatcher(defaultStack({ registry, approval: gate }));

    const trial = await dispatcher.dispatch('payments.refund', { amount: 5 }, { tenant: 'trial' });
    const paid = await dispatcher.dispatch('payments.refund', { amount: 5 }, { tenant: 'acme' });
    const evaluated = await gate.evaluate('payments.refund', { amount: 5 }, { tenant: 'trial' });

    expect(trial.ok ? 'ok' : trial.kind).toBe('approval_denied');
    expect(paid.ok).toBe(true);
    expect(evaluated).toMatchObject({ action: 'deny', source: 'decide' });
    expect(refunds).toEqual([5]);
    expect(seen).toEqual([
      { toolName: 'payments.refund', tenant: 'trial' },
      { toolName: 'payments.refund', tenant: 'acme' },
      { toolName: 'payments.refund', tenant: 'trial' },
    ]);
  });
});
