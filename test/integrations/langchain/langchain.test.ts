// dispatcherMiddleware and toLangChainTools driven by the real LangChain agent: createAgent with fakeModel().

import { AIMessage, createAgent, fakeModel, tool, ToolMessage, type BaseMessage } from 'langchain';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { dispatcherMiddleware, toLangChainTools } from '../../../integrations/langchain/index.js';
import {
  createBudget,
  createDispatcher,
  defaultStack,
  isDispatchError,
  ToolRegistry,
  type Outcome,
} from '../../../index.js';
import { detail, fixture } from '../ai-sdk/fixture.js';

type Model = ReturnType<typeof fakeModel>;

/** The fake model, with the tool names each turn was bound to recorded. */
function recordingModel(build: (model: Model) => Model) {
  const model = build(fakeModel());
  const bound: string[][] = [];
  const bindTools = model.bindTools.bind(model);
  model.bindTools = (tools) => {
    bound.push(tools.map((entry) => ('name' in entry ? String(entry.name) : '?')));
    return bindTools(tools);
  };
  return { model, bound };
}

const toolMessages = (messages: BaseMessage[]) =>
  messages.filter((message): message is ToolMessage => ToolMessage.isInstance(message));
const summary = (messages: BaseMessage[]) =>
  toolMessages(messages).map((message) => [
    message.tool_call_id,
    message.name,
    message.status,
    message.content,
  ]);
const input = (text: string) => ({ messages: [{ role: 'user' as const, content: text }] });

