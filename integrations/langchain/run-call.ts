// One LangChain tool call through the dispatcher, answered as the ToolMessage the model reads.

import { ToolMessage } from '@langchain/core/messages';
import { providerCallOptions, toToolMessage } from '../../index.js';
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
 * outcome itself as the `artifact` (LangChain keeps artifacts out of the model's view).
 */
export async function runCall(
  settings: Settings,
  call: LangChainCall,
  signal: unknown,
  runtime: LangChainScopeRuntime | undefined,
): Promise<ToolMessage> {
  const wire = call.name;
  const toolName = settings.names === undefined ? wire : settings.names.toolName(wire);
  const options = providerCallOptions({
    providerId: call.id,
    signal,
    idempotencyScope: settings.scope(runtime),
    keyByCallId: settings.keyByCallId,
    idPrefix: 'langchain',
    base: settings.base,
    displayName: wire,
  });
  // A call whose JSON the provider could not parse: the schema layer parses the raw text, so the
  // failure is an ordinary `schema` outcome that events, logging and tracing see.
  const raw = rawArgumentsOf(call.args);
  const outcome = await (raw === undefined
    ? settings.dispatcher.dispatch(toolName, call.args, options)
    : settings.dispatcher.dispatchJson(toolName, raw, options));
  return new ToolMessage({
    tool_call_id: options.callId,
    name: wire,
    content: toToolMessage(outcome, { maxLength: settings.maxLength }),
    status: outcome.ok ? 'success' : 'error',
    artifact: outcome,
  });
}
