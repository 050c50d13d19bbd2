// toAgentsTools driven by the real Agents SDK: run() against the local Responses server (examples/fake-provider).

import { Agent, run, RunContext, setDefaultOpenAIClient, setTracingDisabled } from '@openai/agents';
// The project's own openai 6 client: package.json overrides the Agents SDK's openai 7, which
// declares Node 22, so the tests run the same client a Node 20 user is told to pin.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { toAgentsTools, type AgentsToolCall } from '../../../integrations/openai-agents/index.js';
import { createBudget, createDispatcher, defaultStack, ToolRegistry, type Outcome } from '../../../index.js';
import {
  startFakeProvider,
  type FakeProvider,
  type ResponsesReply,
  type ToolResultView,
} from '../../../examples/fake-provider/index.js';
import { detail, fixture } from '../ai-sdk/fixture.js';

// One server for the suite; each test installs its own script through `script`.
let provider: FakeProvider;
let answer: (turn: {
  toolResults: ToolResultView[];
  signal: AbortSignal;
}) => ResponsesReply | Promise<ResponsesReply>;
const seen: ToolResultView[][] = [];

/** Scripts the model: reply n answers request n; every request's tool results are recorded. */
function script(replies: ResponsesReply[]) {
  seen.length = 0;
  let next = 0;
  answer = ({ toolResults }) => {
    seen.push(toolResults);
    const reply = replies[next++];
    if (reply === undefined) throw new Error(`no scripted reply ${next}`);
    return reply;
  };
}

beforeAll(async () => {
  provider = await startFakeProvider({ responses: (turn) => answer(turn) });
  setTracingDisabled(true);
  setDefaultOpenAIClient(
    new OpenAI({ baseURL: provider.openaiBaseURL, apiKey: 'test', maxRetries: 0 }) as never,
  );
});

afterAll(async () => {
  await provider.close();
});

const results = (n: number) => (seen[n] ?? []).map(({ id, content }) => [id, content]);
const agentWith = (tools: ReturnType<typeof toAgentsTools>) =>
  new Agent({ name: 'tester', model: 'gpt-test', tools });

