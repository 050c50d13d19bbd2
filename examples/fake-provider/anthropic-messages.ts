// Anthropic Messages (`POST /v1/messages`): the request checks, the message-threads beta the 1.14
// tool runner uses, and replies built from a script.

import type { IncomingHttpHeaders } from 'node:http';
import type { HttpReply, Route } from './http.js';
import { counter, isHttpReply, textOf, type Model, type ToolResultView } from './model.js';

/** A tool use the scripted model makes. */
export interface AnthropicToolUseReply {
  /** The block id; generated (`toolu_<n>`) when omitted. */
  id?: string;
  /** The wire name. */
  name: string;
  /** The parsed input object. @default {} */
  input?: unknown;
}

/** What the scripted model answers a Messages request with. */
export interface MessagesReply {
  /** The assistant's text, as one text block before any tool use. */
  text?: string;
  /** Tool uses, in order; their presence makes `stop_reason: 'tool_use'`. */
  toolUses?: AnthropicToolUseReply[];
}

type Block = Record<string, unknown>;
type MessageParam = { role: string; content: string | Block[] };

/** The Messages body the scripted model sees, a thread resolved to its whole conversation. */
export interface MessagesBody {
  /** The model name. */
  model: string;
  /** The whole conversation. */
  messages: MessageParam[];
  /** The tools (a thread's own on a `continue`). */
  tools?: Block[];
  /** The system prompt (a thread's own on a `continue`). */
  system?: unknown;
  /** Every other field as sent. */
  [field: string]: unknown;
}

/** Options for the Messages route. */
export interface MessagesRouteOptions {
  /** The scripted model. */
  model: Model<MessagesBody, MessagesReply>;
}

/** The beta the SDK's tool runner sends with `thread`. */
export const messageThreadsBeta = 'message-threads-2026-08-12';
const anthropicNamePattern = /^[a-zA-Z0-9_-]{1,128}$/;

interface Thread {
  messages: MessageParam[];
  tools: Block[] | undefined;
  system: unknown;
  continued: boolean;
}

/** The Messages route. */
export function messagesRoute({ model }: MessagesRouteOptions): Route {
  const messageId = counter('msg');
  const toolUseId = counter('toolu');
  // Each reply that may be continued, by its id: the conversation up to and with it.
  const threads = new Map<string, Thread>();
  let turn = 0;
  return async (raw, headers, signal) => {
    if (raw['stream'] === true)
      return anthropicError(400, 'invalid_request_error', 'fake provider: streaming is not emulated');
    const resolved = resolveThread(raw, headers, threads);
    if ('status' in resolved) return resolved;
    const { body, thread } = resolved;
    const problem = toolsProblem(body.tools) ?? messagesProblem(body.messages);
    if (problem !== undefined) return problem;

    const answer = await model({
      body,
      turn: turn++,
      toolResults: toolResultsOf(body.messages),
      userText: lastUserText(body.messages),
      headers,
      signal,
    });
    if (isHttpReply(answer)) return answer;
    const content: Block[] = [];
    if (answer.text !== undefined) content.push({ type: 'text', text: answer.text, citations: null });
    for (const use of answer.toolUses ?? []) {
      content.push({ type: 'tool_use', id: use.id ?? toolUseId(), name: use.name, input: use.input ?? {} });
    }
    const hasToolUse = (answer.toolUses ?? []).length > 0;
    const message = {
      id: messageId(),
      type: 'message',
      role: 'assistant',
      model: body.model,
      content,
      stop_reason: hasToolUse ? 'tool_use' : 'end_turn',
      stop_sequence: null,
      container: null,
      context_management: null,
      usage: {
        input_tokens: 10,
        output_tokens: 5,
        cache_creation_input_tokens: null,
        cache_read_input_tokens: null,
        server_tool_use: null,
        service_tier: 'standard',
      },
    };
    if (thread !== undefined) {
      threads.set(message.id, {
        ...thread,
        messages: [...body.messages, { role: 'assistant', content }],
        continued: false,
      });
    }
    return { status: 200, body: message };
  };
}

type Resolved = { body: MessagesBody; thread: Thread | undefined } | HttpReply;

