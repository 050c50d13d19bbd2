// createOpenAIToolkit against the real openai client and the bundled fake provider.

import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createBudget, createDispatcher, defaultStack, ToolRegistry } from '../../../index.js';
import { createOpenAIToolkit } from '../../../integrations/openai/index.js';
import {
  scripted,
  startFakeProvider,
  type ChatReply,
  type FakeProvider,
  type ModelTurn,
  type ChatBody,
} from '../../../examples/fake-provider/index.js';
import { toolsFixture } from './fixtures.js';

let provider: FakeProvider | undefined;
afterEach(async () => {
  await provider?.close();
  provider = undefined;
});

function clientFor(p: FakeProvider): OpenAI {
  return new OpenAI({ baseURL: p.openaiBaseURL, apiKey: 'test', maxRetries: 0 });
}

/** Runs the chat loop until the model answers with text; returns the transcript and each batch's outcomes. */
async function chatLoop(
  client: OpenAI,
  kit: ReturnType<typeof createOpenAIToolkit>,
  options: Parameters<typeof kit.runChatToolCalls>[1] = {},
) {
  const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'go' }];
  const batches = [];
  for (let turn = 0; turn < 5; turn++) {
    const completion = await client.chat.completions.create({
      model: 'fake',
      messages,
      tools: kit.chatTools(),
    });
    const assistant = completion.choices[0]!.message;
    messages.push(assistant);
    if (!assistant.tool_calls?.length) return { messages, batches, final: assistant.content };
    const result = await kit.runChatToolCalls(assistant, options);
    batches.push(result);
    messages.push(...result.messages);
  }
  throw new Error('the loop did not end');
}

const summary = (turn: ModelTurn<ChatBody>): ChatReply => ({
  text: turn.toolResults.map((r) => `${r.id}: ${r.content}`).join('\n'),
});

describe('createOpenAIToolkit: tools', () => {
  it('offers each tool under its wire name with an object schema and strict: false', () => {
    const { registry, dispatcher } = toolsFixture();
    const kit = createOpenAIToolkit({ registry, dispatcher });
    const [chat] = kit.chatTools();
    expect(chat).toEqual({
      type: 'function',
      function: {
        name: 'search__web',
        description: 'Search the web',
        parameters: {
          type: 'object',
          properties: { query: { type: 'string' }, limit: expect.objectContaining({ type: 'integer' }) },
          required: ['query'],
        },
        strict: false,
      },
    });
    expect(kit.responsesTools()[0]).toEqual({
      type: 'function',
      name: 'search__web',
      description: 'Search the web',
      parameters: chat!.function.parameters,
      strict: false,
    });
    expect(kit.wireName('pay.charge')).toBe('pay__charge');
    expect(kit.toolName('pay__charge')).toBe('pay.charge');
  });

  it('gives a tool whose validator cannot describe itself an object schema the provider accepts', async () => {
    const registry = new ToolRegistry().register({
      name: 'odd.tool',
      inputSchema: { '~standard': { version: 1, vendor: 'x', validate: (value: unknown) => ({ value }) } },
      handler: () => 'ok',
    });
    const kit = createOpenAIToolkit({ registry, dispatcher: createDispatcher(defaultStack({ registry })) });
    expect(kit.chatTools()[0]!.function.parameters).toEqual({ type: 'object', properties: {} });
    provider = await startFakeProvider({ chat: scripted([{ text: 'ok' }]) });
    await expect(
      clientFor(provider).chat.completions.create({ model: 'm', messages: [], tools: kit.chatTools() }),
    ).resolves.toBeDefined();
  });

  it('throws a TypeError naming both tools when two map to one wire name', () => {
    const registry = new ToolRegistry()
      .register({ name: 'a.b', inputSchema: z.object({}), handler: () => 1 })
      .register({ name: 'a__b', inputSchema: z.object({}), handler: () => 1 });
    expect(() =>
      createOpenAIToolkit({ registry, dispatcher: createDispatcher(defaultStack({ registry })) }),
    ).toThrow(/"a.b" and "a__b"/);
  });

  it('throws a TypeError naming the tool whose wire name is too long', () => {
    const name = `x.${'y'.repeat(70)}`;
    const registry = new ToolRegistry().register({ name, inputSchema: z.object({}), handler: () => 1 });
    expect(() =>
      createOpenAIToolkit({ registry, dispatcher: createDispatcher(defaultStack({ registry })) }),
    ).toThrow(new RegExp(`Tool "${name}"`));
  });

  it('validates its options with TypeErrors naming the option', () => {
    const { registry, dispatcher } = toolsFixture();
    expect(() => createOpenAIToolkit(undefined as never)).toThrow(TypeError);
    expect(() => createOpenAIToolkit({ registry: {} as never, dispatcher })).toThrow(/registry/);
    expect(() => createOpenAIToolkit({ registry, dispatcher: {} as never })).toThrow(/dispatcher/);
    expect(() => createOpenAIToolkit({ registry, dispatcher, idempotencyScope: '' })).toThrow(
      /idempotencyScope/,
    );
    expect(() => createOpenAIToolkit({ registry, dispatcher, strict: 'yes' as never })).toThrow(/strict/);
    expect(() => createOpenAIToolkit({ registry, dispatcher, keyByCallId: 1 as never })).toThrow(
      /keyByCallId/,
    );
    expect(() => createOpenAIToolkit({ registry, dispatcher, maxMessageLength: 0 })).toThrow(
      /maxMessageLength/,
    );
  });
});

