// createAnthropicToolkit against the real @anthropic-ai/sdk client and the bundled fake provider.

import Anthropic from '@anthropic-ai/sdk';
import { ToolError as SdkToolError } from '@anthropic-ai/sdk/lib/tools/ToolError';
import type { MessageParam } from '@anthropic-ai/sdk/resources/messages/messages';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createBudget, createDispatcher, defaultStack, ToolRegistry } from '../../../index.js';
import { createAnthropicToolkit, RunnableToolFailed } from '../../../integrations/anthropic/index.js';
import {
  scripted,
  startFakeProvider,
  type FakeProvider,
  type MessagesBody,
  type MessagesReply,
} from '../../../examples/fake-provider/index.js';
import { toolsFixture } from '../openai/fixtures.js';

let provider: FakeProvider | undefined;
afterEach(async () => {
  await provider?.close();
  provider = undefined;
});

function clientFor(p: FakeProvider): Anthropic {
  return new Anthropic({ baseURL: p.anthropicBaseURL, apiKey: 'test', maxRetries: 0 });
}

const toolUse = (id: unknown, name: string, input: unknown) => ({ type: 'tool_use', id, name, input });

describe('createAnthropicToolkit: tools', () => {
  it('offers each tool under its wire name with an object input schema', () => {
    const { registry, dispatcher } = toolsFixture();
    const claude = createAnthropicToolkit({ registry, dispatcher });
    expect(claude.tools()[0]).toEqual({
      name: 'search__web',
      description: 'Search the web',
      input_schema: {
        type: 'object',
        properties: { query: { type: 'string' }, limit: expect.objectContaining({ type: 'integer' }) },
        required: ['query'],
      },
    });
    expect(claude.wireName('slow.wait')).toBe('slow__wait');
    expect(claude.toolName('slow__wait')).toBe('slow.wait');
  });

  it('allows wire names up to 128 characters and throws a TypeError naming colliding tools', () => {
    const long = `x.${'y'.repeat(100)}`;
    const registry = new ToolRegistry().register({ name: long, inputSchema: z.object({}), handler: () => 1 });
    expect(() =>
      createAnthropicToolkit({ registry, dispatcher: createDispatcher(defaultStack({ registry })) }),
    ).not.toThrow();
    registry
      .register({ name: 'a.b', inputSchema: z.object({}), handler: () => 1 })
      .register({ name: 'a__b', inputSchema: z.object({}), handler: () => 1 });
    expect(() =>
      createAnthropicToolkit({ registry, dispatcher: createDispatcher(defaultStack({ registry })) }),
    ).toThrow(/"a.b" and "a__b"/);
  });

  it('validates its options with TypeErrors naming the option', () => {
    const { registry, dispatcher } = toolsFixture();
    expect(() => createAnthropicToolkit(null as never)).toThrow(TypeError);
    expect(() => createAnthropicToolkit({ registry: {} as never, dispatcher })).toThrow(/registry/);
    expect(() => createAnthropicToolkit({ registry, dispatcher: { dispatch: () => 1 } as never })).toThrow(
      /dispatcher/,
    );
    expect(() => createAnthropicToolkit({ registry, dispatcher, idempotencyScope: 3 as never })).toThrow(
      /idempotencyScope/,
    );
    expect(() => createAnthropicToolkit({ registry, dispatcher, keyByCallId: 'x' as never })).toThrow(
      /keyByCallId/,
    );
    const claude = createAnthropicToolkit({ registry, dispatcher });
    expect(() => claude.runnableTools({ toolError: 'x' as never })).toThrow(/toolError/);
  });
});

