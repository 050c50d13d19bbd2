// Regression: the OpenAI and Anthropic toolkits and the LangChain middleware dispatched whatever
// name the model sent, so a tool registered after the toolkit was built (`admin_wipe`), or a
// dotted registry name that is not a wire name (`search.web`), ran though it was never offered.

import { AIMessage, createAgent, fakeModel, ToolMessage } from 'langchain';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../../index.js';
import { createAnthropicToolkit } from '../../integrations/anthropic/index.js';
import { dispatcherMiddleware } from '../../integrations/langchain/index.js';
import { createOpenAIToolkit } from '../../integrations/openai/index.js';

/** One offered tool, and `admin_wipe` registered once the host has been built. */
function setup() {
  const ran: string[] = [];
  const registry = new ToolRegistry().register({
    name: 'search.web',
    inputSchema: z.object({}),
    handler: () => {
      ran.push('search.web');
      return 'hits';
    },
  });
  const dispatcher = createDispatcher(defaultStack({ registry }));
  const registerLater = () =>
    registry.register({
      name: 'admin_wipe',
      inputSchema: z.object({}),
      handler: () => {
        ran.push('admin_wipe');
        return 'wiped';
      },
    });
  return { registry, dispatcher, ran, registerLater };
}

describe('a host runs only the tools it offered', () => {
  it('openai: answers a later tool and a dotted registry name not_found, without running them', async () => {
    const { registry, dispatcher, ran, registerLater } = setup();
    const kit = createOpenAIToolkit({ registry, dispatcher });
    registerLater();
    const call = (id: string, name: string) => ({
      id,
      type: 'function' as const,
      function: { name, arguments: '{}' },
    });
    const { messages, outcomes } = await kit.runChatToolCalls({
      tool_calls: [call('c1', 'admin_wipe'), call('c2', 'search.web'), call('c3', 'search__web')],
    });
    expect(ran).toEqual(['search.web']);
    expect(outcomes.map((o) => (o.ok ? 'ok' : o.kind))).toEqual(['not_found', 'not_found', 'ok']);
    expect(messages[0]!.content).toMatch(/^error \(not_found\): No tool named "admin_wipe"/);
    expect(messages[1]!.content).toMatch(/^error \(not_found\): No tool named "search\.web"/);
  });

  it('anthropic: answers a later tool and a dotted registry name not_found, without running them', async () => {
    const { registry, dispatcher, ran, registerLater } = setup();
    const claude = createAnthropicToolkit({ registry, dispatcher });
    registerLater();
    const use = (id: string, name: string) => ({ type: 'tool_use', id, name, input: {} });
    const { message, outcomes } = await claude.runToolUses({
      content: [use('t1', 'admin_wipe'), use('t2', 'search.web'), use('t3', 'search__web')],
    });
    expect(ran).toEqual(['search.web']);
    expect(outcomes.map((o) => (o.ok ? 'ok' : o.kind))).toEqual(['not_found', 'not_found', 'ok']);
    expect(message.content.map((block) => block.is_error === true)).toEqual([true, true, false]);
  });

  it('langchain: answers a later tool and a dotted registry name not_found, without running them', async () => {
    const { registry, dispatcher, ran, registerLater } = setup();
    const middleware = dispatcherMiddleware({ registry, dispatcher });
    registerLater();
    const model = fakeModel()
      .respondWithTools([
        { id: 'c1', name: 'admin_wipe', args: {} },
        { id: 'c2', name: 'search.web', args: {} },
        { id: 'c3', name: 'search__web', args: {} },
      ])
      .respond(new AIMessage('done'));
    const agent = createAgent({ model, middleware: [middleware] });
    const result = await agent.invoke({ messages: [{ role: 'user', content: 'go' }] });
    const answers = result.messages.filter((m) => ToolMessage.isInstance(m)) as ToolMessage[];
    expect(ran).toEqual(['search.web']);
    expect(answers.map((m) => [m.tool_call_id, m.status])).toEqual([
      ['c1', 'error'],
      ['c2', 'error'],
      ['c3', 'success'],
    ]);
    expect(answers[1]!.content).toMatch(/^error \(not_found\): No tool named "search\.web"/);
  });
});
