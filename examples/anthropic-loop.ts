// A complete Anthropic Messages agent loop with tool-dispatcher, against the bundled fake provider:
// first a hand-written loop with runToolUses, then the same task through the SDK's tool runner.
//
// Run it with `npx tsx examples/anthropic-loop.ts`. No network and no API key: the real
// `@anthropic-ai/sdk` client talks to a local server (./fake-provider) whose scripted "model"
// looks up an order, refunds it (the payment tool declines the first amount) and answers.

import Anthropic from '@anthropic-ai/sdk';
import { ToolError as SdkToolError } from '@anthropic-ai/sdk/lib/tools/ToolError';
import type { MessageParam } from '@anthropic-ai/sdk/resources/messages/messages';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolError, ToolRegistry } from '../index.js';
import { createAnthropicToolkit } from '../integrations/anthropic/index.js';
import {
  startFakeProvider,
  type MessagesBody,
  type MessagesReply,
  type ModelTurn,
} from './fake-provider/index.js';

/** What `runAnthropicLoop` reports. */
export interface AnthropicLoopSummary {
  /** The final answer of the hand-written loop. */
  answer: string;
  /** The final answer of the tool-runner loop. */
  runnerAnswer: string;
  /** Each tool result of the hand-written loop: `ok`, or the failure kind. */
  outcomes: string[];
}

/** Options for `runAnthropicLoop`. */
export interface AnthropicLoopOptions {
  /**
   * Where each transcript line goes.
   * @default console.log
   */
  write?: (line: string) => void;
}

function shopTools() {
  return new ToolRegistry()
    .register({
      name: 'orders.get',
      description: 'Look an order up by id',
      inputSchema: z.object({ orderId: z.string() }),
      idempotent: true,
      handler: ({ orderId }) => ({ orderId, total: 80, status: 'delivered' }),
    })
    .register({
      name: 'payments.refund',
      description: 'Refund part or all of an order',
      inputSchema: z.object({ orderId: z.string(), amount: z.number().positive() }),
      handler: ({ orderId, amount }) => {
        // A failure the tool reports itself: shown to the model as is, never retried.
        if (amount > 80) throw new ToolError(`Refund of ${amount} exceeds the order total of 80`);
        return { refunded: amount, orderId };
      },
    });
}

// The scripted model: it reads the tool results it was sent and adjusts.
function shopModel(turn: ModelTurn<MessagesBody>): MessagesReply {
  const results = turn.toolResults;
  if (results.length === 0) {
    return {
      text: 'Let me check the order.',
      toolUses: [
        { name: 'orders__get', input: { orderId: 'A-17' } },
        { name: 'payments__refund', input: { orderId: 'A-17', amount: 95 } },
        { name: 'loyalty__points', input: { orderId: 'A-17' } },
      ],
    };
  }
  if (results.some((result) => result.content.includes('exceeds the order total'))) {
    return { toolUses: [{ name: 'payments__refund', input: { orderId: 'A-17', amount: 80 } }] };
  }
  return { text: `Done: ${results[0]?.content ?? ''}` };
}

function print(write: (line: string) => void, message: MessageParam): void {
  const blocks =
    typeof message.content === 'string'
      ? [{ type: 'text' as const, text: message.content }]
      : message.content;
  for (const block of blocks) {
    if (block.type === 'text') write(`${message.role.padEnd(10)} ${block.text}`);
    if (block.type === 'tool_use')
      write(`${message.role.padEnd(10)} → ${block.name}(${JSON.stringify(block.input)})  [${block.id}]`);
    if (block.type === 'tool_result')
      write(
        `${'tool'.padEnd(10)} ← [${block.tool_use_id}]${block.is_error ? ' is_error' : ''} ${String(block.content)}`,
      );
  }
}

/**
 * Runs both loops against a fresh fake provider and prints their transcripts.
 *
 * @example
 * const { answer, runnerAnswer } = await runAnthropicLoop({ write: () => {} });
 */
export async function runAnthropicLoop(options: AnthropicLoopOptions = {}): Promise<AnthropicLoopSummary> {
  const write = options.write ?? ((line: string) => console.log(line));
  const provider = await startFakeProvider({ messages: shopModel });
  try {
    const registry = shopTools();
    const dispatcher = createDispatcher(defaultStack({ registry }));

    // The setup a team adds to its own loop:
    const client = new Anthropic({ baseURL: provider.anthropicBaseURL, apiKey: 'not-needed', maxRetries: 0 });
    const claude = createAnthropicToolkit({ registry, dispatcher, idempotencyScope: 'support-run-1' });

    write('— hand-written loop (runToolUses)');
    const messages: MessageParam[] = [{ role: 'user', content: 'Refund my order A-17, please.' }];
    const outcomes: string[] = [];
    print(write, messages[0]!);
    let answer = '';
    for (;;) {
      const response = await client.messages.create({
        model: 'fake-model',
        max_tokens: 1024,
        messages,
        tools: claude.tools(),
      });
      const assistant: MessageParam = { role: 'assistant', content: response.content };
      messages.push(assistant);
      print(write, assistant);
      if (response.stop_reason !== 'tool_use') {
        answer = response.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
        break;
      }
      const { message, outcomes: turnOutcomes } = await claude.runToolUses(response);
      outcomes.push(...turnOutcomes.map((outcome) => (outcome.ok ? 'ok' : outcome.kind)));
      messages.push(message);
      print(write, message);
    }

    write('— the SDK tool runner (runnableTools)');
    const runner = client.beta.messages.toolRunner({
      model: 'fake-model',
      max_tokens: 1024,
      messages: [{ role: 'user', content: 'Refund my order A-17, please.' }],
      tools: createAnthropicToolkit({
        registry,
        dispatcher,
        idempotencyScope: 'support-run-2',
        // The SDK's ToolError: the runner sends its text as it is, not prefixed "Error: ".
      }).runnableTools({ toolError: SdkToolError }),
    });
    for await (const message of runner) {
      print(write, { role: 'assistant', content: message.content as MessageParam['content'] });
      // The runner runs the tools once; asking for their results here only shows them.
      const results = await runner.generateToolResponse();
      if (results) print(write, results as MessageParam);
    }
    const final = await runner.done();
    const runnerAnswer = final.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
    return { answer, runnerAnswer, outcomes };
  } finally {
    await provider.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await runAnthropicLoop();
}