describe('createAnthropicToolkit: runToolUses', () => {
  it('runs a multi-turn loop: every tool_use answered first, in order, failures marked is_error', async () => {
    const { registry, dispatcher, events } = toolsFixture();
    const claude = createAnthropicToolkit({ registry, dispatcher, idempotencyScope: 'run-1' });
    provider = await startFakeProvider({
      messages: scripted<MessagesBody, MessagesReply>([
        {
          text: 'Let me look.',
          toolUses: [
            { id: 't_search', name: 'search__web', input: { query: 'claude' } },
            { id: 't_ghost', name: 'ghost', input: {} },
            { id: 't_schema', name: 'search__web', input: { query: 1 } },
            { id: 't_declined', name: 'pay__charge', input: { amount: 900 } },
            { id: 't_flaky', name: 'flaky__fetch', input: { url: 'u' } },
            { id: 't_crash', name: 'db__crash', input: {} },
            { id: 't_json', name: 'search__web', input: '{"query": ' },
          ],
        },
        { toolUses: [{ id: 't_pay', name: 'pay__charge', input: { amount: 3 } }] },
        (turn) => ({ text: turn.toolResults.map((r) => `${r.id}${r.isError ? '!' : ''}`).join(',') }),
      ]),
    });
    const client = clientFor(provider);
    const messages: MessageParam[] = [{ role: 'user', content: 'go' }];
    const batches = [];
    for (;;) {
      const response = await client.messages.create({
        model: 'm',
        max_tokens: 100,
        messages,
        tools: claude.tools(),
      });
      messages.push({ role: 'assistant', content: response.content });
      if (response.stop_reason !== 'tool_use') break;
      const batch = await claude.runToolUses(response);
      batches.push(batch);
      messages.push(batch.message);
    }
    const [first, second] = batches;
    const blocks = first!.message.content;
    expect(blocks.map((b) => [b.tool_use_id, b.is_error === true])).toEqual([
      ['t_search', false],
      ['t_ghost', true],
      ['t_schema', true],
      ['t_declined', true],
      ['t_flaky', false],
      ['t_crash', true],
      ['t_json', true],
    ]);
    const text = Object.fromEntries(blocks.map((b) => [b.tool_use_id, b.content as string]));
    expect(text['t_search']).toBe('{"hits":["claude-1"],"limit":null}');
    expect(text['t_ghost']).toMatch(/^error \(not_found\): .*ghost/);
    expect(text['t_schema']).toMatch(/^error \(schema\): .*"search__web"/);
    expect(text['t_declined']).toMatch(
      /^error \(tool_error, after 1 attempt\): The card was declined for 900/,
    );
    expect(text['t_flaky']).toBe('fetched u');
    expect(text['t_crash']).not.toMatch(/\/srv\/db\.js/);
    expect(text['t_json']).toMatch(/^error \(schema\): .*not valid JSON/);
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'dispatch.failure', callId: 't_json', kind: 'schema' }),
    );
    expect(first!.outcomes.map((o) => (o.ok ? 'ok' : o.kind))).toEqual([
      'ok',
      'not_found',
      'schema',
      'tool_error',
      'ok',
      'internal',
      'schema',
    ]);
    expect(second!.outcomes[0]).toMatchObject({ ok: true, result: { charged: 3 } });
    expect(messages.at(-1)).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: 't_pay', citations: null }],
    });
    expect(provider.requests.every((r) => r.status === 200)).toBe(true);
  });

  it('returns an empty result for a response without tool use', async () => {
    const { registry, dispatcher } = toolsFixture();
    const claude = createAnthropicToolkit({ registry, dispatcher });
    await expect(claude.runToolUses({ content: [{ type: 'text', text: 'hi' }] })).resolves.toEqual({
      message: { role: 'user', content: [] },
      outcomes: [],
    });
    await expect(claude.runToolUses({} as never)).rejects.toThrow(TypeError);
  });

  it('scopes idempotency keys, dedupes a replayed turn, and passes no key without a scope', async () => {
    const { registry, dispatcher, log } = toolsFixture();
    const response = { content: [toolUse('toolu_1', 'pay__charge', { amount: 5 })] };
    const scoped = createAnthropicToolkit({ registry, dispatcher, idempotencyScope: 'run-9' });
    await scoped.runToolUses(response);
    const replay = await scoped.runToolUses(response);
    expect(replay.outcomes[0]).toMatchObject({ ok: true, attempts: 0 });
    await scoped.runToolUses(response, { idempotencyScope: 'run-10' });
    const bare = createAnthropicToolkit({ registry, dispatcher });
    await bare.runToolUses(response);
    const byId = createAnthropicToolkit({ registry, dispatcher, keyByCallId: true });
    await byId.runToolUses(response);
    expect(log.charges.map((c) => [c.key, c.callId])).toEqual([
      ['run-9:toolu_1', 'toolu_1'],
      ['run-10:toolu_1', 'toolu_1'],
      [undefined, 'toolu_1'],
      ['toolu_1', 'toolu_1'],
    ]);
  });

  it('refuses calls past the budget, times out on our deadline and cancels on abort, each answered', async () => {
    const { registry, dispatcher, log, clock, events } = toolsFixture();
    const claude = createAnthropicToolkit({ registry, dispatcher });
    const twoCharges = {
      content: [toolUse('a', 'pay__charge', { amount: 1 }), toolUse('b', 'pay__charge', { amount: 2 })],
    };
    const budgeted = await claude.runToolUses(twoCharges, { budget: createBudget(1) });
    expect(budgeted.outcomes.map((o) => (o.ok ? 'ok' : o.kind))).toEqual(['ok', 'budget_exceeded']);
    expect(budgeted.message.content[1]).toMatchObject({ tool_use_id: 'b', is_error: true });

    const timed = claude.runToolUses({ content: [toolUse('slow', 'slow__wait', {})] }, { timeoutMs: 50 });
    await vi.waitFor(() => expect(clock.pending).toBeGreaterThan(0));
    clock.advance(50);
    const timedOut = await timed;
    expect(timedOut.message.content[0]!.content).toMatch(
      /^error \(timeout, after 1 attempt\): "slow__wait" timed out after 50 ms/,
    );

    const controller = new AbortController();
    const aborting = claude.runToolUses(
      { content: [toolUse('s2', 'slow__wait', {}), toolUse('n', 'time__now', {})] },
      { signal: controller.signal },
    );
    await vi.waitFor(() => expect(log.slowGates).toHaveLength(2));
    // The caller aborts once the quick call has ended, while the slow one still runs.
    const succeeded = () =>
      events.filter((event) => event.type === 'dispatch.success').map((event) => event.tool);
    await vi.waitFor(() => expect(succeeded()).toContain('time.now'));
    controller.abort();
    const aborted = await aborting;
    expect(aborted.outcomes.map((o) => (o.ok ? 'ok' : o.kind))).toEqual(['cancelled', 'ok']);
    expect(aborted.message.content.map((b) => b.tool_use_id)).toEqual(['s2', 'n']);
  });

  it('cleans host quirks: null signal, numeric and empty ids', async () => {
    const { registry, dispatcher, log } = toolsFixture();
    const claude = createAnthropicToolkit({ registry, dispatcher, idempotencyScope: 's' });
    const { message, outcomes } = await claude.runToolUses(
      {
        content: [
          toolUse(7, 'pay__charge', { amount: 1 }),
          toolUse('', 'pay__charge', { amount: 2 }),
          toolUse(undefined, 'time__now', undefined),
        ],
      },
      { signal: null },
    );
    expect(outcomes.every((o) => o.ok)).toBe(true);
    expect(message.content[0]!.tool_use_id).toBe('7');
    expect(message.content[1]!.tool_use_id).not.toBe('');
    expect(log.charges.map((c) => c.key)).toEqual(['s:7', undefined]);
  });
});

