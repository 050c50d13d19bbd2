/**
 * tool-dispatcher for the OpenAI SDK (`openai` 6 or 7, Chat Completions and Responses): the
 * registry as OpenAI tools, and each turn's tool calls run through the dispatcher, one tool
 * message per call id in call order. Uses the SDK's types only; nothing of it is loaded at run time.
 *
 * @example
 * import { createOpenAIToolkit } from 'tool-dispatcher/openai';
 * const kit = createOpenAIToolkit({ registry, dispatcher, idempotencyScope: runId });
 * const completion = await client.chat.completions.create({ model, messages, tools: kit.chatTools() });
 * const assistant = completion.choices[0].message;
 * const { messages: toolMessages } = await kit.runChatToolCalls(assistant, { signal });
 * messages.push(assistant, ...toolMessages);
 * @module tool-dispatcher/openai
 */

export { createOpenAIToolkit } from './toolkit.js';
export type {
  ChatMessageWithCalls,
  ChatToolCallsResult,
  OpenAIRunOptions,
  OpenAIToolkit,
  OpenAIToolkitOptions,
  ResponsesCallOutput,
  ResponsesCallsResult,
} from './toolkit.js';
