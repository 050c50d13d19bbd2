// toAiSdkTools({ approvals }) with the real AI SDK: needsApproval is the gate's evaluate, and a
// call the user approved runs once with { approvedBy: 'ai-sdk' }.

import { generateText, stepCountIs, type ModelMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  approvalGate,
  createDispatcher,
  defaultStack,
  ToolRegistry,
  type DispatchEvent,
} from '../../../index.js';
import { toAiSdkTools } from '../../../integrations/ai-sdk/index.js';
import { scriptedModel } from './scripted-model.js';

function setup() {
  const refunds: number[] = [];
  const registry = new ToolRegistry()
    .register({
      name: 'payments.refund',
      inputSchema: z.object({ amount: z.number() }),
      requiresApproval: ({ amount }) => amount > 100,
      handler: ({ amount }) => {
        refunds.push(amount);
        return { refunded: amount };
      },
    })
    .register({
      name: 'orders.read',
      inputSchema: z.object({}),
      annotations: { readOnlyHint: true },
      handler: () => ({ status: 'delivered' }),
    });
  const events: DispatchEvent[] = [];
  const gate = approvalGate({ registry });
  const dispatcher = createDispatcher(defaultStack({ registry, approval: gate }), {
    onEvent: (event) => events.push(event),
  });
  return { registry, dispatcher, gate, refunds, events };
}

const call = (id: string, name: string, args: unknown) => ({ id, name, input: JSON.stringify(args) });

describe('toAiSdkTools with approvals', () => {
  it('asks for approval of a gated call only, and runs it once approved', async () => {
    const { registry, dispatcher, gate, refunds, events } = setup();
    const { model } = scriptedModel([
      [
        call('c1', 'payments__refund', { amount: 500 }),
        call('c2', 'orders__read', {}),
        call('c3', 'payments__refund', { amount: 5 }),
      ],
      'refunded',
    ]);
    const tools = toAiSdkTools({ registry, dispatcher, approvals: gate });
    const first = await generateText({ model, tools, stopWhen: stepCountIs(3), prompt: 'refund' });
    const requests = first.content.filter((part) => part.type === 'tool-approval-request');
    expect(requests.map((part) => part.toolCall.toolCallId)).toEqual(['c1']);
    expect(refunds).toEqual([5]);

    const approval = requests[0] as { approvalId: string };
    const messages: ModelMessage[] = [
      { role: 'user', content: 'refund' },
      ...first.response.messages,
      {
        role: 'tool',
        content: [{ type: 'tool-approval-response', approvalId: approval.approvalId, approved: true }],
      },
    ];
    // A new ToolSet, as a request handler would build: the approval lives in the messages.
    const second = await generateText({
      model,
      tools: toAiSdkTools({ registry, dispatcher, approvals: gate }),
      stopWhen: stepCountIs(3),
      messages,
    });
    expect(second.text).toBe('refunded');
    expect(refunds).toEqual([5, 500]);
    const decisions = events.filter((event) => event.type === 'approval.decision' && event.callId === 'c1');
    expect(decisions.map((event) => [event.action, event.source])).toEqual([['allow', 'host']]);
  });

  it('never runs a call the user denied', async () => {
    const { registry, dispatcher, gate, refunds } = setup();
    const { model } = scriptedModel([[call('c1', 'payments__refund', { amount: 500 })], 'not refunded']);
    const first = await generateText({
      model,
      tools: toAiSdkTools({ registry, dispatcher, approvals: gate }),
      prompt: 'refund',
    });
    const request = first.content.find((part) => part.type === 'tool-approval-request') as {
      approvalId: string;
    };
    const second = await generateText({
      model,
      tools: toAiSdkTools({ registry, dispatcher, approvals: gate }),
      stopWhen: stepCountIs(3),
      messages: [
        { role: 'user', content: 'refund' },
        ...first.response.messages,
        {
          role: 'tool',
          content: [{ type: 'tool-approval-response', approvalId: request.approvalId, approved: false }],
        },
      ],
    });
    expect(second.text).toBe('not refunded');
    expect(refunds).toEqual([]);
  });

  it('throws a TypeError for approvals that are not a gate', () => {
    const { registry, dispatcher } = setup();
    expect(() => toAiSdkTools({ registry, dispatcher, approvals: {} as never })).toThrow(/approvals/);
  });
});
