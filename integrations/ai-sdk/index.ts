/**
 * tool-dispatcher for the Vercel AI SDK (`ai` 6 or 7): the registry as a `ToolSet` for
 * `generateText` and `streamText`, every call run through the dispatcher.
 *
 * @example
 * import { toAiSdkTools } from 'tool-dispatcher/ai-sdk';
 * const tools = toAiSdkTools({ registry, dispatcher, idempotencyScope: runId });
 * const result = await generateText({ model, tools, stopWhen: stepCountIs(5), prompt });
 * @module tool-dispatcher/ai-sdk
 */

export { aiSdkToolApproval, toAiSdkTools } from './to-ai-sdk-tools.js';
export type {
  AiSdkHostTimeout,
  AiSdkToolApprovalRequest,
  AiSdkToolApprovalStatus,
  AiSdkToolsOptions,
} from './to-ai-sdk-tools.js';
export { ToolCallFailed } from './tool-call-failed.js';