describe('createOpenAIToolkit: Chat Completions loop', () => {
  it('answers every call of a parallel turn once, in call order, whatever its outcome', async () => {
    const { registry, dispatcher, log, events } = toolsFixture();
    const kit = createOpenAIToolkit({ registry, dispatcher, idempotencyScope: 'run-1' });
    provider = await startFakeProvider({
      chat: scripted<ChatBody, ChatReply>([
        {
          toolCalls: [
            { id: 'c_search', name: 'search__web', arguments: { query: 'agents' } },
            { id: 'c_pay', name: 'pay__charge', arguments: { amount: 5 } },
            { id: 'c_badjson', name: 'search__web', arguments: '{"query": "oops' },
            { id: 'c_empty', name: 'time__now', arguments: '' },
            { id: 'c_ghost', name: 'ghost', arguments: {} },
            { id: 'c_custom', type: 'custom', name: 'shell', input: 'ls' },
            { id: 'c_declined', name: 'pay__charge', arguments: { amount: 500 } },
            { id: 'c_crash', name: 'db__crash', arguments: {} },
            { id: 'c_schema', name: 'search__web', arguments: { query: 7 } },
            { id: 'c_flaky', name: 'flaky__fetch', arguments: { url: 'u' } },
          ],
        },
        summary,
      ]),
    });
    const { batches, final } = await chatLoop(clientFor(provider), kit);
    const [batch] = batches;
    expect(batch!.messages.map((m) => m.tool_call_id)).toEqual([
      'c_search',
      'c_pay',
      'c_badjson',
      'c_empty',
      'c_ghost',
      'c_custom',
      'c_declined',
      'c_crash',
      'c_schema',
      'c_flaky',
    ]);
    const text = Object.fromEntries(batch!.messages.map((m) => [m.tool_call_id, m.content as string]));
    expect(text['c_search']).toBe('{"hits":["agents-1"],"limit":null}');
    expect(text['c_pay']).toBe('{"charged":5,"n":1}');
    expect(text['c_badjson']).toMatch(/^error \(schema\): .*"search__web".*not valid JSON/);
    expect(text['c_empty']).toBe('2026-01-01T00:00:00Z');
    expect(text['c_ghost']).toMatch(/^error \(not_found\): .*ghost/);
    expect(text['c_custom']).toMatch(/^error \(not_found\): No tool named "shell"/);
    expect(text['c_declined']).toMatch(
      /^error \(tool_error, after 1 attempt\): The card was declined for 500/,
    );
    expect(text['c_crash']).toMatch(/^error \(internal, after 1 attempt\): database exploded/);
    expect(text['c_crash']).not.toMatch(/secret|\/srv\/db\.js/);
    expect(text['c_schema']).toMatch(/^error \(schema\): .*"search__web"/);
    expect(text['c_schema']).not.toMatch(/search\.web/);
    expect(text['c_flaky']).toBe('fetched u');
    expect(batch!.outcomes.map((o) => (o.ok ? 'ok' : o.kind))).toEqual([
      'ok',
      'ok',
      'schema',
      'ok',
      'not_found',
      'not_found',
      'tool_error',
      'internal',
      'schema',
      'ok',
    ]);
    expect(batch!.outcomes[9]).toMatchObject({ ok: true, attempts: 2 });
    expect(batch!.outcomes[6]).toMatchObject({ attempts: 1 });
    // The side channel is the sanitised envelope: no stack frames in it either.
    const crash = batch!.outcomes[7]!;
    expect(crash.ok ? '' : JSON.stringify(crash.toJSON())).not.toMatch(/\/srv\/db\.js/);
    // Bad JSON went through the stack: the dispatcher's observers saw it under the provider's id.
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'dispatch.failure', callId: 'c_badjson', kind: 'schema' }),
    );
    expect(final).toContain('c_flaky: fetched u');
    expect(log.searches).toEqual([{ query: 'agents', limit: undefined }]);
    expect(provider.requests.map((r) => r.status)).toEqual([200, 200]);
  });

  it('runs a multi-turn loop, passing the provider id as callId and a scoped key', async () => {
    const { registry, dispatcher, log } = toolsFixture();
    const kit = createOpenAIToolkit({ registry, dispatcher, idempotencyScope: 'run-7' });
    provider = await startFakeProvider({
      chat: scripted<ChatBody, ChatReply>([
        {
          toolCalls: [
            { name: 'pay__charge', arguments: { amount: 1 } },
            { name: 'pay__charge', arguments: { amount: 2 } },
          ],
        },
        { toolCalls: [{ name: 'pay__charge', arguments: { amount: 3 } }] },
        { text: 'done' },
      ]),
    });
    const { final, batches } = await chatLoop(clientFor(provider), kit);
    expect(final).toBe('done');
    expect(batches).toHaveLength(2);
    expect(log.charges).toEqual([
      { amount: 1, key: 'run-7:call_0', callId: 'call_0' },
      { amount: 2, key: 'run-7:call_1', callId: 'call_1' },
      { amount: 3, key: 'run-7:call_2', callId: 'call_2' },
    ]);
  });

  it('serves a call run again in the same scope from the idempotency cache', async () => {
    const { registry, dispatcher, log } = toolsFixture();
    const kit = createOpenAIToolkit({ registry, dispatcher, idempotencyScope: 'run-1' });
    const assistant = {
      tool_calls: [
        { id: 'c1', type: 'function' as const, function: { name: 'pay__charge', arguments: '{"amount":5}' } },
      ],
    };
    const first = await kit.runChatToolCalls(assistant);
    const replay = await kit.runChatToolCalls(assistant);
    expect(log.charges).toHaveLength(1);
    expect(replay.messages).toEqual(first.messages);
    expect(replay.outcomes[0]).toMatchObject({ ok: true, attempts: 0 });
  });

  it('keeps per-response call ids apart when each turn has its own scope, and passes no key without one', async () => {
    const { registry, dispatcher, log } = toolsFixture();
    provider = await startFakeProvider({
      chat: () => ({ toolCalls: [{ name: 'pay__charge', arguments: { amount: 5 } }] }),
      callIds: 'per-response',
    });
    const client = clientFor(provider);
    const scoped = createOpenAIToolkit({ registry, dispatcher, idempotencyScope: 'conversation' });
    for (const turn of ['t1', 't2']) {
      const completion = await client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
      });
      const { outcomes } = await scoped.runChatToolCalls(completion.choices[0]!.message, {
        idempotencyScope: `conversation:${turn}`,
      });
      expect(outcomes[0]).toMatchObject({ ok: true, attempts: 1 });
    }
    const unscoped = createOpenAIToolkit({ registry, dispatcher });
    const completion = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
    });
    await unscoped.runChatToolCalls(completion.choices[0]!.message);
    await unscoped.runChatToolCalls(completion.choices[0]!.message);
    expect(log.charges.map((c) => c.key)).toEqual([
      'conversation:t1:call_0',
      'conversation:t2:call_0',
      undefined,
      undefined,
    ]);
    const byId = createOpenAIToolkit({ registry, dispatcher, keyByCallId: true });
    await byId.runChatToolCalls(completion.choices[0]!.message);
    expect(log.charges.at(-1)!.key).toBe('call_0');
  });

  it('refuses the calls past the budget, each still answered', async () => {
    const { registry, dispatcher, log } = toolsFixture();
    const kit = createOpenAIToolkit({ registry, dispatcher });
    const assistant = {
      tool_calls: [1, 2, 3].map((n) => ({
        id: `c${n}`,
        type: 'function' as const,
        function: { name: 'pay__charge', arguments: `{"amount":${n}}` },
      })),
    };
    const { messages, outcomes } = await kit.runChatToolCalls(assistant, { budget: 2 });
    expect(outcomes.map((o) => (o.ok ? 'ok' : o.kind))).toEqual(['ok', 'ok', 'budget_exceeded']);
    expect(messages[2]!.content).toMatch(/^error \(budget_exceeded\).*stop calling tools/);
    expect(log.charges).toHaveLength(2);
    const shared = createBudget(0);
    const refused = await kit.runChatToolCalls(assistant, { budget: shared });
    expect(refused.outcomes.every((o) => !o.ok && o.kind === 'budget_exceeded')).toBe(true);
  });

  it('times a call out on the dispatcher deadline and tells the model by its wire name', async () => {
    const { registry, dispatcher, clock } = toolsFixture();
    const kit = createOpenAIToolkit({ registry, dispatcher });
    const running = kit.runChatToolCalls(
      { tool_calls: [{ id: 'c1', type: 'function', function: { name: 'slow__wait', arguments: '{}' } }] },
      { timeoutMs: 200 },
    );
    await vi.waitFor(() => expect(clock.pending).toBeGreaterThan(0));
    clock.advance(200);
    const { messages, outcomes } = await running;
    expect(outcomes[0]).toMatchObject({ kind: 'timeout' });
    expect(messages[0]!.content).toMatch(/"slow__wait" timed out after 200 ms/);
  });

  it('ends the calls when the caller aborts, each answered as cancelled', async () => {
    const { registry, dispatcher, log, events } = toolsFixture();
    const kit = createOpenAIToolkit({ registry, dispatcher });
    const controller = new AbortController();
    const running = kit.runChatToolCalls(
      {
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'slow__wait', arguments: '{}' } },
          { id: 'c2', type: 'function', function: { name: 'time__now', arguments: '{}' } },
        ],
      },
      { signal: controller.signal },
    );
    await vi.waitFor(() => expect(log.slowGates).toHaveLength(1));
    // The caller aborts once the quick call has ended, while the slow one still runs.
    const succeeded = () =>
      events.filter((event) => event.type === 'dispatch.success').map((event) => event.tool);
    await vi.waitFor(() => expect(succeeded()).toContain('time.now'));
    controller.abort();
    const { messages, outcomes } = await running;
    expect(outcomes.map((o) => (o.ok ? 'ok' : o.kind))).toEqual(['cancelled', 'ok']);
    expect(messages.map((m) => m.tool_call_id)).toEqual(['c1', 'c2']);
    expect(log.slowSignals[0]!.aborted).toBe(true);
  });

  it('cleans host quirks: numeric, empty and missing ids and a null signal never fail a call', async () => {
    const { registry, dispatcher, log } = toolsFixture();
    const kit = createOpenAIToolkit({ registry, dispatcher, idempotencyScope: 'run' });
    const { messages, outcomes } = await kit.runChatToolCalls(
      {
        tool_calls: [
          { id: 42 as never, type: 'function', function: { name: 'pay__charge', arguments: '{"amount":1}' } },
          { id: '', type: 'function', function: { name: 'pay__charge', arguments: '{"amount":2}' } },
          { type: 'function', function: { name: 'pay__charge', arguments: '{"amount":3}' } } as never,
        ],
      },
      { signal: null },
    );
    expect(outcomes.every((o) => o.ok)).toBe(true);
    expect(messages[0]!.tool_call_id).toBe('42');
    expect(messages[1]!.tool_call_id).not.toBe('');
    expect(messages[2]!.tool_call_id).not.toBe(messages[1]!.tool_call_id);
    // A generated id is no key: there is nothing a retry of the same call could repeat.
    expect(log.charges.map((c) => c.key)).toEqual(['run:42', undefined, undefined]);
  });

  it('answers a call of a type it does not know, in its place', async () => {
    const { registry, dispatcher } = toolsFixture();
    const kit = createOpenAIToolkit({ registry, dispatcher });
    const { messages, outcomes } = await kit.runChatToolCalls({
      tool_calls: [
        { id: 'm1', type: 'mystery' } as never,
        { id: 'm2', type: 'function', function: { name: 'time__now', arguments: '{}' } },
      ],
    });
    expect(messages.map((m) => m.tool_call_id)).toEqual(['m1', 'm2']);
    // Not a function call: no tool this toolkit offered, answered by the stack.
    expect(messages[0]!.content).toMatch(/^error \(not_found\): No tool named "mystery"/);
    expect(outcomes[1]!.ok).toBe(true);
  });

  it('validates run options', async () => {
    const { registry, dispatcher } = toolsFixture();
    const kit = createOpenAIToolkit({ registry, dispatcher });
    await expect(kit.runChatToolCalls(null as never)).rejects.toThrow(TypeError);
    await expect(kit.runChatToolCalls({ tool_calls: [] }, { signal: {} as never })).rejects.toThrow(/signal/);
    await expect(kit.runChatToolCalls({ tool_calls: [] }, { timeoutMs: -1 })).rejects.toThrow(/timeoutMs/);
    await expect(kit.runChatToolCalls({ tool_calls: [] }, { idempotencyScope: '' })).rejects.toThrow(
      /idempotencyScope/,
    );
    await expect(kit.runChatToolCalls({})).resolves.toEqual({ messages: [], outcomes: [] });
  });
});