describe('dispatcherMiddleware', () => {
  it('runs a multi-turn agent loop whose parallel calls come back in call order', async () => {
    const f = fixture();
    const { model, bound } = recordingModel((m) =>
      m
        .respondWithTools([
          { id: 'c1', name: 'search__web', args: { query: 'agents' } },
          { id: 'c2', name: 'pay__charge', args: { amount: 5 } },
          { id: 'c3', name: 'search__web', args: { query: 'mcp' } },
        ])
        .respondWithTools([{ id: 'c4', name: 'pay__charge', args: { amount: 7 } }])
        .respond(new AIMessage('all done')),
    );
    // c1 answers only after c3 has started: the calls of a turn run together.
    const c1 = f.hold('c1');
    void f.whenStarted('c3').then(() => c1.open());
    const agent = createAgent({
      model,
      middleware: [
        dispatcherMiddleware({ registry: f.registry, dispatcher: f.dispatcher, idempotencyScope: 'run-1' }),
      ],
    });

    const result = await agent.invoke(input('research, then pay'));

    expect(bound[0]).toEqual(['search__web', 'pay__charge', 'flaky__fetch', 'slow__job']);
    expect(summary(result.messages)).toEqual([
      ['c1', 'search__web', 'success', '{"hits":["agents-1","agents-2"]}'],
      ['c2', 'pay__charge', 'success', 'charged 5'],
      ['c3', 'search__web', 'success', '{"hits":["mcp-1","mcp-2"]}'],
      ['c4', 'pay__charge', 'success', 'charged 7'],
    ]);
    expect(result.messages.at(-1)?.content).toBe('all done');
    expect(f.contexts.map((ctx) => [ctx.callId, ctx.idempotencyKey])).toEqual([
      ['c1', 'run-1:c1'],
      ['c2', 'run-1:c2'],
      ['c3', 'run-1:c3'],
      ['c4', 'run-1:c4'],
    ]);
    // The outcome rides along as the artifact, which LangChain never shows the model.
    const artifact = toolMessages(result.messages)[0]?.artifact as Outcome;
    expect(artifact).toEqual({ ok: true, result: { hits: ['agents-1', 'agents-2'] }, attempts: 1 });
  });

  it('answers every call once, in call order: unknown tools and bad args with our envelope, no stack trace', async () => {
    const f = fixture();
    const { model } = recordingModel((m) =>
      m
        .respondWithTools([
          { id: 'c1', name: 'search__web', args: { query: 'ok' } },
          { id: 'c2', name: 'ghost__tool', args: {} },
          { id: 'c3', name: 'search__web', args: { query: 7 } },
          { id: 'c4', name: 'pay__charge', args: { amount: 500 } },
        ])
        .respond(new AIMessage('done')),
    );
    const agent = createAgent({
      model,
      middleware: [dispatcherMiddleware({ registry: f.registry, dispatcher: f.dispatcher })],
    });

    const result = await agent.invoke(input('go'));

    const sent = summary(result.messages);
    expect(sent.map(([id, , status]) => [id, status])).toEqual([
      ['c1', 'success'],
      ['c2', 'error'],
      ['c3', 'error'],
      ['c4', 'error'],
    ]);
    expect(sent[1]?.[3]).toMatch(/^error \(not_found\): .*"ghost__tool"/);
    expect(sent[2]?.[3]).toMatch(/^error \(schema\): Invalid args for "search__web": query: /);
    expect(sent[3]?.[3]).toMatch(/^error \(tool_error, after 1 attempt\): card declined/);
    for (const [, , , content] of sent) expect(String(content)).not.toMatch(/\n\s+at /);
    // A name the middleware did not offer goes through the stack, under a name no registry holds.
    expect(f.failures()).toEqual([
      'ghost__tool (not offered):not_found',
      'search.web:schema',
      'pay.charge:tool_error',
    ]);
    const declined = toolMessages(result.messages)[3]?.artifact;
    expect(isDispatchError(declined) && declined.kind).toBe('tool_error');
  });

  it('retries a transient failure and reports the attempts', async () => {
    const f = fixture();
    const { model } = recordingModel((m) =>
      m.respondWithTools([{ id: 'c1', name: 'flaky__fetch', args: {} }]).respond(new AIMessage('done')),
    );
    const retried = f.nextEvent('dispatch.retry').then(() => f.clock.advance(100));
    const agent = createAgent({
      model,
      middleware: [dispatcherMiddleware({ registry: f.registry, dispatcher: f.dispatcher })],
    });

    const result = await agent.invoke(input('go'));
    await retried;

    expect(summary(result.messages)).toEqual([['c1', 'flaky__fetch', 'success', 'fetched']]);
    expect((toolMessages(result.messages)[0]?.artifact as Outcome | undefined)?.attempts).toBe(2);
  });

  it('sends a timeout as an error ToolMessage naming the tool as the model knows it', async () => {
    const f = fixture();
    const { model } = recordingModel((m) =>
      m.respondWithTools([{ id: 'c1', name: 'slow__job', args: {} }]).respond(new AIMessage('done')),
    );
    void f.whenStarted('c1').then(() => f.clock.advance(50));
    const agent = createAgent({
      model,
      middleware: [dispatcherMiddleware({ registry: f.registry, dispatcher: f.dispatcher })],
    });

    const result = await agent.invoke(input('go'));

    const [message] = toolMessages(result.messages);
    expect(message?.status).toBe('error');
    expect(message?.content).toMatch(
      /^error \(timeout, after 1 attempt\): "slow__job" timed out after 50 ms/,
    );
  });

  it('dedupes a replayed call within a thread and runs it again in another thread', async () => {
    const f = fixture();
    const middleware = dispatcherMiddleware({
      registry: f.registry,
      dispatcher: f.dispatcher,
      idempotencyScope: (runtime) => runtime.configurable?.['thread_id'] as string | undefined,
    });
    const run = (threadId: string) => {
      const { model } = recordingModel((m) =>
        m
          .respondWithTools([{ id: 'c1', name: 'pay__charge', args: { amount: 5 } }])
          .respond(new AIMessage('done')),
      );
      return createAgent({ model, middleware: [middleware] }).invoke(input('pay'), {
        configurable: { thread_id: threadId },
      });
    };

    await run('t-1');
    const replayed = await run('t-1');
    await run('t-2');

    expect(f.charges).toEqual([5, 5]);
    expect(summary(replayed.messages)).toEqual([['c1', 'pay__charge', 'success', 'charged 5']]);
    expect(
      f.events.filter((event) => event.type === 'idempotency.hit').map((event) => detail(event, 'key')),
    ).toEqual(['t-1:c1']);
  });

  it('gives a call without an id a fresh call id and no idempotency key', async () => {
    const f = fixture();
    const { model } = recordingModel((m) =>
      m
        .respond(new AIMessage({ content: '', tool_calls: [{ name: 'pay__charge', args: { amount: 3 } }] }))
        .respond(new AIMessage('done')),
    );
    const agent = createAgent({
      model,
      middleware: [
        dispatcherMiddleware({ registry: f.registry, dispatcher: f.dispatcher, idempotencyScope: 'run-1' }),
      ],
    });

    const result = await agent.invoke(input('go'));

    expect(f.charges).toEqual([3]);
    expect(f.contexts[0]?.callId).toMatch(/^langchain-[0-9a-f-]{36}$/);
    expect(f.contexts[0]?.idempotencyKey).toBeUndefined();
    expect(toolMessages(result.messages)[0]?.tool_call_id).toBe(f.contexts[0]?.callId);
  });

  it('refuses calls once the run budget is spent', async () => {
    const f = fixture();
    const { model } = recordingModel((m) =>
      m
        .respondWithTools([
          { id: 'c1', name: 'pay__charge', args: { amount: 1 } },
          { id: 'c2', name: 'pay__charge', args: { amount: 2 } },
        ])
        .respond(new AIMessage('done')),
    );
    const agent = createAgent({
      model,
      middleware: [
        dispatcherMiddleware({ registry: f.registry, dispatcher: f.dispatcher, budget: createBudget(1) }),
      ],
    });

    const result = await agent.invoke(input('pay twice'));

    const sent = summary(result.messages);
    expect(sent[0]).toEqual(['c1', 'pay__charge', 'success', 'charged 1']);
    expect(sent[1]?.[2]).toBe('error');
    expect(sent[1]?.[3]).toMatch(/^error \(budget_exceeded\): .* Hint: The tool-call budget is spent/);
    expect(f.charges).toEqual([1]);
  });

  it('aborts the running tool when the caller aborts invoke, which rejects with the reason', async () => {
    const f = fixture();
    const { model } = recordingModel((m) =>
      m
        .respondWithTools([{ id: 'c1', name: 'search__web', args: { query: 'long' } }])
        .respond(new AIMessage('done')),
    );
    f.hold('c1');
    const controller = new AbortController();
    const stop = new Error('user stop');
    void f.whenStarted('c1').then(() => controller.abort(stop));
    const agent = createAgent({
      model,
      middleware: [dispatcherMiddleware({ registry: f.registry, dispatcher: f.dispatcher })],
    });

    await expect(agent.invoke(input('go'), { signal: controller.signal })).rejects.toThrow('user stop');
    expect(f.contexts[0]?.signal.aborted).toBe(true);
    expect(f.failures()).toEqual(['search.web:cancelled']);
  });

  it("leaves the agent's other tools to LangChain", async () => {
    const f = fixture();
    const clock = tool(() => 'noon', { name: 'clock', description: 'The time', schema: z.object({}) });
    const { model, bound } = recordingModel((m) =>
      m
        .respondWithTools([
          { id: 'c1', name: 'clock', args: {} },
          { id: 'c2', name: 'search__web', args: { query: 'x' } },
        ])
        .respond(new AIMessage('done')),
    );
    const agent = createAgent({
      model,
      tools: [clock],
      middleware: [dispatcherMiddleware({ registry: f.registry, dispatcher: f.dispatcher })],
    });

    const result = await agent.invoke(input('go'));

    expect(bound[0]).toContain('clock');
    expect(summary(result.messages)).toEqual([
      ['c1', 'clock', 'success', 'noon'],
      ['c2', 'search__web', 'success', '{"hits":["x-1","x-2"]}'],
    ]);
    expect(f.dispatched()).toEqual(['search.web']);
  });

  it('answers a call whose JSON the provider could not parse with our schema envelope, through the stack', async () => {
    // Provider integrations put unparseable arguments in `invalid_tool_calls`, which createAgent
    // never routes to tools; the middleware moves ours to `tool_calls` after the model turn.
    const f = fixture();
    const { model } = recordingModel((m) =>
      m
        .respond(
          new AIMessage({
            content: '',
            tool_calls: [{ id: 'c1', name: 'search__web', args: { query: 'ok' } }],
            invalid_tool_calls: [
              {
                id: 'c2',
                name: 'search__web',
                args: '{"query": ',
                error: 'bad json',
                type: 'invalid_tool_call',
              },
              { id: 'c3', name: 'pay__charge', args: '', error: 'empty', type: 'invalid_tool_call' },
            ],
          }),
        )
        .respond(new AIMessage('done')),
    );
    const agent = createAgent({
      model,
      middleware: [dispatcherMiddleware({ registry: f.registry, dispatcher: f.dispatcher })],
    });

    const result = await agent.invoke(input('go'));

    const sent = summary(result.messages);
    expect(sent.map(([id, , status]) => [id, status])).toEqual([
      ['c1', 'success'],
      ['c2', 'error'],
      ['c3', 'error'],
    ]);
    expect(sent[1]?.[3]).toMatch(/^error \(schema\): .*JSON/);
    // "" is {}: the schema layer then reports the missing field.
    expect(sent[2]?.[3]).toMatch(/^error \(schema\): Invalid args for "pay__charge": amount: /);
    expect(f.failures()).toEqual(['search.web:schema', 'pay.charge:schema']);
    // The AI message now lists every call it is answered for, and the run went on to the answer.
    const asked = result.messages.find(
      (message) => AIMessage.isInstance(message) && (message.tool_calls ?? []).length > 0,
    ) as AIMessage;
    expect(asked.tool_calls?.map((call) => call.id)).toEqual(['c1', 'c2', 'c3']);
    expect(asked.invalid_tool_calls).toEqual([]);
    expect(result.messages.at(-1)?.content).toBe('done');
  });

  it("leaves a call with unparseable JSON to another of the agent's tools as LangChain has it", async () => {
    const f = fixture();
    const clock = tool(() => 'noon', { name: 'clock', description: 'The time', schema: z.object({}) });
    const { model } = recordingModel((m) =>
      m.respond(
        new AIMessage({
          content: '',
          invalid_tool_calls: [
            { id: 'c1', name: 'clock', args: '{', error: 'bad json', type: 'invalid_tool_call' },
          ],
        }),
      ),
    );
    const agent = createAgent({
      model,
      tools: [clock],
      middleware: [dispatcherMiddleware({ registry: f.registry, dispatcher: f.dispatcher })],
    });

    const result = await agent.invoke(input('go'));

    expect(toolMessages(result.messages)).toEqual([]);
    expect(f.events).toEqual([]);
  });

  it('throws a TypeError naming both tools when two names map to one wire name', () => {
    const registry = new ToolRegistry()
      .register({ name: 'a.b', inputSchema: z.object({}), handler: () => 1 })
      .register({ name: 'a__b', inputSchema: z.object({}), handler: () => 2 });
    const dispatcher = createDispatcher(defaultStack({ registry }));
    expect(() => dispatcherMiddleware({ registry, dispatcher })).toThrow(/"a\.b" and "a__b"/);
    expect(() => toLangChainTools({ registry, dispatcher })).toThrow(/"a\.b" and "a__b"/);
  });

  it.each([
    ['options', undefined, /options object/],
    ['registry', { registry: {} }, /registry/],
    ['dispatcher', { dispatcher: null }, /dispatcher/],
    [
      'dispatcher (without dispatchJson)',
      { dispatcher: { dispatch: () => Promise.resolve() } },
      /dispatcher/,
    ],
    ['idempotencyScope', { idempotencyScope: 7 }, /idempotencyScope/],
    ['keyByCallId', { keyByCallId: 1 }, /keyByCallId/],
    ['names', { names: 'wire' }, /names/],
    ['timeoutMs', { timeoutMs: -1 }, /timeoutMs/],
    ['maxLength', { maxLength: 0 }, /maxLength/],
  ])('throws a TypeError naming %s when it is wrong', (_name, overrides, message) => {
    const registry = new ToolRegistry().register({ name: 'a', inputSchema: z.object({}), handler: () => 1 });
    const dispatcher = createDispatcher(defaultStack({ registry }));
    const options = overrides === undefined ? undefined : { registry, dispatcher, ...overrides };
    expect(() => dispatcherMiddleware(options as never)).toThrow(
      expect.objectContaining({ name: 'TypeError', message: expect.stringMatching(message) }),
    );
  });
});

