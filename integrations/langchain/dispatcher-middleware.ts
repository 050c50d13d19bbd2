/**
 * A LangChain agent middleware that carries the registry's tools and runs their calls through the dispatcher.
 * @module
 */

import { createMiddleware } from 'langchain';
import { reviewCalls, reviewKey, reviewOf, reviewState } from './approvals.js';
import { withInvalidCallsMoved } from './invalid-calls.js';
import { readOptions, type LangChainToolsOptions } from './options.js';
import { callOptions, runCall } from './run-call.js';
import { langChainTools } from './to-langchain-tools.js';

/**
 * A middleware for `createAgent({ model, middleware: [...] })` that brings the registry's
 * tools (no separate `tools` list needed) and answers each of their calls itself through the
 * dispatcher, without calling LangChain's handler: so LangChain's own schema check, which
 * sends the model a stack trace, never runs, and ours does. Every call gets one `ToolMessage`
 * with the call's id, `toToolMessage` text, `status` and the outcome as `artifact`; a call to a
 * name no tool of the agent has gets our `not_found` text, and only the wire names this
 * middleware offered are ever dispatched. A call to one of these tools whose
 * JSON the provider could not parse (LangChain's `invalid_tool_calls`, which createAgent would
 * leave unanswered) is moved to `tool_calls` after the model turn and answered with our
 * `schema` envelope. Calls to the agent's other tools pass through to LangChain. Put it last in
 * `middleware`, so the others wrap it.
 *
 * With `approvals: gate` (and a checkpointer), the calls of a model turn that the gate requires
 * raise one interrupt shaped as `humanInTheLoopMiddleware`'s: `{ actionRequests, reviewConfigs }`,
 * resumed by `new Command({ resume: { decisions } })` with one `approve`, `edit` or `reject` per
 * action request, in order.
 *
 * @throws TypeError for a bad option, or two tools whose names map to the same wire name.
 * @example
 * const agent = createAgent({
 *   model,
 *   middleware: [dispatcherMiddleware({ registry, dispatcher, idempotencyScope: (rt) => rt.configurable?.thread_id as string })],
 * });
 * await agent.invoke({ messages: [{ role: 'user', content: 'find the docs' }] }, { signal });
 */
export function dispatcherMiddleware(options: LangChainToolsOptions) {
  const settings = readOptions('dispatcherMiddleware', options);
  const ours = (wire: string) => settings.offered.has(wire);
  const { approvals } = settings;
  return createMiddleware({
    name: 'toolDispatcher',
    stateSchema: reviewState,
    tools: langChainTools(settings),
    afterModel: async (state, runtime) => {
      const last = state.messages.at(-1);
      const moved = withInvalidCallsMoved(last, ours);
      if (approvals === undefined) return moved === undefined ? undefined : { messages: [moved] };
      // Run again from the start when resumed: the interrupt then returns the decisions.
      const { message, reviews } = await reviewCalls(
        approvals,
        settings.offered,
        moved ?? last,
        runtime.interrupt as Parameters<typeof reviewCalls>[3],
        // The gate judges the call with the id, key and tenant its dispatch will carry.
        (id) => callOptions(settings, id, runtime),
      );
      const rewritten = message ?? moved;
      const stale = Object.keys(state[reviewKey] ?? {}).length > 0;
      // Each turn's reviews replace the last turn's, whose call ids a provider may reuse.
      if (rewritten === undefined && !stale && Object.keys(reviews).length === 0) return undefined;
      return {
        ...(rewritten === undefined ? {} : { messages: [rewritten] }),
        [reviewKey]: reviews,
      };
    },
    wrapToolCall: (request, handler) => {
      const { toolCall } = request;
      // Another tool the agent was given: LangChain runs it. Ours, or nobody's: we answer, and
      // only a wire name we offered is dispatched (never a dotted registry name, never a tool
      // registered after the middleware was built).
      if (!ours(toolCall.name) && request.tool !== undefined) return handler(request);
      // The runtime is LangChain's; a request built by hand may lack it.
      const runtime = request.runtime as typeof request.runtime | undefined;
      const review = approvals === undefined ? undefined : reviewOf(request.state, toolCall.id);
      return runCall(settings, toolCall, runtime?.signal, runtime, review);
    },
  });
}
