// Regression: dispatcherMiddleware({ approvals }) asked the gate's `evaluate` about a call without
// the call's idempotency key, so a rule reading `call.idempotencyKey` judged another call than the
// one dispatched: here it interrupted for a keyed call that the gate itself lets run.

import { MemorySaver } from '@langchain/langgraph';
import { AIMessage, createAgent, fakeModel, ToolMessage } from 'langchain';
import { describe, expect, it } from 'vitest';
import { dispatcherMiddleware } from '../../integrations/langchain/index.js';
import { keyedRefunds } from '../helpers/refunds.js';

describe('the LangChain approval review', () => {
  it('evaluates a call under the idempotency key its dispatch carries', async () => {
    const { registry, gate, dispatcher, refunds: ran, keysSeen } = keyedRefunds();
    const agent = createAgent({
      model: fakeModel()
        .respondWithTools([{ id: 'c1', name: 'payments__refund', args: { amount: 500 } }])
        .respond(new AIMessage('done')),
      checkpointer: new MemorySaver(),
      middleware: [
        dispatcherMiddleware({
          registry,
          dispatcher,
          approvals: gate,
          idempotencyScope: (runtime) => runtime.configurable?.['thread_id'] as string | undefined,
        }),
      ],
    });

    const result = await agent.invoke(
      { messages: [{ role: 'user', content: 'refund the order' }] },
      { configurable: { thread_id: 't-1' } },
    );

    expect((result as { __interrupt__?: unknown }).__interrupt__).toBeUndefined();
    expect(ran).toEqual([500]);
    const answers = result.messages.filter((message) => ToolMessage.isInstance(message));
    expect(answers.map((message) => [message.tool_call_id, message.status])).toEqual([['c1', 'success']]);
    expect(keysSeen).toEqual(['t-1:c1', 't-1:c1']);
  });
});
