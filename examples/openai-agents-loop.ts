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
import { z } from 'zod';
import {
  createBudget,
  createDispatcher,
  defaultStack,
  ToolError,
  ToolRegistry,
  TransientError,
} from '../index.js';
import { toAgentsTools } from '../integrations/openai-agents/index.js';
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

/** The checkout tools: in-memory backends, each scripted to show one behaviour. */
function checkoutTools(charged: string[]) {
  let inventoryRequests = 0;
  return new ToolRegistry()
    .register({
      name: 'docs.search',
      description: 'Searches the help centre.',
      inputSchema: z.object({ query: z.string() }),
      idempotent: true,
      handler: ({ query }) => ({ hits: [`${query}: 30 days, original payment method`] }),
    })
    .register({
      name: 'inventory.check',
      description: 'Stock for a SKU (its backend drops the first request).',
      inputSchema: z.object({ sku: z.string() }),
      idempotent: true,
      handler: ({ sku }) => {
        inventoryRequests += 1;
        if (inventoryRequests === 1) throw new TransientError('connection reset');
        return { sku, inStock: 3 };
      },
    })
    .register({
      name: 'orders.charge',
      description: 'Charges an order (cards decline above 1000).',
      inputSchema: z.object({ order: z.string(), amount: z.number().positive() }),
      handler: ({ order, amount }) => {
        if (amount > 1000) throw new ToolError(`card declined for order ${order}`);
        charged.push(order);
        return `charged ${amount} to order ${order}`;
      },
    })
    .register({
      name: 'shipping.quote',
      description: 'A shipping quote (its carrier never answers in time).',
      inputSchema: z.object({ zip: z.string() }),
      timeoutMs: 30,
      handler: (_args, ctx) =>
        new Promise<never>((_resolve, reject) =>
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true }),
        ),
    });
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
  const charged: string[] = [];
  const registry = checkoutTools(charged);
  const events: Record<string, number> = {};
  const dispatcher = createDispatcher(defaultStack({ registry, retry: { random: () => 0 } }), {
    onEvent: (event) => {
      events[event.type] = (events[event.type] ?? 0) + 1;
    },
  });

  const calls = [
    { call_id: 'call_1', name: 'docs__search', arguments: { query: 'refund policy' } },
    { call_id: 'call_2', name: 'inventory__check', arguments: { sku: 'A1' } },
    { call_id: 'call_3', name: 'orders__charge', arguments: { order: '1042', amount: 40 } },
    { call_id: 'call_4', name: 'orders__charge', arguments: { order: '1043', amount: 5000 } },
    { call_id: 'call_5', name: 'shipping__quote', arguments: { zip: '10115' } },
    { call_id: 'call_6', name: 'docs__search', arguments: { query: 7 } },
    { call_id: 'call_7', name: 'gift__wrap', arguments: {} },
  ];
  const answer =
    'Order 1042 is charged (once) and in stock; 1043 was declined and shipping had no quote in time.';
  const provider = await startFakeProvider({
    responses: scripted(
      [
        { calls },
        { text: answer },
        // The retried request: the model repeats call_3 (the Runner itself drops a call id it has
        // already answered within one run, so the repeat comes in a second run).
        { calls: [{ call_id: 'call_3', name: 'orders__charge', arguments: { order: '1042', amount: 40 } }] },
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
    const prompt = 'Refund order 1042, charge its replacement and order 1043, and quote shipping to 10115.';
    write(`tools the model sees: ${agent.tools.map((entry) => entry.name).join(', ')}`);
    write(`user: ${prompt}`);
    const options = { context: { runId: 'run-1' }, toolNotFoundBehavior: 'return_error_to_model' } as const;
    const result = await runner.run(agent, prompt, options);
    write('(the client retries the request under the same run id)');
    await runner.run(agent, prompt, options);

    const statuses = provider.requests.map((request) => request.status);
    write('---');
    write(`orders charged: ${charged.join(', ')} (${charged.length})`);
    write(`failures the app heard: ${failures.join(', ')}`);
    write(
      `events: ${['dispatch.retry', 'dispatch.timeout', 'idempotency.hit', 'dispatch.failure'].map((type) => `${type}=${events[type] ?? 0}`).join(' ')}`,
    );
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
