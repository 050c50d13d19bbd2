// Regression: a result nested 50 000 levels deep went to the host as it was, so the AI SDK's UI
// message stream and a LangChain checkpointer threw "Maximum call stack size exceeded" from
// JSON.stringify. The host now gets the result's JSON-safe copy, cut at toJsonSafe's maxDepth.

import { stepCountIs, streamText } from 'ai';
import { AIMessage, createAgent, fakeModel, ToolMessage } from 'langchain';
import { MemorySaver } from '@langchain/langgraph';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../../index.js';
import { toAiSdkTools } from '../../integrations/ai-sdk/index.js';
import { dispatcherMiddleware } from '../../integrations/langchain/index.js';
import { scriptedModel } from '../integrations/ai-sdk/scripted-model.js';

function nested(levels: number): unknown {
  let value: unknown = { leaf: true };
  for (let i = 0; i < levels; i++) value = { next: value };
  return value;
}

function deepTool() {
  const registry = new ToolRegistry().register({
    name: 'deep.get',
    inputSchema: z.object({}),
    handler: () => nested(50_000),
  });
  return { registry, dispatcher: createDispatcher(defaultStack({ registry })) };
}

describe('a result nested 50 000 levels deep', () => {
  it('streams through the AI SDK UI message stream', async () => {
    const { registry, dispatcher } = deepTool();
    const { model } = scriptedModel([[{ id: 'c1', name: 'deep__get', input: '{}' }], 'done']);
    const result = streamText({
      model,
      tools: toAiSdkTools({ registry, dispatcher }),
      stopWhen: stepCountIs(3),
      prompt: 'go',
    });
    const body = await result.toUIMessageStreamResponse().text();
    expect(body).toContain('"type":"tool-output-available"');
    expect(body).toContain('[Too deep]');
    expect(await result.text).toBe('done');
  });

  it('is saved by a LangChain checkpointer', async () => {
    const { registry, dispatcher } = deepTool();
    const model = fakeModel()
      .respondWithTools([{ id: 'c1', name: 'deep__get', args: {} }])
      .respond(new AIMessage('done'));
    const agent = createAgent({
      model,
      checkpointer: new MemorySaver(),
      middleware: [dispatcherMiddleware({ registry, dispatcher })],
    });
    const result = await agent.invoke(
      { messages: [{ role: 'user', content: 'go' }] },
      { configurable: { thread_id: 'thread-1' } },
    );
    const answer = result.messages.find((m) => ToolMessage.isInstance(m)) as ToolMessage;
    expect(answer.status).toBe('success');
    expect(String(answer.content)).toMatch(/^\{"next":\{"next":.*"\[Too deep\]"/);
  });
});
