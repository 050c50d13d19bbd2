// Regression: toAiSdkTools and toAgentsTools asked the gate's `evaluate` (their `needsApproval`)
// about a call with its bare call id and no idempotency key, so a rule reading
// `call.idempotencyKey` judged another call than the one dispatched: here each host asked a person
// about a keyed refund the gate itself lets run.

import { Agent, run } from '@openai/agents';
import { generateText, stepCountIs } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeProvider, ResponsesReply } from '../../examples/fake-provider/index.js';
import { toAiSdkTools } from '../../integrations/ai-sdk/index.js';
import { toAgentsTools } from '../../integrations/openai-agents/index.js';
import { scriptedAgentsProvider } from '../helpers/agents-provider.js';
import { keyedRefunds } from '../helpers/refunds.js';
import { scriptedModel } from '../integrations/ai-sdk/scripted-model.js';

let provider: FakeProvider;
let replies: ResponsesReply[];

beforeAll(async () => {
  ({ provider, replies } = await scriptedAgentsProvider());
});

afterAll(async () => {
  await provider.close();
});

describe('a host bridge asking the gate about a call', () => {
  it('toAiSdkTools evaluates under the idempotency key its dispatch carries', async () => {
    const { registry, gate, dispatcher, refunds: ran, keysSeen } = keyedRefunds();
    const { model } = scriptedModel([
      [{ id: 'c1', name: 'payments__refund', input: JSON.stringify({ amount: 500 }) }],
      'done',
    ]);
    const tools = toAiSdkTools({ registry, dispatcher, approvals: gate, idempotencyScope: 'run-1' });
    const result = await generateText({ model, tools, stopWhen: stepCountIs(3), prompt: 'refund' });

    expect(result.content.filter((part) => part.type === 'tool-approval-request')).toEqual([]);
    expect(ran).toEqual([500]);
    expect(new Set(keysSeen)).toEqual(new Set(['run-1:c1']));
  });

  it('toAgentsTools evaluates under the idempotency key its dispatch carries', async () => {
    const { registry, gate, dispatcher, refunds: ran, keysSeen } = keyedRefunds();
    replies.push(
      { calls: [{ call_id: 'c1', name: 'payments__refund', arguments: { amount: 500 } }] },
      { text: 'done' },
    );
    const agent = new Agent({
      name: 'refunder',
      model: 'gpt-test',
      tools: toAgentsTools({ registry, dispatcher, approvals: gate, idempotencyScope: 'run-1' }),
    });
    const result = await run(agent, 'refund');

    expect(result.interruptions ?? []).toEqual([]);
    expect(ran).toEqual([500]);
    expect(new Set(keysSeen)).toEqual(new Set(['run-1:c1']));
  });
});
