/**
 * A local stand-in for the OpenAI and Anthropic APIs, for tests and examples: one node:http server
 * on `127.0.0.1` and a free port that answers Chat Completions (`POST /v1/chat/completions`),
 * Responses (`POST /v1/responses`, with `previous_response_id`) and Anthropic Messages
 * (`POST /v1/messages`, with the message-threads beta the 1.14 tool runner uses) in the documented
 * shapes. A scripted model per API decides each reply. The server enforces the rules an
 * integration can break, with the real error texts where they are known (rules this fake adds are
 * marked `fake provider rule:`):
 *
 * - tool names match `^[a-zA-Z0-9_-]+$` and ≤ 64 characters (OpenAI), `^[a-zA-Z0-9_-]{1,128}$`
 *   (Anthropic), in the tool list and in the history;
 * - tool schemas have a root `type: 'object'`; OpenAI `strict` ones keep the strict subset
 *   (Responses tools are strict unless `strict: false`, as on the real API);
 * - every OpenAI tool call gets exactly one tool message / output, right after it, in call order;
 * - every Anthropic `tool_use` is answered by the next user message, whose content starts with one
 *   `tool_result` per id, in order;
 * - a `thread` needs the `anthropic-beta: message-threads-2026-08-12` header; a `continue` carries
 *   only the new turn and no `tools`/`system`, and continues a stored reply once.
 *
 * Streaming is not emulated. Point the real clients at it:
 * `new OpenAI({ baseURL: provider.openaiBaseURL, apiKey: 'test' })`,
 * `new Anthropic({ baseURL: provider.anthropicBaseURL, apiKey: 'test' })`.
 *
 * @example
 * const provider = await startFakeProvider({
 *   chat: scripted([{ toolCalls: [{ name: 'search__web', arguments: { query: 'x' } }] }, { text: 'done' }]),
 * });
 * const client = new OpenAI({ baseURL: provider.openaiBaseURL, apiKey: 'test', maxRetries: 0 });
 * // … run the loop …
 * await provider.close();
 * @module
 */

import { listen, type RecordedRequest } from './http.js';
import { messagesRoute, type MessagesBody, type MessagesReply } from './anthropic-messages.js';
import { chatRoute, type ChatBody, type ChatReply } from './openai-chat.js';
import { responsesRoute, type ResponsesBody, type ResponsesReply } from './openai-responses.js';
import type { Model } from './model.js';

export { scripted, type Model, type ModelTurn, type ToolResultView } from './model.js';
export type { HttpReply, RecordedRequest } from './http.js';
export type { ChatBody, ChatReply, ChatToolCallReply } from './openai-chat.js';
export type { ResponsesBody, ResponsesReply, ResponsesCallReply } from './openai-responses.js';
export {
  messageThreadsBeta,
  type MessagesBody,
  type MessagesReply,
  type AnthropicToolUseReply,
} from './anthropic-messages.js';

/** The scripted models, one per API; an API without one answers every request with a 500. */
export interface FakeProviderOptions {
  /** Answers Chat Completions requests. */
  chat?: Model<ChatBody, ChatReply>;
  /** Answers Responses requests. */
  responses?: Model<ResponsesBody, ResponsesReply>;
  /** Answers Anthropic Messages requests. */
  messages?: Model<MessagesBody, MessagesReply>;
  /**
   * How generated OpenAI call ids are numbered: `'unique'` across the server's life (as the real
   * API's random ids are), or `'per-response'` (`call_0` in every reply, as some providers do).
   * @default 'unique'
   */
  callIds?: 'unique' | 'per-response';
}

/** A running fake provider. */
export interface FakeProvider {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** The `baseURL` for `new OpenAI(...)`: `${url}/v1`. */
  readonly openaiBaseURL: string;
  /** The `baseURL` for `new Anthropic(...)`: `url`. */
  readonly anthropicBaseURL: string;
  /** Every request received, in order, with the status it got. */
  readonly requests: readonly RecordedRequest[];
  /** Stops the server. */
  close(): Promise<void>;
}

const unscripted: Model<unknown, never> = () => ({
  status: 500,
  body: { error: { type: 'api_error', message: 'fake provider: no model scripted for this API' } },
});

/**
 * Starts a fake provider on `127.0.0.1` and a free port.
 *
 * @example
 * const provider = await startFakeProvider({ messages: scripted([{ text: 'hi' }]) });
 * const client = new Anthropic({ baseURL: provider.anthropicBaseURL, apiKey: 'test' });
 */
export async function startFakeProvider(options: FakeProviderOptions = {}): Promise<FakeProvider> {
  const callIds = options.callIds ?? 'unique';
  const server = await listen({
    'POST /v1/chat/completions': {
      endpoint: 'chat',
      route: chatRoute({ model: options.chat ?? unscripted, callIds }),
    },
    'POST /v1/responses': {
      endpoint: 'responses',
      route: responsesRoute({ model: options.responses ?? unscripted, callIds }),
    },
    'POST /v1/messages': {
      endpoint: 'messages',
      route: messagesRoute({ model: options.messages ?? unscripted }),
    },
  });
  return {
    url: server.url,
    openaiBaseURL: `${server.url}/v1`,
    anthropicBaseURL: server.url,
    requests: server.requests,
    close: server.close,
  };
}
