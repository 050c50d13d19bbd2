/**
 * tool-dispatcher for LangChain.js v1 (`langchain` + `@langchain/core`): an agent middleware
 * that carries the registry's tools and runs their calls through the dispatcher, and plain
 * LangChain tools as the second choice.
 *
 * @example
 * import { dispatcherMiddleware } from 'tool-dispatcher/langchain';
 * const agent = createAgent({ model, middleware: [dispatcherMiddleware({ registry, dispatcher, idempotencyScope: runId })] });
 * @module tool-dispatcher/langchain
 */

export { dispatcherMiddleware } from './dispatcher-middleware.js';
export { toLangChainTools } from './to-langchain-tools.js';
export type { LangChainScopeRuntime, LangChainToolsOptions } from './options.js';
