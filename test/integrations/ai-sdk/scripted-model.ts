// A MockLanguageModelV3 that plays a script of turns and records every prompt and tool list it was sent.

import { MockLanguageModelV3, convertArrayToReadableStream } from 'ai/test';

// The provider-spec types, read off the mock so the suite depends on `ai` alone.
type LanguageModelV3CallOptions = Parameters<MockLanguageModelV3['doGenerate']>[0];
type LanguageModelV3GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;
type LanguageModelV3Content = LanguageModelV3GenerateResult['content'][number];
type LanguageModelV3StreamPart =
  Awaited<ReturnType<MockLanguageModelV3['doStream']>>['stream'] extends ReadableStream<infer Part>
    ? Part
    : never;

/** One tool call in a scripted turn; `input` is the raw JSON text the model "wrote". */
export interface ScriptedCall {
  id: string;
  name: string;
  input: string;
}

/** A turn: tool calls, or the final text. */
export type Turn = ScriptedCall[] | string;

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

function contentOf(turn: Turn): LanguageModelV3Content[] {
  if (typeof turn === 'string') return [{ type: 'text', text: turn }];
  return turn.map((call) => ({
    type: 'tool-call',
    toolCallId: call.id,
    toolName: call.name,
    input: call.input,
  }));
}

function finishOf(turn: Turn): LanguageModelV3GenerateResult['finishReason'] {
  return { unified: typeof turn === 'string' ? 'stop' : 'tool-calls', raw: undefined };
}

/** A mock model that answers turn n of the script on its n-th call (generate or stream). */
export function scriptedModel(turns: Turn[]) {
  const calls: LanguageModelV3CallOptions[] = [];
  const next = (options: LanguageModelV3CallOptions): Turn => {
    calls.push(options);
    const turn = turns[calls.length - 1];
    if (turn === undefined) throw new Error(`the script has no turn ${calls.length}`);
    return turn;
  };
  const model = new MockLanguageModelV3({
    doGenerate: async (options) => {
      const turn = next(options);
      return { content: contentOf(turn), finishReason: finishOf(turn), usage, warnings: [] };
    },
    doStream: async (options) => {
      const turn = next(options);
      const parts: LanguageModelV3StreamPart[] = [{ type: 'stream-start', warnings: [] }];
      if (typeof turn === 'string') {
        parts.push(
          { type: 'text-start', id: 't' },
          { type: 'text-delta', id: 't', delta: turn },
          { type: 'text-end', id: 't' },
        );
      } else {
        for (const call of turn) {
          parts.push({ type: 'tool-call', toolCallId: call.id, toolName: call.name, input: call.input });
        }
      }
      parts.push({ type: 'finish', finishReason: finishOf(turn), usage });
      return { stream: convertArrayToReadableStream(parts) };
    },
  });
  /** The tool results the model was sent at turn `n` (1-based), as `[toolCallId, output]`. */
  const resultsSentAt = (n: number): Array<[string, { type: string; value: unknown }]> => {
    const prompt = calls[n - 1]?.prompt ?? [];
    const last = prompt.at(-1);
    if (last?.role !== 'tool') return [];
    return last.content.flatMap((part) =>
      part.type === 'tool-result' ? [[part.toolCallId, part.output as { type: string; value: unknown }]] : [],
    );
  };
  return { model, calls, resultsSentAt };
}
