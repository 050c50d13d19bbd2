// The bundled fake provider speaks Chat Completions and Responses to the real openai client and
// enforces the rules a toolkit can break.

import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { gate } from '../../helpers/gate.js';
import { scripted, startFakeProvider, type FakeProvider } from '../../../examples/fake-provider/index.js';

let provider: FakeProvider | undefined;
afterEach(async () => {
  await provider?.close();
  provider = undefined;
});

function clientFor(p: FakeProvider): OpenAI {
  return new OpenAI({ baseURL: p.openaiBaseURL, apiKey: 'test', maxRetries: 0 });
}

const searchTool = {
  type: 'function' as const,
  function: {
    name: 'search__web',
    description: 'Search',
    parameters: { type: 'object', properties: { q: { type: 'string' } } },
  },
};

describe('fake provider: Chat Completions', () => {
  it('answers with scripted tool calls and then text', async () => {
    provider = await startFakeProvider({
      chat: scripted([
        {
          toolCalls: [
            { name: 'search__web', arguments: { q: 'x' } },
            { name: 'search__web', arguments: '{"q"' },
          ],
        },
        { text: 'done' },
      ]),
    });
    const client = clientFor(provider);
    const first = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      tools: [searchTool],
    });
    const message = first.choices[0]!.message;
    expect(first.choices[0]!.finish_reason).toBe('tool_calls');
    expect(message.tool_calls).toEqual([
      { id: 'call_0', type: 'function', function: { name: 'search__web', arguments: '{"q":"x"}' } },
      { id: 'call_1', type: 'function', function: { name: 'search__web', arguments: '{"q"' } },
    ]);
    const second = await client.chat.completions.create({
      model: 'm',
      tools: [searchTool],
      messages: [
        { role: 'user', content: 'hi' },
        message,
        { role: 'tool', tool_call_id: 'call_0', content: 'a' },
        { role: 'tool', tool_call_id: 'call_1', content: 'b' },
      ],
    });
    expect(second.choices[0]!.message.content).toBe('done');
  });

  it('rejects a dotted tool name with the real 400', async () => {
    provider = await startFakeProvider({ chat: scripted([{ text: 'x' }]) });
    const bad = { ...searchTool, function: { ...searchTool.function, name: 'search.web' } };
    await expect(
      clientFor(provider).chat.completions.create({ model: 'm', messages: [], tools: [bad] }),
    ).rejects.toThrow(/400 Invalid 'tools\[0\].function.name': string does not match pattern/);
  });

  it('rejects a missing, misordered or non-object answer', async () => {
    provider = await startFakeProvider({ chat: () => ({ text: 'x' }) });
    const client = clientFor(provider);
    const assistant = {
      role: 'assistant' as const,
      content: null,
      tool_calls: [
        { id: 'a', type: 'function' as const, function: { name: 'f', arguments: '{}' } },
        { id: 'b', type: 'function' as const, function: { name: 'f', arguments: '{}' } },
      ],
    };
    await expect(
      client.chat.completions.create({
        model: 'm',
        messages: [assistant, { role: 'tool', tool_call_id: 'a', content: '1' }],
      }),
    ).rejects.toThrow(/The following tool_call_ids did not have response messages: b/);
    await expect(
      client.chat.completions.create({
        model: 'm',
        messages: [
          assistant,
          { role: 'tool', tool_call_id: 'b', content: '1' },
          { role: 'tool', tool_call_id: 'a', content: '1' },
        ],
      }),
    ).rejects.toThrow(/in call order/);
    await expect(
      client.chat.completions.create({
        model: 'm',
        messages: [],
        tools: [{ type: 'function', function: { name: 'f', parameters: { oneOf: [] } } }],
      }),
    ).rejects.toThrow(/schema must be a JSON Schema of 'type: "object"'/);
    await expect(
      client.chat.completions.create({
        model: 'm',
        messages: [],
        tools: [
          {
            type: 'function',
            function: { name: 'f', strict: true, parameters: { type: 'object', properties: { a: {} } } },
          },
        ],
      }),
    ).rejects.toThrow(/'additionalProperties' is required to be supplied and to be false/);
  });

  it('tells a waiting model when the client aborts the request', async () => {
    const left = gate<boolean>();
    provider = await startFakeProvider({
      chat: (turn) =>
        new Promise((resolve) => {
          turn.signal.addEventListener('abort', () => {
            left.open(true);
            resolve({ text: 'too late' });
          });
        }),
    });
    const controller = new AbortController();
    const request = clientFor(provider).chat.completions.create(
      { model: 'm', messages: [] },
      { signal: controller.signal },
    );
    while (provider.requests.length === 0) await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    await expect(request).rejects.toThrow(/aborted/i);
    await expect(left.promise).resolves.toBe(true);
  });

  it('numbers call ids per response when asked', async () => {
    provider = await startFakeProvider({
      chat: () => ({ toolCalls: [{ name: 'f' }] }),
      callIds: 'per-response',
    });
    const client = clientFor(provider);
    const a = await client.chat.completions.create({ model: 'm', messages: [] });
    const b = await client.chat.completions.create({ model: 'm', messages: [] });
    expect(a.choices[0]!.message.tool_calls![0]!.id).toBe('call_0');
    expect(b.choices[0]!.message.tool_calls![0]!.id).toBe('call_0');
  });
});

describe('fake provider: Responses', () => {
  it('answers with reasoning and calls, and continues from previous_response_id', async () => {
    provider = await startFakeProvider({
      responses: scripted([
        { reasoning: true, calls: [{ name: 'search__web', arguments: { q: 'x' } }] },
        (turn) => ({ text: `got ${turn.toolResults.map((r) => r.content).join()}` }),
      ]),
    });
    const client = clientFor(provider);
    const tools = [
      {
        type: 'function' as const,
        name: 'search__web',
        parameters: { type: 'object', properties: {} },
        strict: false,
      },
    ];
    const first = await client.responses.create({ model: 'm', input: 'hi', tools });
    expect(first.output.map((item) => item.type)).toEqual(['reasoning', 'function_call']);
    const call = first.output[1] as { call_id: string };
    const second = await client.responses.create({
      model: 'm',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'r1' }],
    });
    expect(second.output_text).toBe('got r1');
  });

  it('rejects an unanswered call and strict-by-default tools that are not strict', async () => {
    provider = await startFakeProvider({ responses: () => ({ text: 'x' }) });
    const client = clientFor(provider);
    await expect(
      client.responses.create({
        model: 'm',
        input: [{ type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' }],
      }),
    ).rejects.toThrow(/No tool output found for function call c1/);
    await expect(
      client.responses.create({
        model: 'm',
        input: 'x',
        tools: [
          {
            type: 'function',
            name: 'f',
            parameters: { type: 'object', properties: { a: {} } },
            strict: null,
          },
        ],
      }),
    ).rejects.toThrow(/additionalProperties/);
  });
});
