// The Agents SDK's per-tool timeout (`tool({ timeoutMs })`) with toAgentsTools({ hostTimeout }), on
// the real @openai/agents Runner against the local Responses server: our timer owns each call,
// capped by the host's, and the SDK is never shown a timeoutMs of its own to race it.

import { Agent, OpenAIProvider, RunContext, Runner } from '@openai/agents';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { toAgentsTools } from '../../../integrations/openai-agents/index.js';
import {
  createDispatcher,
  defaultStack,
  type DispatchEvent,
  type Dispatcher,
  type Outcome,
  ToolRegistry,
} from '../../../index.js';
import {
  scripted,
  startFakeProvider,
  type FakeProvider,
  type ResponsesBody,
  type ResponsesReply,
  type ToolResultView,
} from '../../../examples/fake-provider/index.js';
import { gate, type Gate } from '../../helpers/gate.js';
import { manualClock } from '../ai-sdk/fixture.js';

let provider: FakeProvider | undefined;
afterEach(async () => {
  await provider?.close();
  provider = undefined;
});

/** A Runner against the fake provider answering `replies`; `seen` gets each request's tool results. */
async function runnerFor(replies: ResponsesReply[]) {
  const seen: ToolResultView[][] = [];
  provider = await startFakeProvider({
    responses: scripted<ResponsesBody, ResponsesReply>(
      replies.map((reply) => (turn) => {
        seen.push(turn.toolResults);
        return reply;
      }),
    ),
  });
  const runner = new Runner({
    modelProvider: new OpenAIProvider({ baseURL: provider.openaiBaseURL, apiKey: 'test' }),
    tracingDisabled: true,
  });
  return { runner, seen };
}

/**
 * Four tools: `reports.build`, 10 minutes and idempotent, answers only on its second attempt (the
 * first waits for its abort); `reports.render`, 10 minutes, never answers; `reports.export` with an
 * idle timeout; `reports.list` with none. A default stack on a manual clock; gates at each
 * attempt's start and at the retry.
 */
function setup() {
  const clock = manualClock();
  const started: Gate[] = [gate(), gate()];
  const retried = gate();
  const registry = new ToolRegistry()
    .register({
      name: 'reports.build',
      inputSchema: z.object({}),
      idempotent: true,
      timeoutMs: 600_000,
      handler: (_args, ctx) => {
        started[ctx.attempt - 1]?.open();
        if (ctx.attempt > 1) return 'built';
        return new Promise<never>((_resolve, reject) =>
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true }),
        );
      },
    })
    .register({
      name: 'reports.render',
      inputSchema: z.object({}),
      timeoutMs: 600_000,
      handler: (_args, ctx) => {
        started[0]?.open();
        return new Promise<never>((_resolve, reject) =>
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true }),
        );
      },
    })
    .register({
      name: 'reports.export',
      inputSchema: z.object({}),
      timeout: { idleMs: 1_000, totalMs: 20_000 },
      handler: () => 'exported',
    })
    .register({ name: 'reports.list', inputSchema: z.object({}), handler: () => 'listed' });
  const events: DispatchEvent[] = [];
  const dispatcher = createDispatcher(
    defaultStack({ registry, retry: { maxAttempts: 2, random: () => 0, clock }, timeout: { clock } }),
    {
      now: clock.now,
      onEvent: (event) => {
        events.push(event);
        if (event.type === 'dispatch.retry') retried.open();
      },
    },
  );
  return { registry, dispatcher, clock, started, retried, events };
}

/** A dispatcher that answers every call with its name and records the timeout it was given. */
function recordingDispatcher() {
  const seenTimeouts: Array<number | undefined> = [];
  const dispatcher: Pick<Dispatcher, 'dispatch'> = {
    dispatch: (name, _args, options) => {
      seenTimeouts.push(options?.timeoutMs);
      return Promise.resolve({ ok: true, result: name, attempts: 1 } as never);
    },
  };
  return { dispatcher, seenTimeouts };
}

const agentWith = (tools: ReturnType<typeof toAgentsTools>) =>
  new Agent({ name: 'tester', model: 'gpt-test', tools });

