/**
 * The registry as LangChain tools whose calls run through the dispatcher.
 * @module
 */

import type { ToolMessage } from '@langchain/core/messages';
import { tool, type DynamicStructuredTool } from '@langchain/core/tools';
import { toObjectSchema } from '../../middleware/index.js';
import {
  readOptions,
  type LangChainScopeRuntime,
  type LangChainToolsOptions,
  type Settings,
} from './options.js';
import { runCall } from './run-call.js';

/** The tool-call fields LangChain puts in a tool's runtime config. */
interface ToolRuntimeConfig extends LangChainScopeRuntime {
  readonly toolCall?: { readonly id?: unknown };
  readonly signal?: unknown;
}

/**
 * The registry's tools as LangChain `tool()`s, for `createAgent({ tools })` or any LangChain
 * runnable; each returns the `ToolMessage` of its dispatch. The second choice after
 * `dispatcherMiddleware`: LangChain checks the args against the JSON Schema before the tool
 * runs, so a bad call gets LangChain's text (with a stack trace) rather than our `schema`
 * envelope, and an unknown tool LangChain's "is not a valid tool". Approvals need the middleware.
 *
 * @throws TypeError for a bad option, `approvals` (the middleware's alone), or two tools whose
 * names map to the same wire name.
 * @example
 * const agent = createAgent({ model, tools: toLangChainTools({ registry, dispatcher, idempotencyScope: runId }) });
 */
export function toLangChainTools(options: LangChainToolsOptions): DynamicStructuredTool[] {
  const settings = readOptions('toLangChainTools', options);
  // Plain tools have no turn to interrupt after; silently ignoring the gate would hide that.
  if (settings.approvals !== undefined) {
    throw new TypeError('toLangChainTools(): approvals needs dispatcherMiddleware(), which can interrupt');
  }
  return langChainTools(settings);
}

/** The tools for already-checked settings (the middleware carries the same ones). */
export function langChainTools(settings: Settings): DynamicStructuredTool[] {
  return settings.listings.map((listing) => {
    const wire = settings.names === undefined ? listing.name : settings.names.wireName(listing.name);
    return tool(
      // LangChain passes a config; a direct call of the tool function may not.
      (input: unknown, config?: ToolRuntimeConfig): Promise<ToolMessage> =>
        runCall(settings, { id: config?.toolCall?.id, name: wire, args: input }, config?.signal, config),
      {
        name: wire,
        description: listing.description,
        schema: toObjectSchema(listing.inputSchema),
      },
    ) as unknown as DynamicStructuredTool;
  });
}
