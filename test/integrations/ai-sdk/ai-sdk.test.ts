// toAiSdkTools driven by the real AI SDK: generateText and streamText with MockLanguageModelV3.

import {
  generateText,
  stepCountIs,
  streamText,
  type StopCondition,
  type ToolSet,
  type TypedToolError,
} from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolCallFailed, toAiSdkTools } from '../../../integrations/ai-sdk/index.js';
import {
  createBudget,
  createDispatcher,
  defaultStack,
  isDispatchError,
  ToolRegistry,
} from '../../../index.js';
import { detail, fixture } from './fixture.js';
import { scriptedModel } from './scripted-model.js';

const call = (id: string, name: string, args: unknown = {}) => ({
  id,
  name,
  input: typeof args === 'string' ? args : JSON.stringify(args),
});

describe('toAiSdkTools', () => {
  it('runs a multi-turn loop whose parallel calls reach the model in call order', async () => {
    const f = fixture();
    const { model, calls, resultsSentAt } = scriptedModel([
      [
        call('c1', 'search__web', { query: 'agents' }),
        call('c2', 'pay__charge', { amount: 5 }),
        call('c3', 'search__web', { query: 'mcp' }),
      ],
      [call('c4', 'pay__charge', { amount: 7 })],
      'all done',
    ]);
    // c1 answers only after c3 has started: the three calls of a step run together.
    const c1 = f.hold('c1');
    void f.whenStarted('c3').then(() => c1.open());

    const result = await generateText({
      model,
      tools: toAiSdkTools({ registry: f.registry, dispatcher: f.dispatcher, idempotencyScope: 'run-1' }),
      stopWhen: stepCountIs(5),
      prompt: 'research, then pay',
    });

    expect(result.text).toBe('all done');
    expect(calls[0]?.tools?.map((tool) => tool.name)).toEqual([
      'search__web',
      'pay__charge',
      'flaky__fetch',
      'slow__job',
    ]);
    expect(resultsSentAt(2)).toEqual([
      ['c1', { type: 'text', value: '{"hits":["agents-1","agents-2"]}' }],
      ['c2', { type: 'text', value: 'charged 5' }],
      ['c3', { type: 'text', value: '{"hits":["mcp-1","mcp-2"]}' }],
    ]);
    expect(resultsSentAt(3)).toEqual([['c4', { type: 'text', value: 'charged 7' }]]);
    expect(f.contexts.map((ctx) => [ctx.callId, ctx.idempotencyKey])).toEqual([
      ['c1', 'run-1:c1'],
      ['c2', 'run-1:c2'],
      ['c3', 'run-1:c3'],
      ['c4', 'run-1:c4'],
    ]);
    // The application keeps the raw result.
    expect(result.steps[0]?.toolResults.map((part) => part.output)).toEqual([
      { hits: ['agents-1', 'agents-2'] },
      'charged 5',
      { hits: ['mcp-1', 'mcp-2'] },
    ]);
  });

  it('answers every call of a step once, in call order, whoever answers it', async () => {
    const f = fixture();
    const { model, resultsSentAt } = scriptedModel([
      [
        call('c1', 'search__web', { query: 'ok' }),
        call('c2', 'ghost__tool', {}),
        call('c3', 'search__web', '{"query": "unterminated'),
        call('c4', 'search__web', { query: 7 }),
        call('c5', 'flaky__fetch', ''),
      ],
      'done',
    ]);
    const tools = toAiSdkTools({ registry: f.registry, dispatcher: f.dispatcher, idempotencyScope: 'run-1' });
    const retried = f.nextEvent('dispatch.retry').then(() => f.clock.advance(150));

    await generateText({ model, tools, stopWhen: stepCountIs(3), prompt: 'go' });
    await retried;

    const sent = resultsSentAt(2);
    expect(sent.map(([id]) => id)).toEqual(['c1', 'c2', 'c3', 'c4', 'c5']);
    expect(sent.map(([, output]) => output.type)).toEqual([
      'text',
      'error-text',
      'error-text',
      'error-text',
      'text',
    ]);
    // The SDK answers an unknown tool and bad JSON itself; neither reaches the dispatcher. (AI SDK 7
    // prefixes its own texts with the error's name; ours never get one, see ToolCallFailed.)
    expect(sent[1]?.[1].value).toMatch(
      /^(AI_NoSuchToolError: )?Model tried to call unavailable tool 'ghost__tool'/,
    );
    expect(sent[2]?.[1].value).toMatch(
      /^(AI_InvalidToolInputError: )?Invalid input for tool search__web: (AI_JSONParseError: )?JSON parsing failed/,
    );
    // Ours: the schema layer ran (no validate on the SDK side) and quotes the name the model knows.
    expect(sent[3]?.[1].value).toMatch(/^error \(schema\): Invalid args for "search__web": query: /);
    expect(sent[3]?.[1].value).toContain('Hint: ');
    // "" is {}.
    expect(sent[4]?.[1]).toEqual({ type: 'text', value: 'fetched' });
    expect(f.failures()).toEqual(['search.web:schema']);
    expect(f.dispatched()).toEqual(['search.web', 'flaky.fetch', 'flaky.fetch']);
  });

  it('retries a transient failure inside one call', async () => {
    const f = fixture();
    const { model, resultsSentAt } = scriptedModel([[call('c1', 'flaky__fetch')], 'done']);
    const retried = f.nextEvent('dispatch.retry').then(() => f.clock.advance(100));

    await generateText({
      model,
      tools: toAiSdkTools({ registry: f.registry, dispatcher: f.dispatcher }),
      stopWhen: stepCountIs(3),
      prompt: 'go',
    });
    await retried;

    expect(resultsSentAt(2)).toEqual([['c1', { type: 'text', value: 'fetched' }]]);
    expect(f.contexts.map((ctx) => ctx.attempt)).toEqual([1, 2]);
  });

  it('sends the model a timeout in its own words, with the name it knows', async () => {
    const f = fixture();
    const { model, resultsSentAt } = scriptedModel([[call('c1', 'slow__job')], 'done']);
    void f.whenStarted('c1').then(() => f.clock.advance(50));

    const result = await generateText({
      model,
      tools: toAiSdkTools({ registry: f.registry, dispatcher: f.dispatcher }),
      stopWhen: stepCountIs(3),
      prompt: 'go',
    });

    const [[, output] = []] = resultsSentAt(2);
    expect(output?.type).toBe('error-text');
    expect(output?.value).toMatch(/^error \(timeout, after 1 attempt\): "slow__job" timed out after 50 ms/);
    // The handler saw the deadline our timeout layer set, on the injected clock.
    expect(f.contexts[0]?.deadline).toBe(1_700_000_000_000 + 50);
    const failed = result.steps[0]?.content.find((part) => part.type === 'tool-error');
    expect(
      failed?.type === 'tool-error' && failed.error instanceof ToolCallFailed && failed.error.outcome.kind,
    ).toBe('timeout');
  });

  it('dedupes a replayed call within its scope and runs it again in another', async () => {
    const f = fixture();
    const replay = () => scriptedModel([[call('c1', 'pay__charge', { amount: 5 })], 'done']);
    const run = (scope: string) =>
      generateText({
        model: replay().model,
        tools: toAiSdkTools({ registry: f.registry, dispatcher: f.dispatcher, idempotencyScope: scope }),
        stopWhen: stepCountIs(3),
        prompt: 'pay',
      });

    const first = await run('order-1');
    const replayed = await run('order-1');
    await run('order-2');

    expect(f.charges).toEqual([5, 5]);
    expect(replayed.steps[0]?.toolResults[0]?.output).toBe('charged 5');
    expect(first.steps[0]?.toolResults[0]?.output).toBe('charged 5');
    expect(
      f.events.filter((event) => event.type === 'idempotency.hit').map((event) => detail(event, 'key')),
    ).toEqual(['order-1:c1']);
  });

  it('passes no idempotency key without a scope, and the bare id with keyByCallId', async () => {
    const f = fixture();
    const run = (keyByCallId: boolean) =>
      generateText({
        model: scriptedModel([[call('c1', 'pay__charge', { amount: 5 })], 'done']).model,
        tools: toAiSdkTools({ registry: f.registry, dispatcher: f.dispatcher, keyByCallId }),
        stopWhen: stepCountIs(3),
        prompt: 'pay',
      });

    await run(false);
    await run(false);
    await run(true);

    expect(f.charges).toEqual([5, 5, 5]);
    expect(f.contexts.map((ctx) => ctx.idempotencyKey)).toEqual([undefined, undefined, 'c1']);
  });

  it('gives a call with an empty toolCallId a fresh call id and no idempotency key', async () => {
    const f = fixture();
    const { model, resultsSentAt } = scriptedModel([[call('', 'pay__charge', { amount: 3 })], 'done']);

    await generateText({
      model,
      tools: toAiSdkTools({ registry: f.registry, dispatcher: f.dispatcher, idempotencyScope: 'run-1' }),
      stopWhen: stepCountIs(3),
      prompt: 'pay',
    });

    expect(resultsSentAt(2)).toEqual([['', { type: 'text', value: 'charged 3' }]]);
    expect(f.contexts[0]?.callId).toMatch(/^ai-sdk-[0-9a-f-]{36}$/);
    expect(f.contexts[0]?.idempotencyKey).toBeUndefined();
  });

  it('refuses calls once the run budget is spent and tells the model to stop', async () => {
    const f = fixture();
    const { model, resultsSentAt } = scriptedModel([
      [call('c1', 'pay__charge', { amount: 1 }), call('c2', 'pay__charge', { amount: 2 })],
      'done',
    ]);

    await generateText({
      model,
      tools: toAiSdkTools({ registry: f.registry, dispatcher: f.dispatcher, budget: createBudget(1) }),
      stopWhen: stepCountIs(3),
      prompt: 'pay twice',
    });

    const sent = resultsSentAt(2);
    expect(sent.map(([id]) => id)).toEqual(['c1', 'c2']);
    expect(sent[0]?.[1]).toEqual({ type: 'text', value: 'charged 1' });
    expect(sent[1]?.[1].value).toMatch(/^error \(budget_exceeded\): .* Hint: The tool-call budget is spent/);
    expect(f.charges).toEqual([1]);
  });

  it('lets a stop condition end the loop on a budget refusal, read from ToolCallFailed.outcome', async () => {
    const f = fixture();
    const { model, calls } = scriptedModel([[call('c1', 'pay__charge', { amount: 1 })], 'never asked']);
    const budgetSpent: StopCondition<ToolSet> = ({ steps }) =>
      steps
        .at(-1)
        ?.content.some(
          (part) =>
            part.type === 'tool-error' &&
            part.error instanceof ToolCallFailed &&
            part.error.outcome.kind === 'budget_exceeded',
        ) ?? false;

    const result = await generateText({
      model,
      tools: toAiSdkTools({ registry: f.registry, dispatcher: f.dispatcher, budget: createBudget(0) }),
      stopWhen: [stepCountIs(5), budgetSpent],
      prompt: 'pay',
    });

    expect(calls).toHaveLength(1);
    expect(result.steps).toHaveLength(1);
    expect(f.charges).toEqual([]);
  });

  it('reports a ToolError as tool_error, as the tool worded it, without retrying', async () => {
    const f = fixture();
    const { model, resultsSentAt } = scriptedModel([[call('c1', 'pay__charge', { amount: 500 })], 'done']);

    const result = await generateText({
      model,
      tools: toAiSdkTools({ registry: f.registry, dispatcher: f.dispatcher }),
      stopWhen: stepCountIs(3),
      prompt: 'pay',
    });

    expect(resultsSentAt(2)).toEqual([
      [
        'c1',
        {
          type: 'error-text',
          value: expect.stringMatching(/^error \(tool_error, after 1 attempt\): card declined/),
        },
      ],
    ]);
    const failed = result.steps[0]?.content.find((part) => part.type === 'tool-error') as
      | TypedToolError<never>
      | undefined;
    expect(failed?.error).toBeInstanceOf(ToolCallFailed);
    const error = failed?.error as ToolCallFailed;
    expect(error.outcome.kind).toBe('tool_error');
    expect(error.outcome.jsonrpcCode).toBe(-32603);
    expect(f.contexts).toHaveLength(1);
  });

  it('aborts the running tool when the caller aborts generateText, which rejects with the reason', async () => {
    const f = fixture();
    const { model } = scriptedModel([[call('c1', 'search__web', { query: 'long' })], 'done']);
    f.hold('c1');
    const controller = new AbortController();
    const stop = new Error('user stop');
    void f.whenStarted('c1').then(() => controller.abort(stop));

    await expect(
      generateText({
        model,
        tools: toAiSdkTools({ registry: f.registry, dispatcher: f.dispatcher }),
        stopWhen: stepCountIs(3),
        abortSignal: controller.signal,
        prompt: 'go',
      }),
    ).rejects.toBe(stop);
    expect(f.contexts[0]?.signal.aborted).toBe(true);
    expect(f.failures()).toEqual(['search.web:cancelled']);
  });

  it('ends the stream with an abort part, and cancels the running tool, when the caller aborts streamText', async () => {
    const f = fixture();
    const { model } = scriptedModel([[call('c1', 'search__web', { query: 'long' })], 'done']);
    f.hold('c1');
    const controller = new AbortController();
    void f.whenStarted('c1').then(() => controller.abort(new Error('user stop')));

    const stream = streamText({
      model,
      tools: toAiSdkTools({ registry: f.registry, dispatcher: f.dispatcher }),
      stopWhen: stepCountIs(3),
      abortSignal: controller.signal,
      prompt: 'go',
    });
    const parts: string[] = [];
    for await (const part of stream.fullStream) parts.push(part.type);

    // AI SDK 6 drops the aborted call's result and says so with an `abort` part.
    expect(parts).toEqual(['start', 'start-step', 'tool-call', 'abort']);
    expect(f.contexts[0]?.signal.aborted).toBe(true);
    expect(f.failures()).toEqual(['search.web:cancelled']);
  });

  it('runs the same tools under streamText', async () => {
    const f = fixture();
    const { model, resultsSentAt } = scriptedModel([
      [call('c1', 'search__web', { query: 'a' }), call('c2', 'pay__charge', { amount: 500 })],
      'streamed',
    ]);

    const stream = streamText({
      model,
      tools: toAiSdkTools({ registry: f.registry, dispatcher: f.dispatcher, idempotencyScope: 'run-9' }),
      stopWhen: stepCountIs(3),
      prompt: 'go',
    });

    expect(await stream.text).toBe('streamed');
    expect(resultsSentAt(2)).toEqual([
      ['c1', { type: 'text', value: '{"hits":["a-1","a-2"]}' }],
      [
        'c2',
        {
          type: 'error-text',
          value: expect.stringMatching(/^error \(tool_error, after 1 attempt\): card declined/),
        },
      ],
    ]);
  });
});

