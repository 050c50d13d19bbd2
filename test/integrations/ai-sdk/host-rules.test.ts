// toAiSdkTools and the rules every host keeps: only offered tools run, missing host values never
// fail a call, and every result is answered, rendered field by field or as `internal`.

import { generateText, stepCountIs } from 'ai';
import { describe, expect, it } from 'vitest';
import { ToolCallFailed, toAiSdkTools } from '../../../integrations/ai-sdk/index.js';
import { oddResultsFixture } from '../openai/odd-results.js';
import { scriptedModel } from './scripted-model.js';

const call = (id: string, name: string) => ({ id, name, input: '{}' });

describe('toAiSdkTools: host rules', () => {
  it('runs only the tools it offered: the SDK refuses a later tool and a dotted registry name', async () => {
    const f = oddResultsFixture();
    const tools = toAiSdkTools({ registry: f.registry, dispatcher: f.dispatcher });
    f.registerLater();
    const { model, resultsSentAt } = scriptedModel([
      [call('c1', 'admin_wipe'), call('c2', 'plain.get'), call('c3', 'plain__get')],
      'done',
    ]);
    await generateText({ model, tools, stopWhen: stepCountIs(3), prompt: 'go' });
    const sent = resultsSentAt(2);
    expect(sent[0]?.[1]).toMatchObject({
      type: 'error-text',
      value: expect.stringContaining("'admin_wipe'"),
    });
    expect(sent[1]?.[1]).toMatchObject({ type: 'error-text', value: expect.stringContaining("'plain.get'") });
    expect(sent[2]?.[1]).toEqual({ type: 'text', value: '{"plain":true}' });
    expect(Object.keys(tools)).not.toContain('admin_wipe');
    expect(f.ran).toEqual(['plain.get']);
  });

  it('answers an execute call without options, or with an empty id and no signal', async () => {
    const f = oddResultsFixture();
    const execute = toAiSdkTools({ registry: f.registry, dispatcher: f.dispatcher })['plain__get']!.execute!;
    await expect(execute({}, undefined as never)).resolves.toEqual({ plain: true });
    await expect(execute({}, { toolCallId: '', messages: [] })).resolves.toEqual({ plain: true });
    await expect(execute({}, {} as never)).resolves.toEqual({ plain: true });
  });

  it('renders a throwing field as a marker, cuts a 50 000-level result, and fails an unreadable one as internal', async () => {
    const f = oddResultsFixture();
    const { model, resultsSentAt } = scriptedModel([
      [call('g', 'getter__get'), call('d', 'deep__get'), call('u', 'hidden__get')],
      'done',
    ]);
    const result = await generateText({
      model,
      tools: toAiSdkTools({ registry: f.registry, dispatcher: f.dispatcher }),
      stopWhen: stepCountIs(3),
      prompt: 'go',
    });
    const [getter, deep, hidden] = resultsSentAt(2);
    expect(getter?.[1]).toEqual({ type: 'text', value: f.getterText });
    expect(deep?.[1]).toMatchObject({ type: 'text', value: expect.stringMatching(f.deepText) });
    expect(hidden?.[1]).toMatchObject({
      type: 'error-text',
      value: expect.stringMatching(f.hiddenText('hidden__get')),
    });
    // The application reads outputs that survive JSON.stringify: the getter's and the deep one's
    // JSON-safe copies, and the envelope of the one that could not be read.
    const outputs = result.steps[0]!.toolResults.map((part) => part.output);
    expect(outputs[0]).toEqual({ id: 7, secret: '[Unreadable: vault sealed]', tags: ['a'] });
    expect(() => JSON.stringify(outputs)).not.toThrow();
    const failed = result.steps[0]!.content.find((part) => part.type === 'tool-error');
    expect(
      failed?.type === 'tool-error' && failed.error instanceof ToolCallFailed && failed.error.outcome.kind,
    ).toBe('internal');
  });
});
