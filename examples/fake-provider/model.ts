// What a scripted model sees and answers, shared by the three APIs the fake provider speaks.

import type { IncomingHttpHeaders } from 'node:http';
import type { HttpReply } from './http.js';

/** One tool result the request carries back, as the model would read it. */
export interface ToolResultView {
  /** The provider call id it answers (`tool_call_id`, `call_id` or `tool_use_id`). */
  id: string;
  /** Its text (content blocks joined). */
  content: string;
  /** Anthropic's `is_error`; always `false` for OpenAI, whose errors are plain text. */
  isError: boolean;
}

/** A request as the scripted model sees it. */
export interface ModelTurn<Body> {
  /**
   * The request body, with the conversation resolved: for an Anthropic thread `continue` or a
   * Responses `previous_response_id`, the whole history, and the thread's `tools` and `system`.
   */
  body: Body;
  /** How many requests this API answered before this one. */
  turn: number;
  /** The tool results this request answers the previous reply with, in request order. */
  toolResults: ToolResultView[];
  /** The last user text of the conversation, if any. */
  userText: string | undefined;
  /** The request headers. */
  headers: IncomingHttpHeaders;
  /** Aborted when the client leaves before the answer (a caller abort, an SDK timeout). */
  signal: AbortSignal;
}

/** A scripted model for one API: a turn in, a reply out (or a raw HTTP reply, to send an error). */
export type Model<Body, Reply> = (turn: ModelTurn<Body>) => Reply | HttpReply | Promise<Reply | HttpReply>;

/** Whether a model's answer is a raw HTTP reply. */
export function isHttpReply(value: unknown): value is HttpReply {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { status?: unknown }).status === 'number' &&
    'body' in value
  );
}

/**
 * A model that answers with `replies` in order, one per request; a function entry is called with
 * the turn. Past the end it fails the request, so a loop that asks once too often is caught.
 *
 * @example
 * const model = scripted([{ toolCalls: [{ name: 'search__web', arguments: { query: 'x' } }] }, { text: 'done' }]);
 */
export function scripted<Body, Reply>(
  // NoInfer: the API the model is given to (its option's type) decides Body and Reply.
  replies: ReadonlyArray<
    NoInfer<Reply | HttpReply | ((turn: ModelTurn<Body>) => Reply | HttpReply | Promise<Reply | HttpReply>)>
  >,
): Model<Body, Reply> {
  type Entry =
    | Reply
    | HttpReply
    | ((turn: ModelTurn<Body>) => Reply | HttpReply | Promise<Reply | HttpReply>);
  const list = replies as ReadonlyArray<Entry>;
  let next = 0;
  return (turn) => {
    const reply = list[next++];
    if (reply === undefined) {
      return {
        status: 500,
        body: {
          error: { type: 'api_error', message: `fake provider: no scripted reply for request ${next}` },
        },
      };
    }
    return typeof reply === 'function'
      ? (reply as (turn: ModelTurn<Body>) => Reply | HttpReply | Promise<Reply | HttpReply>)(turn)
      : (reply as Reply | HttpReply);
  };
}

/** Text of a string or of content blocks/parts with a `text` field, joined by newlines. */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part: unknown) =>
      typeof part === 'object' && part !== null && typeof (part as { text?: unknown }).text === 'string'
        ? (part as { text: string }).text
        : '',
    )
    .filter((text) => text !== '')
    .join('\n');
}

/** An id generator: `${prefix}_${n}`, counting across the server's life so ids never repeat. */
export function counter(prefix: string): () => string {
  let n = 0;
  return () => `${prefix}_${n++}`;
}
