/**
 * tool-dispatcher for the OpenAI Agents SDK (`@openai/agents` 0.20): the registry as function
 * tools for `new Agent({ tools })`, every call run through the dispatcher.
 *
 * @example
 * import { toAgentsTools } from 'tool-dispatcher/openai-agents';
 * const agent = new Agent({ name: 'assistant', tools: toAgentsTools({ registry, dispatcher }) });
 * const result = await run(agent, 'find the docs', { context: { runId } });
 * @module tool-dispatcher/openai-agents
 */

export { toAgentsTools } from './to-agents-tools.js';
export type { AgentsToolCall, AgentsToolsOptions } from './to-agents-tools.js';