describe('createAnthropicToolkit: runnableTools with the SDK tool runner', () => {
  it('runs the runner loop over a message thread, our validation answering, failures is_error', async () => {
    const { registry, dispatcher, log, events } = toolsFixture();
    const claude = createAnthropicToolkit({ registry, dispatcher, idempotencyScope: 'runner' });
    provider = await startFakeProvider({
      messages: scripted<MessagesBody, MessagesReply>([
        {
          toolUses: [
            { id: 'u1', name: 'search__web', input: { query: 'r' } },
            { id: 'u2', name: 'search__web', input: { query: false } },
            { id: 'u3', name: 'pay__charge', input: { amount: 1000 } },
            { id: 'u4', name: 'ghost', input: {} },
          ],
        },
        { toolUses: [{ id: 'u5', name: 'pay__charge', input: { amount: 4 } }] },
        (turn) => ({ text: `messages=${turn.body.messages.length}` }),
      ]),
    });
    const runner = clientFor(provider).beta.messages.toolRunner({
      model: 'm',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'go' }],
      tools: claude.runnableTools(),
    });
    const final = await runner.runUntilDone();
    expect(final.content).toEqual([{ type: 'text', text: 'messages=5', citations: null }]);
    const answered = provider.requests[1]!.body['messages'] as Array<{
      content: Array<{ tool_use_id: string; content: string; is_error?: boolean }>;
    }>;
    expect(answered).toHaveLength(1);
    const [r1, r2, r3, r4] = answered[0]!.content;
    expect(r1).toMatchObject({ tool_use_id: 'u1', content: '{"hits":["r-1"],"limit":null}' });
    expect(r1!.is_error).toBeUndefined();
    expect(r2).toMatchObject({
      tool_use_id: 'u2',
      is_error: true,
      content: expect.stringMatching(/^Error: error \(schema\): .*"search__web"/),
    });
    expect(r3).toMatchObject({
      tool_use_id: 'u3',
      is_error: true,
      content: expect.stringMatching(/^Error: error \(tool_error, after 1 attempt\): The card was declined/),
    });
    // The runner answers an unknown tool itself; the dispatcher never sees it.
    expect(r4).toMatchObject({ tool_use_id: 'u4', is_error: true, content: "Error: Tool 'ghost' not found" });
    expect(events.some((e) => e.callId === 'u4')).toBe(false);
    expect(log.charges).toEqual([{ amount: 4, key: 'runner:u5', callId: 'u5' }]);
    expect(provider.requests.map((r) => r.status)).toEqual([200, 200, 200]);
  });

  it('sends failures without the runner\'s "Error: " prefix when given the SDK\'s ToolError', async () => {
    const { registry, dispatcher } = toolsFixture();
    const claude = createAnthropicToolkit({ registry, dispatcher });
    provider = await startFakeProvider({
      messages: scripted<MessagesBody, MessagesReply>([
        { toolUses: [{ id: 'u1', name: 'pay__charge', input: { amount: 101 } }] },
        (turn) => ({ text: turn.toolResults[0]!.content }),
      ]),
    });
    const runner = clientFor(provider).beta.messages.toolRunner({
      model: 'm',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'go' }],
      tools: claude.runnableTools({ toolError: SdkToolError }),
    });
    const final = await runner.runUntilDone();
    expect(final.content[0]).toMatchObject({
      text: expect.stringMatching(/^error \(tool_error, after 1 attempt\): The card was declined for 101/),
    });
  });

  it("runs with a null signal, aborts with the runner's signal, and carries the outcome on the thrown error", async () => {
    const { registry, dispatcher, log } = toolsFixture();
    const [, , , slow, now] = createAnthropicToolkit({ registry, dispatcher }).runnableTools({ budget: 10 });
    const ctx = (id: string, signal: AbortSignal | null) =>
      ({
        toolUse: { type: 'tool_use' as const, id, name: 'x', input: {} },
        toolUseBlock: { type: 'tool_use' as const, id, name: 'x', input: {} },
        signal,
      }) as never;
    await expect(now!.run({}, ctx('n1', null))).resolves.toBe('2026-01-01T00:00:00Z');
    const controller = new AbortController();
    const running = slow!.run({}, ctx('s1', controller.signal));
    await vi.waitFor(() => expect(log.slowGates).toHaveLength(1));
    controller.abort();
    const error = await Promise.resolve(running).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunnableToolFailed);
    expect((error as RunnableToolFailed).outcome.kind).toBe('cancelled');
    expect((error as RunnableToolFailed).message).toMatch(/^error \(cancelled/);
    expect(now!.parse({ a: 1 })).toEqual({ a: 1 });
  });
});
