// A complete OpenAI Agents SDK loop whose tools run through the dispatcher, printed as a transcript.
//
// Run it with `npx tsx examples/openai-agents-loop.ts`. No network and no API key: the Agents
// SDK's own OpenAI client talks to the bundled local Responses server (./fake-provider/), which
// enforces the API's rules (tool names, one output per call id, in order) and plays a scripted
// model. The model calls seven tools at once, reads every result and answers; then the client
// retries the whole request under the same run id and the model repeats the charge. On the way
// you see a retry, a timeout, a schema error, a declined card (ToolError), an unknown tool the
// Runner answers itself, and the repeated charge served from the idempotency cache.

import { pathToFileURL } from 'node:url';
import { Agent, OpenAIProvider, Runner } from '@openai/agents';
import { createBudget } from '../index.js';
import { toAgentsTools } from '../integrations/openai-agents/index.js';
import {
  checkoutAnswer,
  checkoutCalls,
  checkoutPrompt,
  createCheckout,
  replayedCharge,
} from './checkout/index.js';
import { scripted, startFakeProvider } from './fake-provider/index.js';

/** What the run did, for a test or a summary line. */
export interface AgentsLoopSummary {
  /** The agent's final output. */
  readonly text: string;
  /** Orders really charged (a replayed call charges nothing). */
  readonly charged: readonly string[];
  /** How many structured events of each type the dispatcher emitted. */
  readonly events: Readonly<Record<string, number>>;
  /** The failure kinds the application heard through `onOutcome`, in the order calls settled. */
  readonly failures: readonly string[];
  /** The HTTP status of every request the SDK made to the local server. */
  readonly statuses: readonly number[];
}

/**
 * Runs the loop once against a local Responses server and writes its transcript.
 *
 * @example
 * const summary = await runAgentsLoop({ write: (line) => lines.push(line) });
 */
export async function runAgentsLoop({
  write = console.log,
}: {
  write?: (line: string) => void;
} = {}): Promise<AgentsLoopSummary> {
  const { registry, dispatcher, charged, events, summary } = createCheckout();

  const asResponses = (call: (typeof checkoutCalls)[number]) => ({
    call_id: call.id,
    name: call.name,
    arguments: call.args,
  });
  const calls = checkoutCalls.map(asResponses);
  const provider = await startFakeProvider({
    responses: scripted(
      [
        { calls },
        { text: checkoutAnswer },
        // The retried request: the model repeats call_3 (the Runner itself drops a call id it has
        // already answered within one run, so the repeat comes in a second run).
        { calls: [asResponses(replayedCharge)] },
        { text: 'Order 1042 was already charged.' },
      ].map((reply) => (turn) => {
        for (const result of turn.toolResults) write(`  tool  ← ${result.id}: ${result.content}`);
        for (const call of reply.calls ?? [])
          write(`model → ${call.call_id} ${call.name} ${JSON.stringify(call.arguments)}`);
        if (reply.text !== undefined) write(`model: ${reply.text}`);
        return reply;
      }),
    ),
  });

  try {
    // The 20-line setup: the tools for the agent, keys scoped to each run's context.
    const failures: string[] = [];
    const agent = new Agent({
      name: 'checkout',
      model: 'gpt-test',
      tools: toAgentsTools({
        registry,
        dispatcher,
        idempotencyScope: (runContext) => (runContext.context as { runId: string }).runId,
        budget: createBudget(20),
        onOutcome: (outcome) => {
          if (!outcome.ok) failures.push(outcome.kind);
        },
      }),
    });
    const runner = new Runner({
      modelProvider: new OpenAIProvider({ apiKey: 'test', baseURL: provider.openaiBaseURL }),
      tracingDisabled: true,
    });
    const prompt = checkoutPrompt;
    write(`tools the model sees: ${agent.tools.map((entry) => entry.name).join(', ')}`);
    write(`user: ${prompt}`);
    const options = { context: { runId: 'run-1' }, toolNotFoundBehavior: 'return_error_to_model' } as const;
    const result = await runner.run(agent, prompt, options);
    write('(the client retries the request under the same run id)');
    await runner.run(agent, prompt, options);

    const statuses = provider.requests.map((request) => request.status);
    for (const line of summary(failures, 'heard')) write(line);
    write(`requests to the local Responses server: ${statuses.join(', ')}`);
    return { text: String(result.finalOutput ?? ''), charged, events, failures, statuses };
  } finally {
    await provider.close();
  }
}

const entry = process.argv[1];
if (entry !== undefined && import.meta.url === pathToFileURL(entry).href) {
  await runAgentsLoop();
}