describe('createOpenAIToolkit: Responses loop', () => {
  it('answers function and custom calls in order and continues with previous_response_id', async () => {
    const { registry, dispatcher } = toolsFixture();
    const kit = createOpenAIToolkit({ registry, dispatcher, idempotencyScope: 'run' });
    provider = await startFakeProvider({
      responses: scripted([
        {
          reasoning: true,
          calls: [
            { call_id: 'r1', name: 'search__web', arguments: { query: 'q' } },
            { call_id: 'r2', type: 'custom_tool_call', name: 'patch', input: 'diff' },
            { call_id: 'r3', name: 'search__web', arguments: '{' },
          ],
        },
        (turn) => ({ text: turn.toolResults.map((r) => `${r.id}=${r.content.slice(0, 20)}`).join(' | ') }),
      ]),
    });
    const client = clientFor(provider);
    const first = await client.responses.create({ model: 'm', input: 'go', tools: kit.responsesTools() });
    const { items, outcomes } = await kit.runResponsesCalls(first.output);
    expect(items).toEqual([
      { type: 'function_call_output', call_id: 'r1', output: '{"hits":["q-1"],"limit":null}' },
      {
        type: 'custom_tool_call_output',
        call_id: 'r2',
        output: expect.stringMatching(/^error \(not_found\)/),
      },
      { type: 'function_call_output', call_id: 'r3', output: expect.stringMatching(/^error \(schema\)/) },
    ]);
    expect(outcomes.map((o) => o.ok)).toEqual([true, false, false]);
    const second = await client.responses.create({
      model: 'm',
      previous_response_id: first.id,
      input: items,
    });
    expect(second.output_text).toMatch(/^r1=.* \| r2=error \(not_found\).* \| r3=error \(schema\)/);
  });

  it('sends the whole history back without previous_response_id', async () => {
    const { registry, dispatcher } = toolsFixture();
    const kit = createOpenAIToolkit({ registry, dispatcher });
    provider = await startFakeProvider({
      responses: scripted([{ calls: [{ name: 'time__now' }, { name: 'time__now' }] }, { text: 'ok' }]),
    });
    const client = clientFor(provider);
    const input: ResponseInputItem[] = [{ role: 'user', content: 'go' }];
    const first = await client.responses.create({
      model: 'm',
      input,
      tools: kit.responsesTools(),
      store: false,
    });
    const { items } = await kit.runResponsesCalls(first.output);
    input.push(...(first.output as ResponseInputItem[]), ...items);
    const second = await client.responses.create({
      model: 'm',
      input,
      tools: kit.responsesTools(),
      store: false,
    });
    expect(second.output_text).toBe('ok');
  });

  it('maps a namespaced call back to the dotted tool', async () => {
    const { registry, dispatcher, log } = toolsFixture();
    const kit = createOpenAIToolkit({ registry, dispatcher });
    const { outcomes } = await kit.runResponsesCalls([
      { type: 'function_call', call_id: 'n1', namespace: 'search', name: 'web', arguments: '{"query":"ns"}' },
    ]);
    expect(outcomes[0]!.ok).toBe(true);
    expect(log.searches).toEqual([{ query: 'ns', limit: undefined }]);
  });
});

