// A complete LangChain agent loop whose tools run through the dispatcher, printed as a transcript.
//
// Run it with `npx tsx examples/langchain-loop.ts`. No network and no API key: the model is
// LangChain's own fakeModel() playing a script. createAgent gets its tools from
// dispatcherMiddleware alone; the model calls seven of them at once, replays one call, reads
// every result and answers. On the way you see a retry, a timeout, a schema error, a declined
// card (ToolError), an unknown tool, and a replayed charge served from the idempotency cache,
// every one of them answered by the dispatcher in its own words.

import { pathToFileURL } from 'node:url';
import { AIMessage, createAgent, fakeModel, ToolMessage } from 'langchain';
import { z } from 'zod';
import {
  createBudget,
  createDispatcher,
  defaultStack,
  ToolError,
  ToolRegistry,
  TransientError,
  type Outcome,
} from '../index.js';
import { dispatcherMiddleware } from '../integrations/langchain/index.js';

/** What the run did, for a test or a summary line. */
export interface LangChainLoopSummary {
  /** The model's final answer. */
  readonly text: string;
  /** Orders really charged (a replayed call charges nothing). */
  readonly charged: readonly string[];
  /** How many structured events of each type the dispatcher emitted. */
  readonly events: Readonly<Record<string, number>>;
  /** The failure kinds the application saw in the ToolMessages' artifacts, in call order. */
  readonly failures: readonly string[];
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
 * Runs the loop once and writes its transcript.
 *
 * @example
 * const summary = await runLangChainLoop({ write: (line) => lines.push(line) });
 */
export async function runLangChainLoop({
  write = console.log,
}: {
  write?: (line: string) => void;
} = {}): Promise<LangChainLoopSummary> {
  const charged: string[] = [];
  const registry = checkoutTools(charged);
  const events: Record<string, number> = {};
  const dispatcher = createDispatcher(defaultStack({ registry, retry: { random: () => 0 } }), {
    onEvent: (event) => {
      events[event.type] = (events[event.type] ?? 0) + 1;
    },
  });

  const model = fakeModel()
    .respondWithTools([
      { id: 'call_1', name: 'docs__search', args: { query: 'refund policy' } },
      { id: 'call_2', name: 'inventory__check', args: { sku: 'A1' } },
      { id: 'call_3', name: 'orders__charge', args: { order: '1042', amount: 40 } },
      { id: 'call_4', name: 'orders__charge', args: { order: '1043', amount: 5000 } },
      { id: 'call_5', name: 'shipping__quote', args: { zip: '10115' } },
      { id: 'call_6', name: 'docs__search', args: { query: 7 } },
      { id: 'call_7', name: 'gift__wrap', args: {} },
    ])
    // The provider replays call_3 (as after a dropped connection): the cache answers it.
    .respondWithTools([{ id: 'call_3', name: 'orders__charge', args: { order: '1042', amount: 40 } }])
    .respond(
      new AIMessage(
        'Order 1042 is charged (once) and in stock; 1043 was declined and shipping had no quote in time.',
      ),
    );

  // The 20-line setup: the middleware brings the tools; keys are scoped to the thread.
  const agent = createAgent({
    model,
    middleware: [
      dispatcherMiddleware({
        registry,
        dispatcher,
        idempotencyScope: (runtime) => runtime.configurable?.['thread_id'] as string | undefined,
        budget: createBudget(20),
      }),
    ],
  });
  const prompt = 'Refund order 1042, charge its replacement and order 1043, and quote shipping to 10115.';
  write(`user: ${prompt}`);
  const result = await agent.invoke(
    { messages: [{ role: 'user', content: prompt }] },
    { configurable: { thread_id: 'thread-1' } },
  );

  const failures: string[] = [];
  for (const message of result.messages.slice(1)) {
    if (ToolMessage.isInstance(message)) {
      const outcome = message.artifact as Outcome;
      if (!outcome.ok) failures.push(outcome.kind);
      write(
        `  tool  ← ${message.tool_call_id} ${message.name ?? ''}: ${message.status === 'error' ? '[error] ' : ''}${String(message.content)}`,
      );
    } else if (AIMessage.isInstance(message)) {
      const calls = message.tool_calls ?? [];
      for (const call of calls) write(`model → ${call.id ?? '?'} ${call.name} ${JSON.stringify(call.args)}`);
      // fakeModel() echoes its input as the text of a tool-calling turn; only the answer is news.
      if (calls.length === 0) write(`model: ${message.text}`);
    }
  }
  write('---');
  write(`orders charged: ${charged.join(', ')} (${charged.length})`);
  write(`failures the app saw: ${failures.join(', ')}`);
  write(
    `events: ${['dispatch.retry', 'dispatch.timeout', 'idempotency.hit', 'dispatch.failure'].map((type) => `${type}=${events[type] ?? 0}`).join(' ')}`,
  );
  return { text: String(result.messages.at(-1)?.text ?? ''), charged, events, failures };
}

const entry = process.argv[1];
if (entry !== undefined && import.meta.url === pathToFileURL(entry).href) {
  await runLangChainLoop();
}