describe('toAiSdkTools names', () => {
  const registry = () =>
    new ToolRegistry()
      .register({ name: 'a.b', inputSchema: z.object({}), handler: () => 'dotted' })
      .register({ name: 'plain', inputSchema: z.object({}), handler: () => 'plain' });
  const dispatcherFor = (tools: ToolRegistry) => createDispatcher(defaultStack({ registry: tools }));

  it('maps dotted names to wire names by default and dispatches them under their own names', async () => {
    const tools = registry();
    const set = toAiSdkTools({ registry: tools, dispatcher: dispatcherFor(tools) });
    expect(Object.keys(set)).toEqual(['a__b', 'plain']);
  });

  it('keeps the registry names with names: false, and takes createNameMap options', () => {
    const tools = registry();
    expect(
      Object.keys(toAiSdkTools({ registry: tools, dispatcher: dispatcherFor(tools), names: false })),
    ).toEqual(['a.b', 'plain']);
    const encoded = toAiSdkTools({
      registry: tools,
      dispatcher: dispatcherFor(tools),
      names: { encode: (name: string) => name.replaceAll('.', '-') },
    });
    expect(Object.keys(encoded)).toEqual(['a-b', 'plain']);
  });

  it('throws a TypeError naming both tools when two names map to one wire name', () => {
    const tools = registry().register({ name: 'a__b', inputSchema: z.object({}), handler: () => 'x' });
    expect(() => toAiSdkTools({ registry: tools, dispatcher: dispatcherFor(tools) })).toThrow(
      expect.objectContaining({ name: 'TypeError', message: expect.stringMatching(/"a\.b" and "a__b"/) }),
    );
  });

  it('gives the SDK a root object schema for a tool whose validator cannot describe itself', async () => {
    const tools = new ToolRegistry().register({
      name: 'odd.tool',
      inputSchema: z.discriminatedUnion('kind', [
        z.object({ kind: z.literal('a'), n: z.number() }),
        z.object({ kind: z.literal('b'), s: z.string() }),
      ]),
      handler: (args) => args,
    });
    const { model, calls } = scriptedModel(['nothing to do']);
    await generateText({
      model,
      tools: toAiSdkTools({ registry: tools, dispatcher: dispatcherFor(tools) }),
      prompt: 'go',
    });
    const [sent] = calls[0]?.tools ?? [];
    expect(sent?.type === 'function' && sent.inputSchema).toMatchObject({ type: 'object' });
    expect(sent?.type === 'function' && '$schema' in sent.inputSchema).toBe(false);
  });
});

