// OpenAI Chat Completions (`POST /v1/chat/completions`): the request checks, and replies built from a script.

import type {
  ChatCompletion,
  ChatCompletionCreateParams,
  ChatCompletionMessageToolCall,
} from 'openai/resources/chat/completions';
import type { HttpReply, Route } from './http.js';
import { counter, isHttpReply, textOf, type Model, type ToolResultView } from './model.js';
import { nameProblem, openaiError, schemaProblem } from './openai-rules.js';

/** A tool call the scripted model makes. */
export interface ChatToolCallReply {
  /** The call id; generated (`call_<n>`) when omitted. */
  id?: string;
  /** The wire name, e.g. `search__web`. */
  name: string;
  /** The arguments: a JSON string as the model wrote it, or a value to stringify. @default '{}' */
  arguments?: string | Record<string, unknown>;
  /** `custom` for a free-form custom tool call (its text in `input`). @default 'function' */
  type?: 'function' | 'custom';
  /** A custom call's free-form input. */
  input?: string;
}

/** What the scripted model answers a Chat Completions request with. */
export interface ChatReply {
  /** The assistant's text. */
  text?: string;
  /** Tool calls, in order; their presence makes `finish_reason: 'tool_calls'`. */
  toolCalls?: ChatToolCallReply[];
}

/** The Chat Completions body the scripted model sees. */
export type ChatBody = ChatCompletionCreateParams;

/** Options for the Chat Completions route. */
export interface ChatRouteOptions {
  /** The scripted model. */
  model: Model<ChatBody, ChatReply>;
  /** `'per-response'` numbers generated ids `call_0…` afresh in each reply, as some providers do. */
  callIds: 'unique' | 'per-response';
}

/** The Chat Completions route. */
export function chatRoute({ model, callIds }: ChatRouteOptions): Route {
  const completionId = counter('chatcmpl');
  const uniqueCallId = counter('call');
  let turn = 0;
  return async (raw, headers, signal) => {
    const body = raw as unknown as ChatBody;
    const problem = chatProblem(body);
    if (problem !== undefined) return problem;
    const answer = await model({
      body,
      turn: turn++,
      toolResults: chatToolResults(body),
      userText: lastUserText(body),
      headers,
      signal,
    });
    if (isHttpReply(answer)) return answer;
    const perResponse = counter('call');
    const nextId = callIds === 'per-response' ? perResponse : uniqueCallId;
    const toolCalls: ChatCompletionMessageToolCall[] = (answer.toolCalls ?? []).map((call) =>
      call.type === 'custom'
        ? { id: call.id ?? nextId(), type: 'custom', custom: { name: call.name, input: call.input ?? '' } }
        : {
            id: call.id ?? nextId(),
            type: 'function',
            function: {
              name: call.name,
              arguments:
                typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {}),
            },
          },
    );
    const completion: ChatCompletion = {
      id: completionId(),
      object: 'chat.completion',
      created: 1_767_225_600,
      model: body.model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: answer.text ?? null,
            refusal: null,
            ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
          },
          finish_reason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
          logprobs: null,
        },
      ],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    };
    return { status: 200, body: completion };
  };
}

// The checks the real API makes that an integration can get wrong: tool names (also in the
// history), root object schemas, and one tool message per tool_call_id right after the call.
function chatProblem(body: ChatBody): HttpReply | undefined {
  if (body.stream === true) return openaiError('fake provider: streaming is not emulated', 'stream');
  for (const [i, tool] of (body.tools ?? []).entries()) {
    if (tool.type === 'function') {
      const problem =
        nameProblem(tool.function?.name, `tools[${i}].function.name`) ??
        schemaProblem(
          tool.function.name,
          tool.function.parameters,
          tool.function.strict === true,
          `tools[${i}].function.parameters`,
        );
      if (problem !== undefined) return problem;
    } else if (tool.type === 'custom') {
      const problem = nameProblem(tool.custom?.name, `tools[${i}].custom.name`);
      if (problem !== undefined) return problem;
    }
  }
  const messages = body.messages ?? [];
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.role === 'tool') {
      return openaiError(
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
        `messages.[${i}].role`,
      );
    }
    if (message.role !== 'assistant' || !message.tool_calls?.length) continue;
    const ids: string[] = [];
    for (const [j, call] of message.tool_calls.entries()) {
      const name = call.type === 'custom' ? call.custom.name : call.function.name;
      const problem = nameProblem(
        name,
        `messages[${i}].tool_calls[${j}].${call.type === 'custom' ? 'custom' : 'function'}.name`,
      );
      if (problem !== undefined) return problem;
      ids.push(call.id);
    }
    let k = 0;
    while (messages[i + 1 + k]?.role === 'tool') {
      const reply = messages[i + 1 + k] as { tool_call_id?: unknown; content?: unknown };
      if (typeof reply.content !== 'string' && !Array.isArray(reply.content)) {
        return openaiError(
          `Invalid type for 'messages[${i + 1 + k}].content': expected one of a string or array of objects, but got ${reply.content === null ? 'null' : typeof reply.content} instead.`,
          `messages[${i + 1 + k}].content`,
          'invalid_type',
        );
      }
      if (reply.tool_call_id !== ids[k]) {
        // The real API reports only missing ids; answering out of order or twice is this fake's stricter rule.
        return openaiError(
          `fake provider rule: messages[${i + 1 + k}] must answer tool_call_id ${ids[k] ?? '(none left)'} (one tool message per call, in call order), got ${String(reply.tool_call_id)}`,
          `messages[${i + 1 + k}].tool_call_id`,
        );
      }
      k++;
    }
    if (k < ids.length) {
      return openaiError(
        `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${ids.slice(k).join(', ')}`,
        'messages',
      );
    }
    i += k;
  }
  return undefined;
}

function chatToolResults(body: ChatBody): ToolResultView[] {
  const messages = body.messages ?? [];
  const results: ToolResultView[] = [];
  for (let i = messages.length - 1; i >= 0 && messages[i]!.role === 'tool'; i--) {
    const message = messages[i] as { tool_call_id: string; content: unknown };
    results.unshift({ id: message.tool_call_id, content: textOf(message.content), isError: false });
  }
  return results;
}

function lastUserText(body: ChatBody): string | undefined {
  const user = [...(body.messages ?? [])].reverse().find((message) => message.role === 'user');
  return user === undefined ? undefined : textOf(user.content);
}
