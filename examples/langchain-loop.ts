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
import { createBudget, type Outcome } from '../index.js';
import { dispatcherMiddleware } from '../integrations/langchain/index.js';
import {
  checkoutAnswer,
  checkoutCalls,
  checkoutPrompt,
  createCheckout,
  replayedCharge,
} from './checkout/index.js';

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
  const { registry, dispatcher, charged, events, summary } = createCheckout();

  const model = fakeModel()
    .respondWithTools([...checkoutCalls])
    // The provider replays the charge (as after a dropped connection): the cache answers it.
    .respondWithTools([replayedCharge])
    .respond(new AIMessage(checkoutAnswer));

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
  write(`user: ${checkoutPrompt}`);
  const result = await agent.invoke(
    { messages: [{ role: 'user', content: checkoutPrompt }] },
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
  for (const line of summary(failures)) write(line);
  return { text: String(result.messages.at(-1)?.text ?? ''), charged, events, failures };
}

const entry = process.argv[1];
if (entry !== undefined && import.meta.url === pathToFileURL(entry).href) {
  await runLangChainLoop();
}
