// toAgentsTools and the rules every host keeps: only offered tools run, missing host values never
// fail a call, and every result is answered, rendered field by field or as `internal`.

import { Agent, OpenAIProvider, RunContext, Runner } from '@openai/agents';
import { afterEach, describe, expect, it } from 'vitest';
import { toAgentsTools, type AgentsToolCall } from '../../../integrations/openai-agents/index.js';
import type { Outcome } from '../../../index.js';
import {
  scripted,
  startFakeProvider,
  type FakeProvider,
  type ResponsesBody,
  type ResponsesReply,
  type ToolResultView,
} from '../../../examples/fake-provider/index.js';
import { oddResultsFixture } from '../openai/odd-results.js';

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

const agentWith = (tools: ReturnType<typeof toAgentsTools>) =>
  new Agent({ name: 'tester', model: 'gpt-test', tools });

describe('toAgentsTools: host rules', () => {
  it('runs only the tools it offered: the Runner refuses a later tool, and no tool answers to a registry name', async () => {
    const f = oddResultsFixture();
    const tools = toAgentsTools({ registry: f.registry, dispatcher: f.dispatcher });
    f.registerLater();
    const { runner, seen } = await runnerFor([
      { calls: [{ call_id: 'c1', name: 'admin_wipe', arguments: {} }] },
      { calls: [{ call_id: 'c2', name: 'plain__get', arguments: {} }] },
      { text: 'done' },
    ]);
    await runner.run(agentWith(tools), 'go', { toolNotFoundBehavior: 'return_error_to_model' });
    expect(seen.slice(1).flatMap((results) => results.map(({ id, content }) => [id, content]))).toEqual([
      ['c1', expect.stringContaining("'admin_wipe' not found")],
      ['c2', '{"plain":true}'],
    ]);
    expect(f.ran).toEqual(['plain.get']);
    // Each tool dispatches its own registry name; the Runner finds tools by their wire names only
    // (and the API refuses a dotted name in the history, so such a call never comes back).
    expect(tools.map((tool) => tool.name)).not.toContain('plain.get');
  });

  it('answers a tool invoked without call details or a run context', async () => {
    const f = oddResultsFixture();
    const [plain] = toAgentsTools({
      registry: f.registry,
      dispatcher: f.dispatcher,
      idempotencyScope: (runContext) => (runContext.context as { runId?: string } | undefined)?.runId,
    });
    await expect(plain!.invoke(new RunContext({}), '{}')).resolves.toBe('{"plain":true}');
    await expect(plain!.invoke(undefined as never, '{}')).resolves.toBe('{"plain":true}');
  });

  it('renders a throwing field as a marker, cuts a 50 000-level result, and fails an unreadable one as internal', async () => {
    const f = oddResultsFixture();
    const outcomes: Array<[string, Outcome]> = [];
    const tools = toAgentsTools({
      registry: f.registry,
      dispatcher: f.dispatcher,
      onOutcome: (outcome: Outcome, call: AgentsToolCall) => outcomes.push([call.wireName, outcome]),
    });
    const { runner, seen } = await runnerFor([
      {
        calls: [
          { call_id: 'g', name: 'getter__get', arguments: {} },
          { call_id: 'd', name: 'deep__get', arguments: {} },
          { call_id: 'u', name: 'hidden__get', arguments: {} },
        ],
      },
      { text: 'done' },
    ]);
    await runner.run(agentWith(tools), 'go');
    const [getter, deep, hidden] = seen[1]!.map(({ content }) => content);
    expect(getter).toBe(f.getterText);
    expect(deep).toMatch(f.deepText);
    expect(hidden).toMatch(f.hiddenText('hidden__get'));
    const kinds = Object.fromEntries(
      outcomes.map(([wire, outcome]) => [wire, outcome.ok ? 'ok' : outcome.kind]),
    );
    expect(kinds).toEqual({ getter__get: 'ok', deep__get: 'ok', hidden__get: 'internal' });
  });
});