// `thread: { type: 'create' }` starts a thread with the request's history, tools and system;
// `{ type: 'continue', previous_message_id }` sends only the new turn, and the thread supplies the
// rest. Without `thread` the request is stateless, as the plain Messages API is.
function resolveThread(
  raw: Record<string, unknown>,
  headers: IncomingHttpHeaders,
  threads: Map<string, Thread>,
): Resolved {
  const messages = Array.isArray(raw['messages']) ? (raw['messages'] as MessageParam[]) : [];
  const own = { ...raw, messages } as MessagesBody;
  const thread = raw['thread'] as { type?: string; previous_message_id?: string } | undefined;
  if (thread === undefined) return { body: own, thread: undefined };
  const betas = String(headers['anthropic-beta'] ?? '')
    .split(',')
    .map((beta) => beta.trim());
  if (!betas.includes(messageThreadsBeta)) {
    return anthropicError(
      400,
      'invalid_request_error',
      `thread: this field requires the beta header anthropic-beta: ${messageThreadsBeta}`,
    );
  }
  if (thread.type === 'create') {
    return { body: own, thread: { messages, tools: own.tools, system: own.system, continued: false } };
  }
  if (thread.type !== 'continue' || typeof thread.previous_message_id !== 'string') {
    return anthropicError(
      400,
      'invalid_request_error',
      'thread: Input should be a create or continue thread',
    );
  }
  const earlier = threads.get(thread.previous_message_id);
  if (earlier === undefined) {
    return anthropicError(
      404,
      'not_found_error',
      `thread: no thread holds message ${thread.previous_message_id}`,
      { error_code: 'thread_not_found' },
    );
  }
  if (earlier.continued) {
    return anthropicError(
      409,
      'invalid_request_error',
      `thread: message ${thread.previous_message_id} was already continued`,
      { error_code: 'thread_already_continued' },
    );
  }
  for (const field of ['tools', 'system'] as const) {
    if (raw[field] !== undefined) {
      return anthropicError(
        400,
        'invalid_request_error',
        `${field}: cannot be set when continuing a thread; the thread keeps the ${field} it was created with`,
      );
    }
  }
  earlier.continued = true;
  const body: MessagesBody = { ...own, messages: [...earlier.messages, ...messages] };
  if (earlier.tools !== undefined) body.tools = earlier.tools;
  if (earlier.system !== undefined) body.system = earlier.system;
  return { body, thread: { ...earlier, continued: false } };
}

function toolsProblem(tools: Block[] | undefined): HttpReply | undefined {
  for (const [i, tool] of (tools ?? []).entries()) {
    if (tool['type'] !== undefined && tool['type'] !== 'custom') continue;
    if (typeof tool['name'] !== 'string' || !anthropicNamePattern.test(tool['name'])) {
      return anthropicError(
        400,
        'invalid_request_error',
        `tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`,
      );
    }
    const schema = tool['input_schema'] as Block | undefined;
    if (typeof schema !== 'object' || schema === null || schema['type'] !== 'object') {
      return anthropicError(
        400,
        'invalid_request_error',
        `tools.${i}.custom.input_schema.type: Input should be 'object'`,
      );
    }
  }
  return undefined;
}

// Each assistant turn with tool_use blocks is answered by the next user message, which starts with
// one tool_result per tool_use id (this fake also wants them in tool_use order, each once).
function messagesProblem(messages: MessageParam[]): HttpReply | undefined {
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    const blocks = Array.isArray(message.content) ? message.content : [];
    if (message.role === 'user') {
      const previous = messages[i - 1];
      const uses =
        previous?.role === 'assistant' && Array.isArray(previous.content)
          ? previous.content.filter((b) => b['type'] === 'tool_use').map((b) => String(b['id']))
          : [];
      for (const [j, block] of blocks.entries()) {
        if (block['type'] === 'tool_result' && !uses.includes(String(block['tool_use_id']))) {
          return anthropicError(
            400,
            'invalid_request_error',
            `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(block['tool_use_id'])}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
          );
        }
      }
      continue;
    }
    if (message.role !== 'assistant') continue;
    for (const [j, block] of blocks.entries()) {
      if (
        block['type'] === 'tool_use' &&
        (typeof block['name'] !== 'string' || !anthropicNamePattern.test(block['name']))
      ) {
        return anthropicError(
          400,
          'invalid_request_error',
          `messages.${i}.content.${j}.tool_use.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`,
        );
      }
    }
    const uses = blocks.filter((block) => block['type'] === 'tool_use').map((block) => String(block['id']));
    if (uses.length === 0) continue;
    const next = messages[i + 1];
    if (next === undefined) continue; // the assistant turn the model is asked to continue
    const answers = next.role === 'user' && Array.isArray(next.content) ? next.content : [];
    const leading: Block[] = [];
    for (const block of answers) {
      if (block['type'] !== 'tool_result') break;
      leading.push(block);
    }
    const missing = uses.filter((id) => !leading.some((block) => block['tool_use_id'] === id));
    if (missing.length > 0) {
      return anthropicError(
        400,
        'invalid_request_error',
        `messages.${i + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
      );
    }
    const order = leading.map((block) => String(block['tool_use_id']));
    if (order.length !== uses.length || order.some((id, k) => id !== uses[k])) {
      return anthropicError(
        400,
        'invalid_request_error',
        `fake provider rule: messages.${i + 1} must start with one tool_result per tool_use, in tool_use order (${uses.join(', ')}), got ${order.join(', ')}`,
      );
    }
  }
  return undefined;
}

function anthropicError(
  status: number,
  type: string,
  message: string,
  details?: Record<string, unknown>,
): HttpReply {
  return {
    status,
    body: { type: 'error', error: { type, message, ...(details === undefined ? {} : { details }) } },
  };
}

function toolResultsOf(messages: MessageParam[]): ToolResultView[] {
  const last = messages.at(-1);
  if (last?.role !== 'user' || !Array.isArray(last.content)) return [];
  return last.content
    .filter((block) => block['type'] === 'tool_result')
    .map((block) => ({
      id: String(block['tool_use_id']),
      content: textOf(block['content']),
      isError: block['is_error'] === true,
    }));
}

function lastUserText(messages: MessageParam[]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.role !== 'user') continue;
    const text = textOf(
      Array.isArray(message.content)
        ? message.content.filter((block) => block['type'] === 'text')
        : message.content,
    );
    if (text !== '') return text;
  }
  return undefined;
}
