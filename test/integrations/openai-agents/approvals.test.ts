// toAgentsTools({ approvals }) with the real Agents SDK against the local Responses server: a
// gated call interrupts the run, and once the run state approves it, it runs once.

import { Agent, run } from '@openai/agents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeProvider, ResponsesReply } from '../../../examples/fake-provider/index.js';
import { toAgentsTools } from '../../../integrations/openai-agents/index.js';
import { scriptedAgentsProvider } from '../../helpers/agents-provider.js';
import { gatedRefunds } from '../../helpers/refunds.js';

let provider: FakeProvider;
let replies: ResponsesReply[];
const toolResults: string[][] = [];

beforeAll(async () => {
  ({ provider, replies } = await scriptedAgentsProvider((results) => toolResults.push(results)));
});

afterAll(async () => {
  await provider.close();
});

function setup() {
  const { registry, gate, dispatcher, refunds } = gatedRefunds();
  const agent = new Agent({
    name: 'refunder',
    model: 'gpt-test',
    tools: toAgentsTools({ registry, dispatcher, approvals: gate }),
  });
  return { agent, refunds };
}

describe('toAgentsTools with approvals', () => {
  it('interrupts a gated call and runs it once when the run state approves it', async () => {
    const { agent, refunds } = setup();
    toolResults.length = 0;
    replies.push(
      {
        // One call per turn: the SDK sends a resumed call's output after the others of its turn,
        // which the fake provider (strict about call order) would refuse.
        calls: [{ call_id: 'c2', name: 'payments__refund', arguments: { amount: 5 } }],
      },
      { calls: [{ call_id: 'c1', name: 'payments__refund', arguments: { amount: 500 } }] },
      { text: 'done' },
    );
    const first = await run(agent, 'refund both');
    expect(first.interruptions.map((item) => (item.rawItem as { callId?: string }).callId)).toEqual(['c1']);
    expect(refunds).toEqual([5]);
    for (const item of first.interruptions) first.state.approve(item);
    const second = await run(agent, first.state);
    expect(second.finalOutput).toBe('done');
    expect(refunds).toEqual([5, 500]);
    expect(toolResults.at(-1)).toEqual(['c1:refunded 500']);
  });

  it('never runs a call the run state rejects', async () => {
    const { agent, refunds } = setup();
    replies.push(
      { calls: [{ call_id: 'c1', name: 'payments__refund', arguments: { amount: 500 } }] },
      { text: 'not done' },
    );
    const first = await run(agent, 'refund');
    for (const item of first.interruptions) first.state.reject(item);
    const second = await run(agent, first.state);
    expect(second.finalOutput).toBe('not done');
    expect(refunds).toEqual([]);
  });
});
