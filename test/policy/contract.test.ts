// Output contracts: a success that breaks its tool's outputSchema is tool_contract, whatever the stack.

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  circuitBreaker,
  createDispatcher,
  defaultStack,
  errorMapping,
  ToolRegistry,
  toolLookup,
  type Outcome,
  type StandardSchemaV1,
} from '../../index.js';

function refundTool(
  result: () => unknown,
  outputSchema: StandardSchemaV1 = z.object({ refundId: z.string() }),
) {
  let runs = 0;
  const registry = new ToolRegistry().register({
    name: 'payments.refund',
    inputSchema: z.object({ amount: z.number() }),
    outputSchema,
    handler: () => {
      runs += 1;
      return result();
    },
  });
  return { registry, runs: () => runs };
}

function failure(outcome: Outcome) {
  if (outcome.ok) throw new Error('expected a failure');
  return outcome;
}

describe('outputSchema', () => {
  it('fails a success that breaks it with tool_contract, attempts as made, naming paths and never values', async () => {
    const { registry } = refundTool(() => ({ refundId: 42, secret: 'sk-value' }));
    const outcome = failure(
      await createDispatcher(defaultStack({ registry })).dispatch('payments.refund', { amount: 1 }),
    );
    expect([outcome.kind, outcome.attempts, outcome.jsonrpcCode]).toEqual(['tool_contract', 1, -32603]);
    expect(outcome.message).toContain('refundId');
    expect(outcome.message).not.toContain('42');
  });

  it('lets a success that keeps it through, as the handler returned it', async () => {
    const { registry } = refundTool(() => ({ refundId: 'r-1', extra: true }));
    const outcome = await createDispatcher(defaultStack({ registry })).dispatch('payments.refund', {
      amount: 1,
    });
    expect(outcome).toEqual({ ok: true, result: { refundId: 'r-1', extra: true }, attempts: 1 });
  });

  it('is checked by toolLookup in a hand-made stack, and by an asynchronous validator', async () => {
    const asyncSchema: StandardSchemaV1 = {
      '~standard': {
        version: 1,
        vendor: 'test',
        validate: async () => ({ issues: [{ message: 'no', path: ['a'] }] }),
      },
    };
    const { registry } = refundTool(() => ({}), asyncSchema);
    const onion = failure(
      await createDispatcher([errorMapping(), toolLookup(registry)]).dispatch('payments.refund', {
        amount: 1,
      }),
    );
    expect(onion.kind).toBe('tool_contract');
    const preset = failure(
      await createDispatcher(defaultStack({ registry })).dispatch('payments.refund', { amount: 1 }),
    );
    expect([preset.kind, preset.message]).toEqual(['tool_contract', onion.message]);
  });

  it('is never retried, never opens the breaker, and a keyed call is not run again', async () => {
    const { registry, runs } = refundTool(() => ({ refundId: 7 }));
    const breaker = circuitBreaker({ failureThreshold: 1 });
    const dispatcher = createDispatcher(defaultStack({ registry, breaker }));
    for (let i = 0; i < 3; i++) {
      const outcome = failure(
        await dispatcher.dispatch('payments.refund', { amount: 1 }, { idempotencyKey: 'k-1' }),
      );
      expect(outcome.kind).toBe('tool_contract');
    }
    expect(runs()).toBe(1);
    expect(breaker.snapshot()['payments.refund']?.state ?? 'closed').toBe('closed');
  });

  it('is listed as JSON Schema and rejected when it is not a Standard Schema', () => {
    const { registry } = refundTool(() => ({}));
    expect(registry.list()[0]?.outputSchema).toMatchObject({ type: 'object', required: ['refundId'] });
    expect(() =>
      new ToolRegistry().register({
        name: 'a.b',
        inputSchema: z.object({}),
        outputSchema: {} as StandardSchemaV1,
        handler: () => 1,
      }),
    ).toThrow(/outputSchema/);
  });
});