describe('toAgentsTools', () => {
  it('runs a multi-turn loop whose parallel calls come back in call order', async () => {
    const f = fixture();
    script([
      {
        calls: [
          { call_id: 'c1', name: 'search__web', arguments: { query: 'agents' } },
          { call_id: 'c2', name: 'pay__charge', arguments: { amount: 5 } },
          { call_id: 'c3', name: 'search__web', arguments: { query: 'mcp' } },
        ],
      },
      { calls: [{ call_id: 'c4', name: 'pay__charge', arguments: { amount: 7 } }] },
      { text: 'all done' },
    ]);
    // c1 answers only after c3 has started: the calls of a turn run together.
    const c1 = f.hold('c1');
    void f.whenStarted('c3').then(() => c1.open());

    const result = await run(
      agentWith(toAgentsTools({ registry: f.registry, dispatcher: f.dispatcher, idempotencyScope: 'run-1' })),
      'go',
    );

    expect(result.finalOutput).toBe('all done');
    expect(results(1)).toEqual([
      ['c1', '{"hits":["agents-1","agents-2"]}'],
      ['c2', 'charged 5'],
      ['c3', '{"hits":["mcp-1","mcp-2"]}'],
    ]);
    expect(results(2)).toEqual([['c4', 'charged 7']]);
    expect(f.contexts.map((ctx) => [ctx.callId, ctx.idempotencyKey])).toEqual([
      ['c1', 'run-1:c1'],
      ['c2', 'run-1:c2'],
      ['c3', 'run-1:c3'],
      ['c4', 'run-1:c4'],
    ]);
    // The provider accepted the tool list: mapped names, non-strict object schemas.
    expect(provider.requests.every((request) => request.status === 200)).toBe(true);
  });

  it('answers every call once, in call order: bad JSON by the Runner, bad args and ToolErrors by us', async () => {
    const f = fixture();
    script([
      {
        calls: [
          { call_id: 'c1', name: 'search__web', arguments: { query: 'ok' } },
          { call_id: 'c2', name: 'search__web', arguments: '{"query": ' },
          { call_id: 'c3', name: 'search__web', arguments: { query: 7 } },
          { call_id: 'c4', name: 'pay__charge', arguments: { amount: 500 } },
          { call_id: 'c5', name: 'pay__charge', arguments: '' },
        ],
      },
      { text: 'done' },
    ]);
    const outcomes: Array<[AgentsToolCall, Outcome]> = [];

    await run(
      agentWith(
        toAgentsTools({
          registry: f.registry,
          dispatcher: f.dispatcher,
          onOutcome: (outcome, call) => outcomes.push([call, outcome]),
        }),
      ),
      'go',
    );

    const sent = results(1);
    expect(sent.map(([id]) => id)).toEqual(['c1', 'c2', 'c3', 'c4', 'c5']);
    expect(sent[0]?.[1]).toBe('{"hits":["ok-1","ok-2"]}');
    // The Runner parses the JSON first and answers malformed (and empty) arguments itself.
    expect(sent[1]?.[1]).toBe(
      'An error occurred while parsing tool arguments. Please try again with valid JSON.',
    );
    expect(sent[4]?.[1]).toBe(
      'An error occurred while parsing tool arguments. Please try again with valid JSON.',
    );
    // Non-strict parameters: the SDK does not validate, our schema layer does.
    expect(sent[2]?.[1]).toMatch(/^error \(schema\): Invalid args for "search__web": query: /);
    expect(sent[3]?.[1]).toMatch(/^error \(tool_error, after 1 attempt\): card declined/);
    expect(f.failures()).toEqual(['search.web:schema', 'pay.charge:tool_error']);
    // onOutcome hears each call as it settles; sorted here, since c3 fails before c1 succeeds.
    const heard = outcomes.map(([call, outcome]) => [
      call.callId,
      call.toolName,
      call.wireName,
      outcome.ok ? 'ok' : outcome.kind,
    ]);
    expect(heard.sort()).toEqual([
      ['c1', 'search.web', 'search__web', 'ok'],
      ['c3', 'search.web', 'search__web', 'schema'],
      ['c4', 'pay.charge', 'pay__charge', 'tool_error'],
    ]);
  });

  it('retries a transient failure inside one call', async () => {
    const f = fixture();
    script([{ calls: [{ call_id: 'c1', name: 'flaky__fetch', arguments: {} }] }, { text: 'done' }]);
    const retried = f.nextEvent('dispatch.retry').then(() => f.clock.advance(100));

    await run(agentWith(toAgentsTools({ registry: f.registry, dispatcher: f.dispatcher })), 'go');
    await retried;

    expect(results(1)).toEqual([['c1', 'fetched']]);
    expect(f.contexts.map((ctx) => ctx.attempt)).toEqual([1, 2]);
  });

  it('sends a timeout in our words: our deadline, not the SDK timeoutMs, ends the attempt', async () => {
    const f = fixture();
    script([{ calls: [{ call_id: 'c1', name: 'slow__job', arguments: {} }] }, { text: 'done' }]);
    void f.whenStarted('c1').then(() => f.clock.advance(50));
    const tools = toAgentsTools({ registry: f.registry, dispatcher: f.dispatcher });

    await run(agentWith(tools), 'go');

    expect(results(1)[0]?.[1]).toMatch(
      /^error \(timeout, after 1 attempt\): "slow__job" timed out after 50 ms/,
    );
    expect(tools.map((entry) => (entry as { timeoutMs?: unknown }).timeoutMs)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('dedupes a replayed call within a run scope and runs it again in another', async () => {
    const f = fixture();
    const tools = toAgentsTools({
      registry: f.registry,
      dispatcher: f.dispatcher,
      idempotencyScope: (runContext) => (runContext.context as { runId: string }).runId,
    });
    const pay = (runId: string) => {
      script([
        { calls: [{ call_id: 'c1', name: 'pay__charge', arguments: { amount: 5 } }] },
        { text: 'done' },
      ]);
      return run(agentWith(tools), 'pay', { context: { runId } }).then(() => results(1));
    };

    expect(await pay('order-1')).toEqual([['c1', 'charged 5']]);
    expect(await pay('order-1')).toEqual([['c1', 'charged 5']]);
    expect(await pay('order-2')).toEqual([['c1', 'charged 5']]);

    expect(f.charges).toEqual([5, 5]);
    expect(
      f.events.filter((event) => event.type === 'idempotency.hit').map((event) => detail(event, 'key')),
    ).toEqual(['order-1:c1']);
  });

  it('never sees a call id the Runner has already answered in the same run: the Runner drops it', async () => {
    const f = fixture();
    script([
      { calls: [{ call_id: 'c1', name: 'pay__charge', arguments: { amount: 5 } }] },
      { calls: [{ call_id: 'c1', name: 'pay__charge', arguments: { amount: 5 } }] },
      { text: 'done' },
    ]);

    await run(agentWith(toAgentsTools({ registry: f.registry, dispatcher: f.dispatcher })), 'pay');

    expect(f.charges).toEqual([5]);
    expect(f.dispatched()).toEqual(['pay.charge']);
  });

  it('leaves an empty call_id to the Runner, which refuses it, and makes up an id when invoked without one', async () => {
    const f = fixture();
    const tools = toAgentsTools({
      registry: f.registry,
      dispatcher: f.dispatcher,
      idempotencyScope: 'run-1',
    });
    script([{ calls: [{ call_id: '', name: 'pay__charge', arguments: { amount: 3 } }] }, { text: 'done' }]);
    await expect(run(agentWith(tools), 'pay')).rejects.toThrow(/missing a non-empty call ID/);
    expect(f.events).toEqual([]);

    // Outside a run (no call details), the tool still dispatches, under a fresh id and no key.
    const pay = tools[1];
    expect(await pay?.invoke(new RunContext({}), '{"amount":3}')).toBe('charged 3');
    expect(f.contexts[0]?.callId).toMatch(/^openai-agents-[0-9a-f-]{36}$/);
    expect(f.contexts[0]?.idempotencyKey).toBeUndefined();
  });

  it('passes no idempotency key without a scope', async () => {
    const f = fixture();
    const tools = toAgentsTools({ registry: f.registry, dispatcher: f.dispatcher });
    for (let i = 0; i < 2; i++) {
      script([
        { calls: [{ call_id: 'c1', name: 'pay__charge', arguments: { amount: 5 } }] },
        { text: 'done' },
      ]);
      await run(agentWith(tools), 'pay');
    }
    expect(f.charges).toEqual([5, 5]);
    expect(f.contexts.map((ctx) => ctx.idempotencyKey)).toEqual([undefined, undefined]);
  });

  it('refuses calls once the run budget is spent', async () => {
    const f = fixture();
    script([
      {
        calls: [
          { call_id: 'c1', name: 'pay__charge', arguments: { amount: 1 } },
          { call_id: 'c2', name: 'pay__charge', arguments: { amount: 2 } },
        ],
      },
      { text: 'done' },
    ]);

    await run(
      agentWith(toAgentsTools({ registry: f.registry, dispatcher: f.dispatcher, budget: createBudget(1) })),
      'pay twice',
    );

    expect(results(1)[0]).toEqual(['c1', 'charged 1']);
    expect(results(1)[1]?.[1]).toMatch(/^error \(budget_exceeded\): .* Hint: The tool-call budget is spent/);
    expect(f.charges).toEqual([1]);
  });

  it('aborts the running tool when the caller aborts run(), which rejects', async () => {
    const f = fixture();
    script([
      { calls: [{ call_id: 'c1', name: 'search__web', arguments: { query: 'long' } }] },
      { text: 'done' },
    ]);
    f.hold('c1');
    const controller = new AbortController();
    void f.whenStarted('c1').then(() => controller.abort(new Error('user stop')));

    await expect(
      run(agentWith(toAgentsTools({ registry: f.registry, dispatcher: f.dispatcher })), 'go', {
        signal: controller.signal,
      }),
    ).rejects.toThrow();
    expect(f.contexts[0]?.signal.aborted).toBe(true);
    expect(f.failures()).toEqual(['search.web:cancelled']);
  });

  it('leaves an unknown tool to the Runner: it ends the run, or tells the model when asked to', async () => {
    const f = fixture();
    const tools = toAgentsTools({ registry: f.registry, dispatcher: f.dispatcher });
    script([{ calls: [{ call_id: 'c1', name: 'ghost__tool', arguments: {} }] }]);
    await expect(run(agentWith(tools), 'go')).rejects.toThrow(/ghost__tool not found/);

    script([{ calls: [{ call_id: 'c1', name: 'ghost__tool', arguments: {} }] }, { text: 'done' }]);
    await run(agentWith(tools), 'go', { toolNotFoundBehavior: 'return_error_to_model' });
    expect(results(1)).toEqual([['c1', expect.stringContaining("'ghost__tool' not found")]]);
    expect(f.events).toEqual([]);
  });

  it('builds non-strict tools with mapped names, errorFunction null and no SDK timeout', () => {
    const f = fixture();
    const tools = toAgentsTools({ registry: f.registry, dispatcher: f.dispatcher });
    expect(tools.map((entry) => [entry.name, entry.strict])).toEqual([
      ['search__web', false],
      ['pay__charge', false],
      ['flaky__fetch', false],
      ['slow__job', false],
    ]);
    expect(tools[0]?.parameters).toMatchObject({ type: 'object', properties: { query: { type: 'string' } } });
    expect('$schema' in (tools[0]?.parameters ?? {})).toBe(false);
  });

  it('throws a TypeError naming both tools when two names map to one wire name', () => {
    const registry = new ToolRegistry()
      .register({ name: 'a.b', inputSchema: z.object({}), handler: () => 1 })
      .register({ name: 'a__b', inputSchema: z.object({}), handler: () => 2 });
    expect(() =>
      toAgentsTools({ registry, dispatcher: createDispatcher(defaultStack({ registry })) }),
    ).toThrow(/"a\.b" and "a__b"/);
  });

  it.each([
    ['options', undefined, /options object/],
    ['dispatcher', { dispatcher: null }, /dispatcher/],
    ['idempotencyScope', { idempotencyScope: '' }, /idempotencyScope/],
    ['keyByCallId', { keyByCallId: 'no' }, /keyByCallId/],
    ['names', { names: null }, /names/],
    ['budget', { budget: Number.NaN }, /budget/],
    ['timeoutMs', { timeoutMs: 0 }, /timeoutMs/],
    ['maxLength', { maxLength: -3 }, /maxLength/],
    ['onOutcome', { onOutcome: 'log' }, /onOutcome/],
  ])('throws a TypeError naming %s when it is wrong', (_name, overrides, message) => {
    const registry = new ToolRegistry().register({ name: 'a', inputSchema: z.object({}), handler: () => 1 });
    const dispatcher = createDispatcher(defaultStack({ registry }));
    const options = overrides === undefined ? undefined : { registry, dispatcher, ...overrides };
    expect(() => toAgentsTools(options as never)).toThrow(
      expect.objectContaining({ name: 'TypeError', message: expect.stringMatching(message) }),
    );
  });
});
