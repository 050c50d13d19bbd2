// Regression (issue 33 item 5): on @openai/agents 0.20, a call the run state rejected ran once the
// tool's approval default changed before the resume: `approve(item, { alwaysApprove: true })` on
// another call of the same tool overwrites the tool's record, exact rejections included, and the
// Runner then runs the rejected call (0.23.1 fixed this upstream). A rejected call stays rejected.

import { Agent, run } from '@openai/agents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeProvider, ResponsesReply } from '../../examples/fake-provider/index.js';
import { approvalGate, createDispatcher, defaultStack } from '../../index.js';
import { toAgentsTools } from '../../integrations/openai-agents/index.js';
import { scriptedAgentsProvider } from '../helpers/agents-provider.js';
import { gatedRefunds, refundRegistry } from '../helpers/refunds.js';

let provider: FakeProvider;
let replies: ResponsesReply[];
const toolResults: string[][] = [];

beforeAll(async () => {
  ({ provider, replies } = await scriptedAgentsProvider((results) => toolResults.push(results)));
});

afterAll(async () => {
  await provider.close();
});

describe('toAgentsTools on a resumed run', () => {
  it('never runs a rejected call after another call of its tool is always approved', async () => {
    const { registry, gate, dispatcher, refunds } = gatedRefunds();
    const agent = new Agent({
      name: 'refunder',
      model: 'gpt-test',
      tools: toAgentsTools({ registry, dispatcher, approvals: gate }),
    });
    toolResults.length = 0;
    replies.push(
      {
        calls: [
          { call_id: 'c1', name: 'payments__refund', arguments: { amount: 500 } },
          { call_id: 'c2', name: 'payments__refund', arguments: { amount: 600 } },
        ],
      },
      { text: 'one done' },
    );
    const first = await run(agent, 'refund both');
    const [rejected, approved] = first.interruptions;
    first.state.reject(rejected as (typeof first.interruptions)[number], { message: 'not this one' });
    // The tool's default changes after the rejection: every call of it is approved from now on.
    first.state.approve(approved as (typeof first.interruptions)[number], { alwaysApprove: true });
    const second = await run(agent, first.state);

    expect(second.finalOutput).toBe('one done');
    expect(refunds).toEqual([600]);
    expect(toolResults.at(-1)?.[0]).toMatch(/^c1:.*not this one/);
    expect(toolResults.at(-1)?.[1]).toBe('c2:refunded 600');
  });

  it('never runs a rejected call after the tool stops requiring approval', async () => {
    const refunds: number[] = [];
    let gated = true;
    const registry = refundRegistry(refunds, () => gated);
    const gate = approvalGate({ registry });
    const dispatcher = createDispatcher(defaultStack({ registry, approval: gate }));
    const agent = new Agent({
      name: 'refunder',
      model: 'gpt-test',
      tools: toAgentsTools({ registry, dispatcher, approvals: gate }),
    });
    toolResults.length = 0;
    replies.push(
      { calls: [{ call_id: 'c1', name: 'payments__refund', arguments: { amount: 500 } }] },
      { text: 'not done' },
    );
    const first = await run(agent, 'refund');
    expect(first.interruptions).toHaveLength(1);
    for (const item of first.interruptions) first.state.reject(item);
    // The tool's default changes between the rejection and the resume.
    gated = false;
    const second = await run(agent, first.state);

    expect(second.finalOutput).toBe('not done');
    expect(refunds).toEqual([]);
    expect(toolResults.at(-1)?.[0]).toMatch(/^c1:/);
    expect(toolResults.at(-1)?.[0]).not.toContain('refunded');
  });
});