describe('createOpenAIToolkit: strict mode', () => {
  it('rewrites schemas to the strict subset the provider checks, and drops the nulls the model sends for optional fields', async () => {
    const { registry, dispatcher, log } = toolsFixture();
    const kit = createOpenAIToolkit({ registry, dispatcher, strict: true });
    const [search] = kit.chatTools();
    expect(search!.function).toMatchObject({
      strict: true,
      parameters: {
        type: 'object',
        additionalProperties: false,
        required: ['query', 'limit'],
        properties: { query: { type: 'string' }, limit: { type: ['integer', 'null'] } },
      },
    });
    provider = await startFakeProvider({
      chat: scripted([
        { toolCalls: [{ name: 'search__web', arguments: { query: 's', limit: null } }] },
        { text: 'ok' },
      ]),
      responses: scripted([{ text: 'ok' }]),
    });
    const client = clientFor(provider);
    const { final, batches } = await chatLoop(client, kit);
    expect(final).toBe('ok');
    expect(batches[0]!.outcomes[0]!.ok).toBe(true);
    expect(log.searches).toEqual([{ query: 's', limit: undefined }]);
    await expect(
      client.responses.create({ model: 'm', input: 'x', tools: kit.responsesTools() }),
    ).resolves.toBeDefined();
  });

  it('keeps a field that was nullable already, and strips nested optional nulls', async () => {
    const registry = new ToolRegistry().register({
      name: 'user.update',
      inputSchema: z.object({
        name: z.string().nullable().optional(),
        address: z.object({ city: z.string(), zip: z.string().optional() }),
        tags: z.array(z.object({ label: z.string(), color: z.enum(['red', 'blue']).optional() })),
      }),
      handler: (args) => args,
    });
    const dispatcher = createDispatcher(defaultStack({ registry }));
    const kit = createOpenAIToolkit({ registry, dispatcher, strict: true });
    const schema = kit.chatTools()[0]!.function.parameters as {
      properties: { tags: { items: { properties: { color: unknown } } } };
    };
    expect(schema.properties.tags.items.properties.color).toEqual({
      type: ['string', 'null'],
      enum: ['red', 'blue', null],
    });
    const { outcomes } = await kit.runChatToolCalls({
      tool_calls: [
        {
          id: 'u1',
          type: 'function',
          function: {
            name: 'user__update',
            arguments: JSON.stringify({
              name: null,
              address: { city: 'B', zip: null },
              tags: [{ label: 'x', color: null }],
            }),
          },
        },
      ],
    });
    expect(outcomes[0]).toMatchObject({
      ok: true,
      result: { name: null, address: { city: 'B' }, tags: [{ label: 'x' }] },
    });
  });

  it('throws a TypeError naming the tool when its schema cannot be strict', () => {
    const registry = new ToolRegistry().register({
      name: 'kv.put',
      inputSchema: z.object({ entries: z.record(z.string(), z.string()) }),
      handler: () => 1,
    });
    const dispatcher = createDispatcher(defaultStack({ registry }));
    expect(() => createOpenAIToolkit({ registry, dispatcher, strict: true })).toThrow(
      /strict: true cannot describe tool "kv__put"/,
    );
    expect(() => createOpenAIToolkit({ registry, dispatcher })).not.toThrow();
  });
});
