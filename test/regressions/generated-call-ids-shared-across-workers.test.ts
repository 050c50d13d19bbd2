// Regression: a dispatcher made call ids as `call-1`, `call-2`… of its own, so two workers'
// separate keyless calls with the same args had the same id and shared one approval request:
// worker B's call never ran and was answered with worker A's result.

import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  approvalGate,
  createDispatcher,
  defaultStack,
  memoryApprovalStore,
  type Outcome,
} from '../../index.js';
import { refundRegistry } from '../helpers/refunds.js';

function ticketOf(outcome: Outcome) {
  if (outcome.ok || outcome.approval === undefined) throw new Error('expected approval_required');
  return outcome.approval;
}

describe('two workers sharing one approval store', () => {
  it('give two keyless calls with the same args their own requests, and run each once approved', async () => {
    const store = memoryApprovalStore();
    const refunds: number[] = [];
    const worker = () => {
      const registry = refundRegistry(refunds, true);
      const gate = approvalGate({ registry, store });
      return { gate, dispatcher: createDispatcher(defaultStack({ registry, approval: gate })) };
    };
    const a = worker();
    const b = worker();

    const pausedA = await a.dispatcher.dispatch('payments.refund', { amount: 5 });
    const pausedB = await b.dispatcher.dispatch('payments.refund', { amount: 5 });
    const [ticketA, ticketB] = [ticketOf(pausedA), ticketOf(pausedB)];
    expect(ticketB.callId).not.toBe(ticketA.callId);
    expect(ticketB.token).not.toBe(ticketA.token);
    const [tokenA, tokenB] = [ticketA.token, ticketB.token];

    await a.gate.approve(tokenA, { by: 'ana' });
    await b.gate.approve(tokenB, { by: 'ana' });
    const doneA = await a.dispatcher.dispatch('payments.refund', { amount: 5 }, { approval: tokenA });
    const doneB = await b.dispatcher.dispatch('payments.refund', { amount: 5 }, { approval: tokenB });

    expect([doneA, doneB]).toMatchObject([
      { ok: true, attempts: 1 },
      { ok: true, attempts: 1 },
    ]);
    expect(refunds).toEqual([5, 5]);
  });
});

describe('generated call ids', () => {
  it('differ between two processes that each make their first call', () => {
    const root = fileURLToPath(new URL('../../index.ts', import.meta.url));
    const script = `
      import { z } from 'zod';
      import { createDispatcher, defaultStack, ToolRegistry } from ${JSON.stringify(root)};
      const registry = new ToolRegistry().register({ name: 'noop', inputSchema: z.object({}), handler: () => 1 });
      let callId;
      const dispatcher = createDispatcher(defaultStack({ registry }), {
        onEvent: (event) => { callId ??= event.callId; },
      });
      await dispatcher.dispatch('noop', {});
      process.stdout.write(callId);`;
    const firstCallId = () =>
      execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        encoding: 'utf8',
      });
    const [a, b] = [firstCallId(), firstCallId()];
    expect(a).toMatch(/^call-/);
    expect(b).not.toBe(a);
  });
});
