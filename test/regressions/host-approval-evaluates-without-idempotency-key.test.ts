// Regression: toAiSdkTools and toAgentsTools asked the gate's `evaluate` (their `needsApproval`)
// about a call with its bare call id and no idempotency key, so a rule reading
// `call.idempotencyKey` judged another call than the one dispatched: here each host asked a person
// about a keyed refund the gate itself lets run.

import { Agent, run, setDefaultOpenAIClient, setTracingDisabled } from '@openai/agents';
import { generateText, stepCountIs } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  startFakeProvider,
  type FakeProvider,
  type ResponsesReply,
} from '../../examples/fake-provider/index.js';
import { approvalGate, createDispatcher, defaultStack, ToolRegistry } from '../../index.js';
import { toAiSdkTools } from '../../integrations/ai-sdk/index.js';
import { toAgentsTools } from '../../integrations/openai-agents/index.js';
import { scriptedModel } from '../integrations/ai-sdk/scripted-model.js';

// A refund that cannot run twice (it has a key) needs no person; one without a key does.
function keyedRefunds() {
  const ran: number[] = [];
  const keysSeen: Array<string | undefined> = [];
  const registry = new ToolRegistry().register({
    name: 'payments.refund',
    inputSchema: z.object({ amount: z.number() }),
    requiresApproval: false,
    handler: ({ amount }) => {
      ran.push(amount);
      return `refunded ${amount}`;
    },
  });
  const gate = approvalGate({
    registry,
    decide: (call, byDefault) => {
      keysSeen.push(call.idempotencyKey);
      return call.idempotencyKey === undefined ? { action: 'require', reason: 'no key' } : byDefault;
    },
  });
  const dispatcher = createDispatcher(defaultStack({ registry, approval: gate }));
  return { registry, gate, dispatcher, ran, keysSeen };
}

let provider: FakeProvider;
let replies: ResponsesReply[] = [];

beforeAll(async () => {
  provider = await startFakeProvider({
    responses: () => {
      const reply = replies.shift();
      if (reply === undefined) throw new Error('no scripted reply');
      return reply;
    },
  });
  setTracingDisabled(true);
  setDefaultOpenAIClient(
    new OpenAI({ baseURL: provider.openaiBaseURL, apiKey: 'test', maxRetries: 0 }) as never,
  );
});

afterAll(async () => {
  await provider.close();
});

describe('a host bridge asking the gate about a call', () => {
  it('toAiSdkTools evaluates under the idempotency key its dispatch carries', async () => {
    const { registry, gate, dispatcher, ran, keysSeen } = keyedRefunds();
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
    const { registry, gate, dispatcher, ran, keysSeen } = keyedRefunds();
    replies = [
      { calls: [{ call_id: 'c1', name: 'payments__refund', arguments: { amount: 500 } }] },
      { text: 'done' },
    ];
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
