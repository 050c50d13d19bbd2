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
import { createBudget } from '../index.js';
import { ToolCallFailed, toAiSdkTools } from '../integrations/ai-sdk/index.js';
import {
  checkoutAnswer,
  checkoutCalls,
  checkoutPrompt,
  createCheckout,
  replayedCharge,
} from './checkout/index.js';

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

type Call = { readonly id: string; readonly name: string; readonly args: unknown };
const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

/** The mock model: turn n answers with the n-th entry; it prints the tool results it is sent. */
function scriptedModel(turns: Array<readonly Call[] | string>, write: (line: string) => void) {
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
  const { registry, dispatcher, charged, events, summary } = createCheckout();

  // The 20-line setup: one ToolSet per run, its keys scoped to the run.
  const tools = toAiSdkTools({ registry, dispatcher, idempotencyScope: 'run-1', budget: createBudget(20) });
  write(`tools the model sees: ${Object.keys(tools).join(', ')}`);
  write(`user: ${checkoutPrompt}`);

  const model = scriptedModel(
    // The provider replays the charge (as after a dropped connection): the cache answers it.
    [checkoutCalls, [replayedCharge], checkoutAnswer],
    write,
  );
  const result = await generateText({ model, tools, stopWhen: stepCountIs(5), prompt: 'checkout' });

  const failures = result.steps
    .flatMap((step) => step.content)
    .flatMap((part) =>
      part.type === 'tool-error' && part.error instanceof ToolCallFailed ? [part.error.outcome.kind] : [],
    );
  for (const line of summary(failures)) write(line);
  return { text: result.text, charged, events, failures };
}

const entry = process.argv[1];
if (entry !== undefined && import.meta.url === pathToFileURL(entry).href) {
  await runAiSdkLoop();
}