describe('toAiSdkTools options', () => {
  const registry = new ToolRegistry().register({ name: 'a', inputSchema: z.object({}), handler: () => 1 });
  const dispatcher = createDispatcher(defaultStack({ registry }));

  it.each([
    ['options', undefined, /options object/],
    ['registry', { dispatcher }, /registry/],
    ['dispatcher', { registry }, /dispatcher/],
    ['idempotencyScope', { registry, dispatcher, idempotencyScope: '' }, /idempotencyScope/],
    ['keyByCallId', { registry, dispatcher, keyByCallId: 'yes' }, /keyByCallId/],
    ['names', { registry, dispatcher, names: true }, /names/],
    ['timeoutMs', { registry, dispatcher, timeoutMs: 0 }, /timeoutMs/],
    ['maxLength', { registry, dispatcher, maxLength: 0.5 }, /maxLength/],
    ['budget', { registry, dispatcher, budget: 'ten' }, /budget/],
  ])('throws a TypeError naming %s when it is wrong', (_name, options, message) => {
    expect(() => toAiSdkTools(options as never)).toThrow(
      expect.objectContaining({ name: 'TypeError', message: expect.stringMatching(message) }),
    );
  });
});

describe('ToolCallFailed', () => {
  it('renders as its message alone, so AI SDK 7 ("<name>: <message>" via toString) shows the model the same text', async () => {
    const registry = new ToolRegistry().register({
      name: 'a',
      inputSchema: z.object({ n: z.number() }),
      handler: () => 1,
    });
    const outcome = await createDispatcher(defaultStack({ registry })).dispatch('a', { n: 'x' });
    if (outcome.ok) throw new Error('expected a failure');
    const error = new ToolCallFailed(outcome);
    expect(error.name).toBe('ToolCallFailed');
    expect(String(error)).toBe(error.message);
    expect(error.message).toMatch(/^error \(schema\): Invalid args for "a"/);
    expect(isDispatchError(error.outcome)).toBe(true);
    expect(error.cause).toBe(outcome);
  });

  it('throws a TypeError for anything but a DispatchError', () => {
    expect(() => new ToolCallFailed({ ok: true } as never)).toThrow(TypeError);
  });
});
