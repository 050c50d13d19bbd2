// A complete OpenAI Chat Completions agent loop with tool-dispatcher, against the bundled fake provider.
//
// Run it with `npx tsx examples/openai-loop.ts`. No network and no API key: the real `openai`
// client talks to a local server (./fake-provider) whose scripted "model" plans a trip in three
// turns: parallel calls (one retried, one with bad arguments), a booking and an unknown tool, and
// a final answer built from what the tools said.

import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import {
  createBudget,
  createDispatcher,
  defaultStack,
  ToolError,
  ToolRegistry,
  TransientError,
} from '../index.js';
import { createOpenAIToolkit } from '../integrations/openai/index.js';
import { startFakeProvider, type ChatBody, type ChatReply, type ModelTurn } from './fake-provider/index.js';

/** What `runOpenAILoop` reports. */
export interface OpenAILoopSummary {
  /** The model's final answer. */
  answer: string;
  /** Requests sent to the provider. */
  turns: number;
  /** Each tool call's outcome kind (`ok` for a success), in call order over the run. */
  outcomes: string[];
}

/** Options for `runOpenAILoop`. */
export interface OpenAILoopOptions {
  /**
   * Where each transcript line goes.
   * @default console.log
   */
  write?: (line: string) => void;
}

function tripTools() {
  let weatherCalls = 0;
  return new ToolRegistry()
    .register({
      name: 'flights.search',
      description: 'Find flights between two airports',
      inputSchema: z.object({ from: z.string().length(3), to: z.string().length(3) }),
      idempotent: true,
      handler: ({ from, to }) => ({
        flights: [
          { id: 'LH1166', from, to, eur: 189 },
          { id: 'TP555', from, to, eur: 142 },
        ],
      }),
    })
    .register({
      name: 'weather.forecast',
      description: 'The forecast for a city',
      inputSchema: z.object({ city: z.string() }),
      idempotent: true,
      handler: ({ city }) => {
        // The first call hits a busy backend: the dispatcher retries it.
        if (++weatherCalls === 1) throw new TransientError('weather backend busy');
        return `${city}: sunny, 24°C`;
      },
    })
    .register({
      name: 'booking.create',
      description: 'Book a flight',
      inputSchema: z.object({ flightId: z.string(), passengers: z.number().int().min(1) }),
      handler: ({ flightId, passengers }) => {
        if (passengers > 9) throw new ToolError('Group bookings need a travel agent');
        return { confirmation: `BK-${flightId}`, passengers };
      },
    });
}

// The scripted model: what a real one might do, reading the tool results it was sent.
function tripModel(turn: ModelTurn<ChatBody>): ChatReply {
  if (turn.turn === 0) {
    return {
      toolCalls: [
        { name: 'flights__search', arguments: { from: 'BER', to: 'LIS' } },
        { name: 'weather__forecast', arguments: { city: 'Lisbon' } },
        { name: 'flights__search', arguments: '{"from": "Berlin"' },
      ],
    };
  }
  if (turn.turn === 1) {
    const found = JSON.parse(turn.toolResults[0]?.content ?? '{"flights":[]}') as {
      flights: Array<{ id: string; eur: number }>;
    };
    const cheapest = [...found.flights].sort((a, b) => a.eur - b.eur)[0];
    return {
      toolCalls: [
        { name: 'booking__create', arguments: { flightId: cheapest?.id ?? 'none', passengers: 1 } },
        { name: 'hotels__search', arguments: { city: 'Lisbon' } },
      ],
    };
  }
  const [booking] = turn.toolResults;
  const confirmation = /"confirmation":"([^"]+)"/.exec(booking?.content ?? '')?.[1] ?? 'no booking';
  return {
    text: `Booked ${confirmation}. I could not search hotels (no such tool), so please book one yourself.`,
  };
}

/**
 * Runs the loop against a fresh fake provider and prints the transcript.
 *
 * @example
 * const { answer } = await runOpenAILoop({ write: () => {} });
 */
export async function runOpenAILoop(options: OpenAILoopOptions = {}): Promise<OpenAILoopSummary> {
  const write = options.write ?? ((line: string) => console.log(line));
  const provider = await startFakeProvider({ chat: tripModel });
  try {
    const registry = tripTools();
    const dispatcher = createDispatcher(defaultStack({ registry, retry: { baseDelayMs: 10 } }));

    // The setup a team adds to its own loop:
    const client = new OpenAI({ baseURL: provider.openaiBaseURL, apiKey: 'not-needed', maxRetries: 0 });
    const kit = createOpenAIToolkit({ registry, dispatcher, idempotencyScope: 'trip-run-1' });
    const budget = createBudget(20);
    const messages: ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Fly me from Berlin to Lisbon, cheapest flight.' },
    ];
    const outcomes: string[] = [];
    write(`user       ${String(messages[0]!.content)}`);

    for (let turn = 1; ; turn++) {
      const completion = await client.chat.completions.create({
        model: 'fake-model',
        messages,
        tools: kit.chatTools(),
      });
      const assistant = completion.choices[0]!.message;
      messages.push(assistant);
      if (!assistant.tool_calls?.length) {
        write(`assistant  ${assistant.content ?? ''}`);
        return { answer: assistant.content ?? '', turns: turn, outcomes };
      }
      for (const call of assistant.tool_calls) {
        if (call.type === 'function')
          write(`assistant  → ${call.function.name}(${call.function.arguments})  [${call.id}]`);
      }
      const result = await kit.runChatToolCalls(assistant, { budget });
      messages.push(...result.messages);
      result.messages.forEach((message, i) => {
        const outcome = result.outcomes[i]!;
        outcomes.push(outcome.ok ? 'ok' : outcome.kind);
        const attempts = outcome.attempts > 1 ? ` (${outcome.attempts} attempts)` : '';
        write(`tool       ← [${message.tool_call_id}]${attempts} ${String(message.content)}`);
      });
    }
  } finally {
    await provider.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await runOpenAILoop();
}
