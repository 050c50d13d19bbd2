// createOpenAIToolkit and the rules every host keeps: only offered tools run, missing host values
// never fail a call, and every result is answered, rendered field by field or as `internal`.

import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { createOpenAIToolkit } from '../../../integrations/openai/index.js';
import {
  scripted,
  startFakeProvider,
  type ChatBody,
  type ChatReply,
  type FakeProvider,
} from '../../../examples/fake-provider/index.js';
import { oddResultsFixture } from './odd-results.js';

let provider: FakeProvider | undefined;
afterEach(async () => {
  await provider?.close();
  provider = undefined;
});

const clientFor = (p: FakeProvider) =>
  new OpenAI({ baseURL: p.openaiBaseURL, apiKey: 'test', maxRetries: 0 });

describe('createOpenAIToolkit: host rules', () => {
  it('runs only the tools it offered: not a later tool, not a dotted registry name', async () => {
    const f = oddResultsFixture();
    const kit = createOpenAIToolkit({ registry: f.registry, dispatcher: f.dispatcher });
    f.registerLater();
    provider = await startFakeProvider({
      chat: scripted<ChatBody, ChatReply>([
        {
          toolCalls: [
            { id: 'c1', name: 'admin_wipe', arguments: {} },
            { id: 'c2', name: 'plain.get', arguments: {} },
            { id: 'c3', name: 'plain__get', arguments: {} },
          ],
        },
      ]),
      responses: scripted([{ calls: [{ call_id: 'r1', name: 'admin_wipe', arguments: {} }] }]),
    });
    const client = clientFor(provider);
    const completion = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'go' }],
      tools: kit.chatTools(),
    });
    const chat = await kit.runChatToolCalls(completion.choices[0]!.message);
    expect(chat.messages.map((m) => m.content)).toEqual([
      'error (not_found): No tool named "admin_wipe" Hint: Use one of the listed tools.',
      'error (not_found): No tool named "plain.get" Hint: Use one of the listed tools.',
      '{"plain":true}',
    ]);
    const response = await client.responses.create({ model: 'm', input: 'go', tools: kit.responsesTools() });
    const responses = await kit.runResponsesCalls(response.output);
    expect(responses.outcomes[0]).toMatchObject({ kind: 'not_found' });
    expect(f.ran).toEqual(['plain.get']);
  });

  it('answers calls without options, ids or signals', async () => {
    const f = oddResultsFixture();
    const kit = createOpenAIToolkit({
      registry: f.registry,
      dispatcher: f.dispatcher,
      idempotencyScope: 'run',
    });
    const { items } = await kit.runResponsesCalls([
      { type: 'function_call', name: 'plain__get', arguments: '{}' } as never,
      { type: 'function_call', call_id: '', name: 'plain__get' } as never,
    ]);
    expect(items.map((item) => item.output)).toEqual(['{"plain":true}', '{"plain":true}']);
    expect(items[0]!.call_id).toMatch(/^call_td-/);
    expect(items[1]!.call_id).not.toBe(items[0]!.call_id);
    const chat = await kit.runChatToolCalls({
      tool_calls: [{ type: 'function', function: { name: 'plain__get' } } as never],
    });
    expect(chat.messages[0]!.content).toBe('{"plain":true}');
  });

  it('renders a throwing field as a marker, cuts a 50 000-level result, and fails an unreadable one as internal', async () => {
    const f = oddResultsFixture();
    const kit = createOpenAIToolkit({ registry: f.registry, dispatcher: f.dispatcher });
    const call = (id: string, name: string) => ({
      id,
      type: 'function' as const,
      function: { name, arguments: '{}' },
    });
    const { messages, outcomes } = await kit.runChatToolCalls({
      tool_calls: [call('g', 'getter__get'), call('d', 'deep__get'), call('u', 'hidden__get')],
    });
    expect(messages[0]!.content).toBe(f.getterText);
    expect(messages[1]!.content).toMatch(f.deepText);
    expect(messages[2]!.content).toMatch(f.hiddenText('hidden__get'));
    expect(outcomes.map((o) => (o.ok ? 'ok' : o.kind))).toEqual(['ok', 'ok', 'internal']);
  });
});
