// Regression (issue 31, item 27): the OpenAI, Anthropic and LangChain bridges answered a call to
// a tool they never offered (or that does not exist) with a `not_found` of their own, outside the
// dispatcher, so logging, tracing and audit layers never saw it. The AI SDK, the Agents SDK and
// the MCP server already leave such calls to their SDK or send them through the stack.

import { AIMessage, createAgent, fakeModel } from 'langchain';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, type Middleware, ToolRegistry } from '../../index.js';
import { createAnthropicToolkit } from '../../integrations/anthropic/index.js';
import { dispatcherMiddleware } from '../../integrations/langchain/index.js';
import { createOpenAIToolkit } from '../../integrations/openai/index.js';

/** An offered tool, `admin_wipe` registered once the host is built, and an audit layer outside the stack. */
function setup() {
  const ran: string[] = [];
  const audited: string[] = [];
  const registry = new ToolRegistry().register({
    name: 'search.web',
    inputSchema: z.object({}),
    handler: () => {
      ran.push('search.web');
      return 'hits';
    },
  });
  const audit: Middleware = async (ctx, next) => {
    await next();
    const { outcome } = ctx;
    audited.push(`${ctx.displayName}:${outcome === undefined ? '?' : outcome.ok ? 'ok' : outcome.kind}`);
  };
  const dispatcher = createDispatcher([audit, ...defaultStack({ registry })]);
  registry.register({
    name: 'admin_wipe',
    inputSchema: z.object({}),
    handler: () => {
      ran.push('admin_wipe');
      return 'wiped';
    },
  });
  return { registry, dispatcher, ran, audited };
}

const expected = ['admin_wipe:not_found', 'made_up:not_found', 'search__web:ok'];

describe('a bridge sends a call it never offered through the stack', () => {
  it('openai: the audit layer sees the not_found of a later tool and of a made-up one', async () => {
    const { registry, dispatcher, ran, audited } = setup();
    const kit = createOpenAIToolkit({ registry: { list: () => registry.list().slice(0, 1) }, dispatcher });
    const call = (id: string, name: string) => ({
      id,
      type: 'function' as const,
      function: { name, arguments: '{}' },
    });
    const { outcomes } = await kit.runChatToolCalls({
      tool_calls: [call('c1', 'admin_wipe'), call('c2', 'made_up'), call('c3', 'search__web')],
    });
    expect(outcomes.map((o) => (o.ok ? 'ok' : o.kind))).toEqual(['not_found', 'not_found', 'ok']);
    expect(audited).toEqual(expected);
    expect(ran).toEqual(['search.web']);
  });

  it('anthropic: the audit layer sees the not_found of a later tool and of a made-up one', async () => {
    const { registry, dispatcher, ran, audited } = setup();
    const claude = createAnthropicToolkit({
      registry: { list: () => registry.list().slice(0, 1) },
      dispatcher,
    });
    const use = (id: string, name: string) => ({ type: 'tool_use', id, name, input: {} });
    const { outcomes } = await claude.runToolUses({
      content: [use('t1', 'admin_wipe'), use('t2', 'made_up'), use('t3', 'search__web')],
    });
    expect(outcomes.map((o) => (o.ok ? 'ok' : o.kind))).toEqual(['not_found', 'not_found', 'ok']);
    expect(audited).toEqual(expected);
    expect(ran).toEqual(['search.web']);
  });

  it('langchain: the audit layer sees the not_found of a later tool and of a made-up one', async () => {
    const { registry, dispatcher, ran, audited } = setup();
    const middleware = dispatcherMiddleware({
      registry: { list: () => registry.list().slice(0, 1) },
      dispatcher,
    });
    const model = fakeModel()
      .respondWithTools([
        { id: 'c1', name: 'admin_wipe', args: {} },
        { id: 'c2', name: 'made_up', args: {} },
        { id: 'c3', name: 'search__web', args: {} },
      ])
      .respond(new AIMessage('done'));
    const agent = createAgent({ model, middleware: [middleware] });
    await agent.invoke({ messages: [{ role: 'user', content: 'go' }] });
    expect([...audited].sort()).toEqual(expected);
    expect(ran).toEqual(['search.web']);
  });
});
