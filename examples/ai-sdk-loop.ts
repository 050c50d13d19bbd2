// A complete Vercel AI SDK agent loop whose tools run through the dispatcher, printed as a transcript.
//
// Run it with `npx tsx examples/ai-sdk-loop.ts`. No network and no API key: the model is the AI
// SDK's own MockLanguageModelV3 (from 'ai/test') playing a script. It calls seven tools at once,
// replays one call, reads every result and answers. On the way you see a retry, a timeout, a
// schema error, a declined card (ToolError), an unknown tool the SDK answers itself, and a
// replayed charge served from the idempotency cache.

import { pathToFileURL } from 'node:url';
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';
import {
  createBudget,
  createDispatcher,
  defaultStack,
  ToolError,
  ToolRegistry,
  TransientError,
} from '../index.js';
import { ToolCallFailed, toAiSdkTools } from '../integrations/ai-sdk/index.js';

/** What the run did, for a test or a summary line. */
export interface AiSdkLoopSummary {
  /** The model's final answer. */
  readonly text: string;
  /** Orders really charged (a replayed call charges nothing). */
  readonly charged: readonly string[];
  /** How many structured events of each type the dispatcher emitted. */
  readonly events: Readonly<Record<string, number>>;
  /** The failure kinds the application saw through `ToolCallFailed.outcome`, in call order. */
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

type Call = { id: string; name: string; args: unknown };
const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

/** The mock model: turn n answers with the n-th entry; it prints the tool results it is sent. */
function scriptedModel(turns: Array<Call[] | string>, write: (line: string) => void) {
  let turn = 0;
  return new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => {
      const last = prompt.at(-1);
      if (last?.role === 'tool') {
        for (const part of last.content) {
          if (part.type !== 'tool-result') continue;
          const { type, value } = part.output as { type: string; value: unknown };
          write(
            `  tool  ← ${part.toolCallId} ${part.toolName}: ${type === 'error-text' ? '[error] ' : ''}${String(value)}`,
          );
        }
      }
      const script = turns[turn++] ?? 'I have nothing more to do.';
      if (typeof script === 'string') {
        write(`model: ${script}`);
        return {
          content: [{ type: 'text', text: script }],
          finishReason: { unified: 'stop', raw: undefined },
          usage,
          warnings: [],
        };
      }
      for (const call of script) write(`model → ${call.id} ${call.name} ${JSON.stringify(call.args)}`);
      return {
        content: script.map((call) => ({
          type: 'tool-call',
          toolCallId: call.id,
          toolName: call.name,
          input: JSON.stringify(call.args),
        })),
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage,
        warnings: [],
      };
    },
  });
}

/**
 * Runs the loop once and writes its transcript.
 *
 * @example
 * const summary = await runAiSdkLoop({ write: (line) => lines.push(line) });
 */
export async function runAiSdkLoop({
  write = console.log,
}: {
  write?: (line: string) => void;
} = {}): Promise<AiSdkLoopSummary> {
  const charged: string[] = [];
  const registry = checkoutTools(charged);
  const events: Record<string, number> = {};
  const dispatcher = createDispatcher(defaultStack({ registry, retry: { random: () => 0 } }), {
    onEvent: (event) => {
      events[event.type] = (events[event.type] ?? 0) + 1;
    },
  });

  // The 20-line setup: one ToolSet per run, its keys scoped to the run.
  const tools = toAiSdkTools({ registry, dispatcher, idempotencyScope: 'run-1', budget: createBudget(20) });
  write(`tools the model sees: ${Object.keys(tools).join(', ')}`);
  write('user: Refund order 1042, charge its replacement and order 1043, and quote shipping to 10115.');

  const model = scriptedModel(
    [
      [
        { id: 'call_1', name: 'docs__search', args: { query: 'refund policy' } },
        { id: 'call_2', name: 'inventory__check', args: { sku: 'A1' } },
        { id: 'call_3', name: 'orders__charge', args: { order: '1042', amount: 40 } },
        { id: 'call_4', name: 'orders__charge', args: { order: '1043', amount: 5000 } },
        { id: 'call_5', name: 'shipping__quote', args: { zip: '10115' } },
        { id: 'call_6', name: 'docs__search', args: { query: 7 } },
        { id: 'call_7', name: 'gift__wrap', args: {} },
      ],
      // The provider replays call_3 (as after a dropped connection): the cache answers it.
      [{ id: 'call_3', name: 'orders__charge', args: { order: '1042', amount: 40 } }],
      'Order 1042 is charged (once) and in stock; 1043 was declined and shipping had no quote in time.',
    ],
    write,
  );
  const result = await generateText({ model, tools, stopWhen: stepCountIs(5), prompt: 'checkout' });

  const failures = result.steps
    .flatMap((step) => step.content)
    .flatMap((part) =>
      part.type === 'tool-error' && part.error instanceof ToolCallFailed ? [part.error.outcome.kind] : [],
    );
  write('---');
  write(`orders charged: ${charged.join(', ')} (${charged.length})`);
  write(`failures the app saw: ${failures.join(', ')}`);
  write(
    `events: ${['dispatch.retry', 'dispatch.timeout', 'idempotency.hit', 'dispatch.failure'].map((type) => `${type}=${events[type] ?? 0}`).join(' ')}`,
  );
  return { text: result.text, charged, events, failures };
}

const entry = process.argv[1];
if (entry !== undefined && import.meta.url === pathToFileURL(entry).href) {
  await runAiSdkLoop();
}
