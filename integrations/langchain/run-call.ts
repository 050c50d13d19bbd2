/**
 * One LangChain tool call through the dispatcher, answered as the ToolMessage the model reads.
 * @module
 */

import { ToolMessage } from '@langchain/core/messages';
import { toolAnswer, type Outcome } from '../../index.js';
import { providerCallOptions } from '../../middleware/index.js';
import { refusedArgs } from '../../middleware/internal-kit.js';
import type { Review } from './approvals.js';
import { rawArgumentsOf } from './invalid-calls.js';
import type { LangChainScopeRuntime, Settings } from './options.js';

/** A tool call as LangChain hands it over; every field may be missing or odd. */
export interface LangChainCall {
  readonly id?: unknown;
  readonly name: string;
  readonly args: unknown;
}

/**
 * Dispatches `call` under its registry name and answers with a `ToolMessage` for the same
 * `tool_call_id`: `toToolMessage` text as content, `status: 'error'` for a failure, and the
 * outcome itself as the `artifact` (LangChain keeps artifacts out of the model's view). A name
 * this set did not offer is dispatched under a name no registry holds (the wire name and
 * " (not offered)"), so the dispatcher answers it `not_found` and every layer sees it. The artifact survives
 * `JSON.stringify` (a checkpointer saves it): a result that would not is its JSON-safe copy.
 * A `review` from the approval interrupt dispatches the call as approved by the host, as denied
 * by the host (`{ deniedBy, reason }`, which the approval gate answers `approval_denied`), or with
 * args the schema step refuses (an edit that is no edit of this call): never a run, but a call
 * every layer sees. A `respond` review is answered with the reviewer's text and no dispatch (and
 * no artifact): the tool did not run and nobody approved or denied it.
 */
export async function runCall(
  settings: Settings,
  call: LangChainCall,
  signal: unknown,
  runtime: LangChainScopeRuntime | undefined,
  review?: Review,
): Promise<ToolMessage> {
  const wire = typeof call.name === 'string' ? call.name : '';
  const toolName = settings.offered.get(wire);
  const options = callOptions(settings, call.id, runtime, signal, wire);
  // A reviewer who answered in the tool's place: the model reads that answer and nothing runs,
  // so no layer records an approval, a denial or an outcome of a side effect.
  if (review !== undefined && 'responded' in review) {
    return new ToolMessage({
      tool_call_id: options.callId,
      name: wire,
      content: review.responded,
      status: 'success',
    });
  }
  let args = call.args;
  if (review !== undefined && 'approvedBy' in review) options.approval = { approvedBy: review.approvedBy };
  // A person's refusal and a bad edit go through the stack too, so every layer sees the call:
  // the approval gate answers the one `approval_denied`, the schema step the other `schema`.
  if (review !== undefined && 'rejected' in review)
    options.approval = { deniedBy: 'langchain', reason: review.rejected };
  if (review !== undefined && 'badEdit' in review) args = refusedArgs(review.badEdit);
  // A name this set did not offer goes under a name no registry holds: the stack answers `not_found`.
  const outcome = await dispatch(settings, toolName ?? `${wire} (not offered)`, args, options);
  const answer = toolAnswer(outcome, {
    maxLength: settings.maxLength,
    displayName: wire,
    serializable: true,
  });
  return new ToolMessage({
    tool_call_id: options.callId,
    name: wire,
    content: answer.text,
    status: answer.outcome.ok ? 'success' : 'error',
    artifact: answer.outcome,
  });
}

/**
 * The dispatch options of the call `id` in `runtime`: its call id, scoped key and tenant, as the
 * dispatch and the approval review both use them.
 */
export function callOptions(
  settings: Settings,
  id: unknown,
  runtime: LangChainScopeRuntime | undefined,
  signal?: unknown,
  wire?: string,
): ReturnType<typeof providerCallOptions> {
  const options = providerCallOptions({
    providerId: id,
    signal,
    idempotencyScope: settings.scope(runtime),
    keyByCallId: settings.keyByCallId,
    idPrefix: 'langchain',
    base: settings.base,
    displayName: wire,
  });
  const tenant = settings.tenant(runtime);
  if (tenant !== undefined) options.tenant = tenant;
  return options;
}

function dispatch(
  settings: Settings,
  toolName: string,
  args: unknown,
  options: ReturnType<typeof providerCallOptions>,
): Promise<Outcome> {
  // A call whose JSON the provider could not parse: the schema layer parses the raw text, so the
  // failure is an ordinary `schema` outcome that events, logging and tracing see.
  const raw = rawArgumentsOf(args);
  return raw === undefined
    ? settings.dispatcher.dispatch(toolName, args, options)
    : settings.dispatcher.dispatchJson(toolName, raw, options);
}
