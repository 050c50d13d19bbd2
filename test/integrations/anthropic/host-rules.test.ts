// createAnthropicToolkit and the rules every host keeps: only offered tools run, missing host
// values never fail a call, and every result is answered, rendered field by field or as `internal`.

import Anthropic from '@anthropic-ai/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { createAnthropicToolkit, RunnableToolFailed } from '../../../integrations/anthropic/index.js';
import {
  scripted,
  startFakeProvider,
  type FakeProvider,
  type MessagesBody,
  type MessagesReply,
} from '../../../examples/fake-provider/index.js';
import { oddResultsFixture } from '../openai/odd-results.js';

let provider: FakeProvider | undefined;
afterEach(async () => {
  await provider?.close();
  provider = undefined;
});

const use = (id: string, name: string) => ({ type: 'tool_use', id, name, input: {} });

describe('createAnthropicToolkit: host rules', () => {
  it('runs only the tools it offered: not a later tool, not a dotted registry name', async () => {
    const f = oddResultsFixture();
    const claude = createAnthropicToolkit({ registry: f.registry, dispatcher: f.dispatcher });
    f.registerLater();
    provider = await startFakeProvider({
      messages: scripted<MessagesBody, MessagesReply>([
        {
          toolUses: [
            { id: 't1', name: 'admin_wipe', input: {} },
            { id: 't2', name: 'plain.get', input: {} },
            { id: 't3', name: 'plain__get', input: {} },
          ],
        },
      ]),
    });
    const client = new Anthropic({ baseURL: provider.anthropicBaseURL, apiKey: 'test', maxRetries: 0 });
    const response = await client.messages.create({
      model: 'm',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'go' }],
      tools: claude.tools(),
    });
    const { message } = await claude.runToolUses(response);
    expect(message.content.map((block) => [block.content, block.is_error === true])).toEqual([
      ['error (not_found): No tool named "admin_wipe" Hint: Use one of the listed tools.', true],
      ['error (not_found): No tool named "plain.get" Hint: Use one of the listed tools.', true],
      ['{"plain":true}', false],
    ]);
    expect(f.ran).toEqual(['plain.get']);
  });

  it('answers calls without options, ids or signals, in runToolUses and in a runnable tool', async () => {
    const f = oddResultsFixture();
    const claude = createAnthropicToolkit({ registry: f.registry, dispatcher: f.dispatcher });
    const { message } = await claude.runToolUses({ content: [{ type: 'tool_use', name: 'plain__get' }] });
    expect(message.content[0]).toMatchObject({
      content: '{"plain":true}',
      tool_use_id: expect.stringMatching(/^toolu_td-/),
    });
    const plain = claude.runnableTools().find((tool) => tool.name === 'plain__get')!;
    await expect(plain.run({})).resolves.toBe('{"plain":true}');
    await expect(plain.run({}, { toolUse: undefined, signal: null } as never)).resolves.toBe(
      '{"plain":true}',
    );
  });

  it('renders a throwing field as a marker, cuts a 50 000-level result, and fails an unreadable one as internal', async () => {
    const f = oddResultsFixture();
    const claude = createAnthropicToolkit({ registry: f.registry, dispatcher: f.dispatcher });
    const { message } = await claude.runToolUses({
      content: [use('g', 'getter__get'), use('d', 'deep__get'), use('u', 'hidden__get')],
    });
    const [getter, deep, hidden] = message.content;
    expect(getter).toMatchObject({ content: f.getterText });
    expect(getter!.is_error).toBeUndefined();
    expect(deep!.content).toMatch(f.deepText);
    expect(hidden).toMatchObject({
      is_error: true,
      content: expect.stringMatching(f.hiddenText('hidden__get')),
    });

    const runnable = claude.runnableTools().find((tool) => tool.name === 'hidden__get')!;
    const thrown = await Promise.resolve(runnable.run({})).catch((error: unknown) => error);
    expect(thrown).toBeInstanceOf(RunnableToolFailed);
    expect((thrown as RunnableToolFailed).outcome.kind).toBe('internal');
  });
});
