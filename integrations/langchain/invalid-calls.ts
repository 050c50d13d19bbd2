/**
 * Tool calls whose JSON the provider could not parse, turned into calls the middleware answers.
 * @module
 */

import { AIMessage, type BaseMessage } from '@langchain/core/messages';

// The args of a repaired call: the raw text under one key no schema would declare.
const rawArgumentsKey = 'tool-dispatcher:raw-arguments';

/**
 * Provider integrations put a call with unparseable arguments in `invalid_tool_calls`, and
 * createAgent routes only `tool_calls` to tools: the call would get no answer and the run would
 * end on it. For each such call to one of `ours`, this returns a copy of the message (same id,
 * so the agent's reducer replaces it) with the call moved to `tool_calls`, its raw text kept in
 * the args; `undefined` when there is nothing to move.
 */
export function withInvalidCallsMoved(
  message: BaseMessage | undefined,
  isOurs: (wireName: string) => boolean,
): AIMessage | undefined {
  if (message === undefined || !AIMessage.isInstance(message) || typeof message.id !== 'string')
    return undefined;
  const invalid = message.invalid_tool_calls ?? [];
  const moved = invalid.filter((call) => typeof call.name === 'string' && isOurs(call.name));
  if (moved.length === 0) return undefined;
  return new AIMessage({
    id: message.id,
    content: message.content,
    ...(message.name === undefined ? {} : { name: message.name }),
    additional_kwargs: message.additional_kwargs,
    response_metadata: message.response_metadata,
    ...(message.usage_metadata === undefined ? {} : { usage_metadata: message.usage_metadata }),
    tool_calls: [
      ...(message.tool_calls ?? []),
      ...moved.map((call) => ({
        type: 'tool_call' as const,
        id:
          typeof call.id === 'string' && call.id.length > 0
            ? call.id
            : `langchain-${globalThis.crypto.randomUUID()}`,
        name: call.name as string,
        args: { [rawArgumentsKey]: typeof call.args === 'string' ? call.args : '' },
      })),
    ],
    invalid_tool_calls: invalid.filter((call) => !moved.includes(call)),
  });
}

/** The raw JSON text of a call moved by `withInvalidCallsMoved`, or `undefined` for any other call. */
export function rawArgumentsOf(args: unknown): string | undefined {
  if (typeof args !== 'object' || args === null) return undefined;
  const keys = Object.keys(args);
  const raw = (args as Record<string, unknown>)[rawArgumentsKey];
  return keys.length === 1 && typeof raw === 'string' ? raw : undefined;
}
