// AI SDK 7's call-level `toolApproval` answered by the gate through aiSdkToolApproval, on the real
// `ai` 7 (npm run test:matrix); under `npm test` (`ai` 6, which has no toolApproval) it is skipped.

import { generateText, stepCountIs } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { approvalGate, createDispatcher, defaultStack, ToolRegistry } from '../../../index.js';
import { aiSdkToolApproval, toAiSdkTools } from '../../../integrations/ai-sdk/index.js';
import { scriptedModel } from './scripted-model.js';

const { default: manifest } = await import('ai/package.json', { with: { type: 'json' } });
const hasCallLevelToolApproval = Number(manifest.version.split('.')[0]) >= 7;

function setup() {
  const ran: string[] = [];
  const registry = new ToolRegistry()
    .register({
      name: 'payments.refund',
      inputSchema: z.object({ amount: z.number() }),
      requiresApproval: ({ amount }) => amount > 100,
      handler: ({ amount }) => {
        ran.push(`refund ${amount}`);
        return { refunded: amount };
      },
    })
    .register({
      name: 'orders.delete',
      inputSchema: z.object({}),
      handler: () => {
        ran.push('delete');
        return { deleted: true };
      },
    });
  const gate = approvalGate({
    registry,
    decide: (call, byDefault) =>
      call.toolName === 'orders.delete' ? { action: 'deny', reason: 'deleting orders is off' } : byDefault,
  });
  const dispatcher = createDispatcher(defaultStack({ registry, approval: gate }));
  return { registry, dispatcher, gate, ran };
}

const call = (id: string, name: string, args: unknown) => ({ id, name, input: JSON.stringify(args) });

describe.skipIf(!hasCallLevelToolApproval)('aiSdkToolApproval on AI SDK 7', () => {
  it('answers toolApproval with the gate: allow approved, deny denied with its reason, require user approval', async () => {
    const { registry, dispatcher, gate, ran } = setup();
    const { model } = scriptedModel([
      [
        call('c1', 'payments__refund', { amount: 5 }),
        call('c2', 'orders__delete', {}),
        call('c3', 'payments__refund', { amount: 500 }),
      ],
      'done',
    ]);
    // Typed against `ai` 6 by tsc, which has no toolApproval: passed as a variable, not a literal.
    const settings = {
      model,
      tools: toAiSdkTools({ registry, dispatcher, approvals: gate }),
      toolApproval: aiSdkToolApproval,
      stopWhen: stepCountIs(3),
      prompt: 'refund and delete',
    };
    const result = await generateText(settings);
    const parts = result.steps.flatMap((step) => step.content) as Array<Record<string, unknown>>;
    const responses = parts.filter((part) => part.type === 'tool-approval-response');
    const requestFor = (id: string) =>
      parts.find(
        (part) =>
          part.type === 'tool-approval-request' &&
          (part.toolCall as { toolCallId: string }).toolCallId === id,
      ) as { approvalId: string; isAutomatic?: boolean; reason?: string } | undefined;
    const responseFor = (id: string) =>
      responses.find((part) => part.approvalId === requestFor(id)?.approvalId) as
        | { approved: boolean; reason?: string }
        | undefined;

    expect(responseFor('c1')?.approved).toBe(true);
    expect(responseFor('c2')).toMatchObject({ approved: false, reason: 'deleting orders is off' });
    expect(requestFor('c3')).toBeDefined();
    expect(requestFor('c3')?.isAutomatic).toBeUndefined();
    expect(responseFor('c3')).toBeUndefined();
    expect(ran).toEqual(['refund 5']);
  });

  it('reads the tenant from the tool context, as AI SDK 7 has no experimental_context', async () => {
    const { registry, dispatcher, ran } = setup();
    const gate = approvalGate({
      registry,
      decide: (call, byDefault) =>
        call.tenant === 'acme' ? { action: 'require', reason: 'acme approves every refund' } : byDefault,
    });
    const tools = toAiSdkTools({
      registry,
      dispatcher,
      approvals: gate,
      tenant: (context) => (context as { tenant?: string } | undefined)?.tenant,
    });
    const run = (tenant: string) =>
      generateText({
        model: scriptedModel([[call('c1', 'payments__refund', { amount: 5 })], 'done']).model,
        tools,
        toolApproval: aiSdkToolApproval,
        toolsContext: { payments__refund: { tenant } },
        stopWhen: stepCountIs(3),
        prompt: 'refund',
      } as unknown as Parameters<typeof generateText>[0]);
    const acme = await run('acme');
    const request = acme.content.find((part) => part.type === 'tool-approval-request') as
      | { reason?: string }
      | undefined;
    expect(request?.reason).toBe('acme approves every refund');
    expect(ran).toEqual([]);
    await run('globex');
    expect(ran).toEqual(['refund 5']);
  });

  it('answers not-applicable for a tool it did not make', async () => {
    const status = await aiSdkToolApproval({
      toolCall: { toolName: 'weather', toolCallId: 'c1', input: {} },
      tools: { weather: {} },
    });
    expect(status).toEqual({ type: 'not-applicable' });
  });
});