describe('toLangChainTools', () => {
  it('runs as plain agent tools: ids, scoped keys, ToolMessages with status and artifact', async () => {
    const f = fixture();
    const { model } = recordingModel((m) =>
      m
        .respondWithTools([
          { id: 'c1', name: 'search__web', args: { query: 'a' } },
          { id: 'c2', name: 'pay__charge', args: { amount: 500 } },
        ])
        .respond(new AIMessage('done')),
    );
    const agent = createAgent({
      model,
      tools: toLangChainTools({ registry: f.registry, dispatcher: f.dispatcher, idempotencyScope: 'run-2' }),
    });

    const result = await agent.invoke(input('go'));

    expect(summary(result.messages)).toEqual([
      ['c1', 'search__web', 'success', '{"hits":["a-1","a-2"]}'],
      [
        'c2',
        'pay__charge',
        'error',
        expect.stringMatching(/^error \(tool_error, after 1 attempt\): card declined/),
      ],
    ]);
    expect(f.contexts.map((ctx) => ctx.idempotencyKey)).toEqual(['run-2:c1', 'run-2:c2']);
  });

  it("lets LangChain answer bad args and unknown tools first, in LangChain's words", async () => {
    const f = fixture();
    const { model } = recordingModel((m) =>
      m
        .respondWithTools([
          { id: 'c1', name: 'search__web', args: { query: 7 } },
          { id: 'c2', name: 'ghost', args: {} },
        ])
        .respond(new AIMessage('done')),
    );
    const agent = createAgent({
      model,
      tools: toLangChainTools({ registry: f.registry, dispatcher: f.dispatcher }),
    });

    const result = await agent.invoke(input('go'));

    const sent = summary(result.messages);
    expect(sent.map(([id, , status]) => [id, status])).toEqual([
      ['c1', 'error'],
      ['c2', 'error'],
    ]);
    expect(sent[0]?.[3]).toContain('did not match expected schema');
    expect(sent[1]?.[3]).toContain('ghost is not a valid tool');
    expect(f.events).toEqual([]);
  });

  it('dispatches when invoked directly, outside an agent', async () => {
    const f = fixture();
    const [search] = toLangChainTools({ registry: f.registry, dispatcher: f.dispatcher });
    const message = (await search?.invoke({
      id: 'd1',
      name: 'search__web',
      args: { query: 'q' },
      type: 'tool_call',
    })) as ToolMessage;
    expect([message.tool_call_id, message.content, message.status]).toEqual([
      'd1',
      '{"hits":["q-1","q-2"]}',
      'success',
    ]);
  });
});
