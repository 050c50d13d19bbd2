// The bundled fake provider speaks Anthropic Messages, and the message-threads beta the 1.14 tool
// runner uses, to the real @anthropic-ai/sdk client.

import Anthropic from '@anthropic-ai/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import {
  messageThreadsBeta,
  scripted,
  startFakeProvider,
  type FakeProvider,
} from '../../../examples/fake-provider/index.js';

let provider: FakeProvider | undefined;
afterEach(async () => {
  await provider?.close();
  provider = undefined;
});

function clientFor(p: FakeProvider): Anthropic {
  return new Anthropic({ baseURL: p.anthropicBaseURL, apiKey: 'test', maxRetries: 0 });
}

const tool = { name: 'search__web', input_schema: { type: 'object' as const, properties: {} } };

describe('fake provider: Messages', () => {
  it('answers with tool uses, and takes tool results that come first and in order', async () => {
    provider = await startFakeProvider({
      messages: scripted([
        {
          text: 'looking',
          toolUses: [
            { name: 'search__web', input: { q: 'a' } },
            { name: 'search__web', input: { q: 'b' } },
          ],
        },
        (turn) => ({
          text: turn.toolResults.map((r) => `${r.id}=${r.content}${r.isError ? '!' : ''}`).join(' '),
        }),
      ]),
    });
    const client = clientFor(provider);
    const first = await client.messages.create({
      model: 'm',
      max_tokens: 10,
      tools: [tool],
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(first.stop_reason).toBe('tool_use');
    const ids = first.content.filter((b) => b.type === 'tool_use').map((b) => b.id);
    expect(ids).toEqual(['toolu_0', 'toolu_1']);
    const second = await client.messages.create({
      model: 'm',
      max_tokens: 10,
      tools: [tool],
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_0', content: 'A' },
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'B', is_error: true },
          ],
        },
      ],
    });
    expect(second.content).toEqual([{ type: 'text', text: 'toolu_0=A toolu_1=B!', citations: null }]);
  });

  it('rejects a dotted name, a text block before the results and a result out of order', async () => {
    provider = await startFakeProvider({ messages: () => ({ text: 'x' }) });
    const client = clientFor(provider);
    await expect(
      client.messages.create({
        model: 'm',
        max_tokens: 1,
        tools: [{ ...tool, name: 'search.web' }],
        messages: [{ role: 'user', content: 'x' }],
      }),
    ).rejects.toThrow(/tools.0.custom.name: String should match pattern '\^\[a-zA-Z0-9_-\]\{1,128\}\$'/);
    const assistant = {
      role: 'assistant' as const,
      content: [
        { type: 'tool_use' as const, id: 't1', name: 'f', input: {} },
        { type: 'tool_use' as const, id: 't2', name: 'f', input: {} },
      ],
    };
    await expect(
      client.messages.create({
        model: 'm',
        max_tokens: 1,
        messages: [
          assistant,
          {
            role: 'user',
            content: [
              { type: 'text', text: 'here' },
              { type: 'tool_result', tool_use_id: 't1', content: '1' },
              { type: 'tool_result', tool_use_id: 't2', content: '2' },
            ],
          },
        ],
      }),
    ).rejects.toThrow(/`tool_use` ids were found without `tool_result` blocks immediately after: t1, t2/);
    await expect(
      client.messages.create({
        model: 'm',
        max_tokens: 1,
        messages: [
          assistant,
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 't2', content: '2' },
              { type: 'tool_result', tool_use_id: 't1', content: '1' },
            ],
          },
        ],
      }),
    ).rejects.toThrow(/in tool_use order/);
  });

  it('emulates the message threads the tool runner creates and continues', async () => {
    provider = await startFakeProvider({
      messages: scripted([
        { toolUses: [{ name: 'echo', input: { v: 1 } }] },
        (turn) => ({
          text: `final ${turn.toolResults[0]?.content} of ${turn.body.messages.length} messages`,
        }),
      ]),
    });
    const runner = clientFor(provider).beta.messages.toolRunner({
      model: 'm',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'go' }],
      tools: [
        {
          name: 'echo',
          input_schema: { type: 'object', properties: {} },
          parse: (input: unknown) => input,
          run: (input: unknown) => JSON.stringify(input),
        },
      ],
    });
    const final = await runner.runUntilDone();
    expect(final.content).toEqual([{ type: 'text', text: 'final {"v":1} of 3 messages', citations: null }]);
    const [create, next] = provider.requests;
    expect(create!.body['thread']).toEqual({ type: 'create' });
    expect(String(create!.headers['anthropic-beta'])).toContain(messageThreadsBeta);
    expect(next!.body['thread']).toEqual({ type: 'continue', previous_message_id: 'msg_0' });
    expect((next!.body['messages'] as unknown[]).length).toBe(1);
    expect(next!.body['tools']).toBeUndefined();
  });

  it('refuses a thread without the beta and a continue of an unknown or already continued reply', async () => {
    provider = await startFakeProvider({ messages: () => ({ text: 'x' }) });
    const client = clientFor(provider);
    const create = (extra: object) =>
      client.beta.messages.create({
        model: 'm',
        max_tokens: 1,
        messages: [{ role: 'user', content: 'x' }],
        ...extra,
      } as never);
    await expect(create({ thread: { type: 'create' } })).rejects.toThrow(/requires the beta header/);
    const first = await create({ thread: { type: 'create' }, betas: [messageThreadsBeta] });
    const id = (first as { id: string }).id;
    await create({ thread: { type: 'continue', previous_message_id: id }, betas: [messageThreadsBeta] });
    await expect(
      create({ thread: { type: 'continue', previous_message_id: id }, betas: [messageThreadsBeta] }),
    ).rejects.toThrow(/already continued/);
    await expect(
      create({ thread: { type: 'continue', previous_message_id: 'msg_nope' }, betas: [messageThreadsBeta] }),
    ).rejects.toThrow(/no thread holds/);
  });
});
