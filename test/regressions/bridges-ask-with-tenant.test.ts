// Regression: the host bridges' up-front approval check (AI SDK and Agents `needsApproval`,
// LangChain's review interrupt) asked `gate.evaluate` without a tenant, and the bridges had no
// way to give their dispatches one: a per-tenant `decide` was never seen by the host's approval
// flow. Each bridge now takes `tenant` and asks with the tenant its dispatch carries.

import { Agent, run } from '@openai/agents';
import { generateText, stepCountIs, type ModelMessage } from 'ai';
import { MemorySaver } from '@langchain/langgraph';
import { AIMessage, createAgent, fakeModel, type HITLRequest, type Interrupt } from 'langchain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeProvider, ResponsesReply } from '../../examples/fake-provider/index.js';
import { toAiSdkTools } from '../../integrations/ai-sdk/index.js';
import { dispatcherMiddleware } from '../../integrations/langchain/index.js';
import { toAgentsTools } from '../../integrations/openai-agents/index.js';
import { scriptedAgentsProvider } from '../helpers/agents-provider.js';
import { acmeGatedRefunds } from '../helpers/refunds.js';
import { scriptedModel } from '../integrations/ai-sdk/scripted-model.js';

const refund = (id: string, amount: number) => ({
  id,
  name: 'payments__refund',
  input: JSON.stringify({ amount }),
});

describe('toAiSdkTools({ approvals, tenant })', () => {
  it('asks decide with the tenant the dispatch carries', async () => {
    const { registry, dispatcher, gate, refunds, tenantsSeen } = acmeGatedRefunds();
    const toolsFor = () =>
      toAiSdkTools({
        registry,
        dispatcher,
        approvals: gate,
        tenant: (context) => (context as { tenant: string }).tenant,
      });
    const acme = scriptedModel([[refund('c1', 7)], 'refunded']).model;
    const first = await generateText({
      model: acme,
      tools: toolsFor(),
      prompt: 'refund',
      experimental_context: { tenant: 'acme' },
    });
    const requests = first.content.filter((part) => part.type === 'tool-approval-request');
    expect(requests.map((part) => part.toolCall.toolCallId)).toEqual(['c1']);

    const globex = await generateText({
      model: scriptedModel([[refund('c2', 5)], 'refunded']).model,
      tools: toolsFor(),
      stopWhen: stepCountIs(3),
      prompt: 'refund',
      experimental_context: { tenant: 'globex' },
    });
    expect(globex.text).toBe('refunded');
    expect(refunds).toEqual([5]);

    const messages: ModelMessage[] = [
      { role: 'user', content: 'refund' },
      ...first.response.messages,
      {
        role: 'tool',
        content: [
          {
            type: 'tool-approval-response',
            approvalId: (requests[0] as { approvalId: string }).approvalId,
            approved: true,
          },
        ],
      },
    ];
    await generateText({
      model: acme,
      tools: toolsFor(),
      stopWhen: stepCountIs(3),
      messages,
      experimental_context: { tenant: 'acme' },
    });
    expect(refunds).toEqual([5, 7]);
    expect(new Set(tenantsSeen)).toEqual(new Set(['acme', 'globex']));
  });
});

describe('toAgentsTools({ approvals, tenant })', () => {
  let provider: FakeProvider;
  let replies: ResponsesReply[];
  beforeAll(async () => {
    ({ provider, replies } = await scriptedAgentsProvider());
  });
  afterAll(async () => {
    await provider.close();
  });

  it('asks decide with the tenant the dispatch carries', async () => {
    const { registry, dispatcher, gate, refunds, tenantsSeen } = acmeGatedRefunds();
    const agent = new Agent<{ tenant: string }>({
      name: 'refunder',
      model: 'gpt-test',
      tools: toAgentsTools({
        registry,
        dispatcher,
        approvals: gate,
        tenant: (runContext) => (runContext.context as { tenant: string }).tenant,
      }),
    });
    const call = (call_id: string, amount: number) => ({
      calls: [{ call_id, name: 'payments__refund', arguments: { amount } }],
    });
    replies.push(call('c1', 7));
    const acme = await run(agent, 'refund', { context: { tenant: 'acme' } });
    expect(acme.interruptions.map((item) => (item.rawItem as { callId?: string }).callId)).toEqual(['c1']);

    replies.push(call('c2', 5), { text: 'done' });
    const globex = await run(agent, 'refund', { context: { tenant: 'globex' } });
    expect(globex.finalOutput).toBe('done');
    expect(refunds).toEqual([5]);

    replies.push({ text: 'done' });
    for (const item of acme.interruptions) acme.state.approve(item);
    await run(agent, acme.state);
    expect(refunds).toEqual([5, 7]);
    expect(new Set(tenantsSeen)).toEqual(new Set(['acme', 'globex']));
  });
});

describe('dispatcherMiddleware({ approvals, tenant })', () => {
  it('asks decide with the tenant the dispatch carries', async () => {
    const { registry, dispatcher, gate, refunds, tenantsSeen } = acmeGatedRefunds();
    const agentFor = (id: string, amount: number) =>
      createAgent({
        model: fakeModel()
          .respondWithTools([{ id, name: 'payments__refund', args: { amount } }])
          .respond(new AIMessage('done')),
        checkpointer: new MemorySaver(),
        middleware: [
          dispatcherMiddleware({
            registry,
            dispatcher,
            approvals: gate,
            tenant: (runtime) => runtime.configurable?.['tenant'] as string | undefined,
          }),
        ],
      });
    const input = { messages: [{ role: 'user' as const, content: 'refund' }] };
    const acme = await agentFor('c1', 7).invoke(input, {
      configurable: { thread_id: 't-1', tenant: 'acme' },
    });
    const request = (acme as { __interrupt__?: Interrupt<HITLRequest>[] }).__interrupt__?.[0]?.value;
    expect(request?.actionRequests.map((action) => action.name)).toEqual(['payments__refund']);

    const globex = await agentFor('c2', 5).invoke(input, {
      configurable: { thread_id: 't-2', tenant: 'globex' },
    });
    expect((globex as { __interrupt__?: unknown }).__interrupt__).toBeUndefined();
    expect(refunds).toEqual([5]);
    expect(new Set(tenantsSeen)).toEqual(new Set(['acme', 'globex']));
  });
});
