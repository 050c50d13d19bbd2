/**
 * tool-dispatcher for the Anthropic SDK (`@anthropic-ai/sdk` 1.14+): the registry as Claude
 * tools, a turn's `tool_use` blocks run through the dispatcher (one `tool_result` per id, first
 * and in order), and runnable tools for `client.beta.messages.toolRunner`. Uses the SDK's types
 * only; nothing of it is loaded at run time.
 *
 * @example
 * import { createAnthropicToolkit } from 'tool-dispatcher/anthropic';
 * const claude = createAnthropicToolkit({ registry, dispatcher, idempotencyScope: runId });
 * const response = await client.messages.create({ model, max_tokens: 1024, messages, tools: claude.tools() });
 * messages.push({ role: 'assistant', content: response.content });
 * const { message } = await claude.runToolUses(response, { signal });
 * messages.push(message);
 * @module tool-dispatcher/anthropic
 */

export { createAnthropicToolkit, RunnableToolFailed } from './toolkit.js';
export type {
  AnthropicRunOptions,
  AnthropicToolkit,
  AnthropicToolkitOptions,
  DispatcherRunnableTool,
  ResponseWithContent,
  RunnableToolsOptions,
  ToolUsesResult,
} from './toolkit.js';
