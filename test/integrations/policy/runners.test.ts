// The OpenAI and Anthropic runners with an approval gate, against the real clients and the local
// fake provider: every call id is answered in order, a paused call's text holds no token, and the
// `approvals` run option resumes it once.

import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { isDispatchError, type Outcome } from '../../../index.js';
import { createAnthropicToolkit } from '../../../integrations/anthropic/index.js';
import { createOpenAIToolkit } from '../../../integrations/openai/index.js';
import { scripted, startFakeProvider, type FakeProvider } from '../../../examples/fake-provider/index.js';
import { gatedRefunds } from '../../helpers/refunds.js';

let provider: FakeProvider | undefined;
afterEach(async () => {
  await provider?.close();
  provider = undefined;
});

const tokenOf = (outcome: Outcome | undefined) =>
  isDispatchError(outcome) ? outcome.approval?.token : undefined;

describe('runners with approvals', () => {
  it('OpenAI: pauses the gated call, answers both in order, and runs it once approved', async () => {
    const { registry, gate, dispatcher, refunds } = gatedRefunds();
    provider = await startFakeProvider({
      chat: scripted([
        {
          toolCalls: [
            { name: 'payments__refund', arguments: { amount: 500 } },
            { name: 'payments__refund', arguments: { amount: 5 } },
          ],
        },
      ]),
    });
    const client = new OpenAI({ baseURL: provider.openaiBaseURL, apiKey: 'test', maxRetries: 0 });
    const toolkit = createOpenAIToolkit({ registry, dispatcher });
    const response = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'refund' }],
      tools: toolkit.chatTools(),
    });
    const message = response.choices[0]!.message;
    const first = await toolkit.runChatToolCalls(message);
    expect(first.messages.map((m) => m.tool_call_id)).toEqual(['call_0', 'call_1']);
    const token = tokenOf(first.outcomes[0]);
    expect(token).toBeDefined();
    expect(first.messages[0]?.content).toMatch(/approval_required/);
    expect(first.messages[0]?.content).not.toContain(token);
    expect(refunds).toEqual([5]);
    await gate.approve(token as string, { by: 'ana' });
    const resumed = await toolkit.runChatToolCalls(
      { ...message, tool_calls: (message.tool_calls ?? []).slice(0, 1) },
      { approvals: { call_0: token as string } },
    );
    expect(resumed.messages[0]?.content).toBe('refunded 500');
    expect(refunds).toEqual([5, 500]);
  });

  it('Anthropic: a host approval by tool_use id runs the gated call', async () => {
    const { registry, dispatcher, refunds } = gatedRefunds();
    provider = await startFakeProvider({
      messages: scripted([{ toolUses: [{ name: 'payments__refund', input: { amount: 500 } }] }]),
    });
    const client = new Anthropic({ baseURL: provider.anthropicBaseURL, apiKey: 'test', maxRetries: 0 });
    const toolkit = createAnthropicToolkit({ registry, dispatcher });
    const response = await client.messages.create({
      model: 'm',
      max_tokens: 10,
      tools: toolkit.tools(),
      messages: [{ role: 'user', content: 'refund' }],
    });
    const paused = await toolkit.runToolUses(response);
    expect(paused.outcomes[0]?.ok).toBe(false);
    expect(refunds).toEqual([]);
    const approved = await toolkit.runToolUses(response, {
      approvals: { toolu_0: { approvedBy: 'console' } },
    });
    expect(approved.outcomes[0]?.ok).toBe(true);
    expect(refunds).toEqual([500]);
  });
});