describe('toAgentsTools({ hostTimeout })', () => {
  it('ends an attempt at a host timeout shorter than the tool’s as our timeout, and retries it', async () => {
    const f = setup();
    const outcomes: Outcome[] = [];
    const tools = toAgentsTools({
      registry: f.registry,
      dispatcher: f.dispatcher,
      hostTimeout: { reports__build: 40 },
      onOutcome: (outcome) => outcomes.push(outcome),
    });
    const { runner, seen } = await runnerFor([
      { calls: [{ call_id: 'c1', name: 'reports__build', arguments: {} }] },
      { text: 'done' },
    ]);
    // The host's 40 ms, not the tool's 10 minutes, ends the first attempt; the backoff, then the second.
    void f.started[0]?.promise.then(() => f.clock.advance(40));
    void f.retried.promise.then(() => f.clock.advance(100));

    const result = await runner.run(agentWith(tools), 'build the report');

    expect(result.finalOutput).toBe('done');
    expect(seen[1]?.map(({ id, content }) => [id, content])).toEqual([['c1', 'built']]);
    expect(outcomes).toEqual([expect.objectContaining({ ok: true, attempts: 2 })]);
    const timedOut = f.events.find((event) => event.type === 'dispatch.timeout');
    expect(timedOut).toMatchObject({ tool: 'reports.build', timeoutMs: 40, attempt: 1 });
    // The SDK's own timer is never armed: the Runner reads `timeoutMs` off the tool, and finds none.
    expect(tools.map((entry) => entry.timeoutMs)).toEqual([undefined, undefined, undefined, undefined]);
  });

  it('sends the host-capped timeout in our words when no attempt is left', async () => {
    const f = setup();
    const outcomes: Outcome[] = [];
    const tools = toAgentsTools({
      registry: f.registry,
      dispatcher: f.dispatcher,
      hostTimeout: 40,
      onOutcome: (outcome) => outcomes.push(outcome),
    });
    const { runner, seen } = await runnerFor([
      { calls: [{ call_id: 'c1', name: 'reports__render', arguments: {} }] },
      { text: 'gave up' },
    ]);
    void f.started[0]?.promise.then(() => f.clock.advance(40));

    await runner.run(agentWith(tools), 'render the report');

    expect(seen[1]?.[0]?.content).toMatch(
      /^error \(timeout, after 1 attempt\): "reports__render" timed out after 40 ms \(attempt 1\)/,
    );
    expect(outcomes).toEqual([expect.objectContaining({ ok: false, kind: 'timeout' })]);
  });

  it('takes a timeoutMs assigned to a returned tool as its host timeout, and shows the SDK none', async () => {
    const f = setup();
    const tools = toAgentsTools({ registry: f.registry, dispatcher: f.dispatcher });
    const render = tools.find((entry) => entry.name === 'reports__render');
    if (render === undefined) throw new Error('no reports__render');
    render.timeoutMs = 40;
    expect(render.timeoutMs).toBeUndefined();
    const { runner, seen } = await runnerFor([
      { calls: [{ call_id: 'c1', name: 'reports__render', arguments: {} }] },
      { text: 'gave up' },
    ]);
    void f.started[0]?.promise.then(() => f.clock.advance(40));

    await runner.run(agentWith(tools), 'render the report');

    expect(seen[1]?.[0]?.content).toMatch(
      /^error \(timeout, after 1 attempt\): "reports__render" timed out after 40 ms/,
    );
    expect(() => {
      render.timeoutMs = 0;
    }).toThrow(
      expect.objectContaining({
        name: 'TypeError',
        message: expect.stringMatching(/timeoutMs of "reports__render"/),
      }),
    );
  });

  it.each([
    // The host's timeout, and each call's cap: build and render (10 min of their own), export (an
    // idle timeout of 20 s total), list (the timeout layer's 30 s default).
    [10_000, [10_000, 10_000, 10_000, 10_000]],
    [50_000, [50_000, 50_000, 20_000, 30_000]],
  ])(
    'caps each call at the smaller of its own deadline and a host timeout of %i ms',
    async (hostTimeout, capped) => {
      const f = setup();
      const { dispatcher: recording, seenTimeouts } = recordingDispatcher();
      const tools = toAgentsTools({ registry: f.registry, dispatcher: recording, hostTimeout });
      for (const entry of tools) await entry.invoke(new RunContext({}), '{}');
      expect(seenTimeouts).toEqual(capped);
    },
  );

  it('caps by the bridge’s own timeoutMs too, and leaves calls alone without a host timeout', async () => {
    const f = setup();
    const { dispatcher: recording, seenTimeouts } = recordingDispatcher();
    const byName = toAgentsTools({
      registry: f.registry,
      dispatcher: recording,
      timeoutMs: 5_000,
      hostTimeout: { 'reports.build': 2_000, reports__render: 9_000 },
    });
    for (const entry of byName) await entry.invoke(new RunContext({}), '{}');
    const without = toAgentsTools({ registry: f.registry, dispatcher: recording });
    for (const entry of without) await entry.invoke(new RunContext({}), '{}');
    expect(seenTimeouts).toEqual([2_000, 5_000, 5_000, 5_000, undefined, undefined, undefined, undefined]);
  });

  it.each([
    ['zero', 0, /hostTimeout must be a number of ms > 0/],
    ['NaN', Number.NaN, /hostTimeout must be a number of ms > 0/],
    ['Infinity', Infinity, /hostTimeout must be a number of ms > 0 and <= 2147483647/],
    ['a string', 'soon', /hostTimeout must be a number or numbers by tool name/],
    ['a bad value by name', { reports__build: -1 }, /hostTimeout\["reports__build"\] must be a number/],
    [
      'a name of no tool',
      { reports__biuld: 40 },
      /hostTimeout names no tool "reports__biuld"; did you mean "reports__build"\?/,
    ],
  ])('throws a TypeError for a hostTimeout of %s', (_case, hostTimeout, message) => {
    const f = setup();
    expect(() =>
      toAgentsTools({ registry: f.registry, dispatcher: f.dispatcher, hostTimeout: hostTimeout as never }),
    ).toThrow(expect.objectContaining({ name: 'TypeError', message: expect.stringMatching(message) }));
  });
});
