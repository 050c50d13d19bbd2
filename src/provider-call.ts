/**
 * From a host's per-call values to strict dispatch options: the call id, the scoped key, the signal.
 * @module
 */

import type { DispatchOptions } from './types.js';

/** What a host hands over for one tool call, for `providerCallOptions`. */
export interface ProviderCall {
  /** The host's id for the call (`tool_calls[].id`, `toolCallId`, …); numbers and empty strings happen. */
  providerId: unknown;
  /** The host's abort signal, if it has one; anything but an `AbortSignal` (`null`, say) is dropped. */
  signal?: unknown;
  /** The run or conversation the call belongs to; the key is `${idempotencyScope}:${providerId}`. */
  idempotencyScope?: string | undefined;
  /**
   * Without a scope, key by the bare provider id (only when ids never repeat across turns).
   * @default false
   */
  keyByCallId?: boolean;
  /** The prefix of a generated call id, naming the host (`ai-sdk`, `langchain`). */
  idPrefix: string;
  /** Options every call of the host shares (`budget`, `timeoutMs`, …). @default {} */
  base?: DispatchOptions;
  /** The name the model knows the tool by (its wire name), for the texts the model reads. */
  displayName?: string | undefined;
}

/**
 * The dispatch options for one host tool call. The provider's id is the call id when usable (a
 * number becomes its string; a missing or empty one gets a fresh id); the key is the scoped
 * provider id, none without a scope unless `keyByCallId`, and never a generated id (nothing can
 * repeat it). Provider ids repeat across turns on some hosts, which is why keys are scoped.
 *
 * @example
 * const options = providerCallOptions({ providerId: call.id, signal, idempotencyScope: runId, idPrefix: 'my-host' });
 * await dispatcher.dispatchJson(name, call.arguments, options);
 */
export function providerCallOptions(call: ProviderCall): DispatchOptions & {
  /** The call id: the provider's, or a generated one. */
  callId: string;
} {
  const id = usableId(call.providerId);
  const callId = id ?? `${call.idPrefix}-${globalThis.crypto.randomUUID()}`;
  const { displayName } = call;
  // The call's own fields come first and the shared ones are spread after them; the call's own
  // values are then written back over any the base repeats, so its id and name always win.
  const options: DispatchOptions & { callId: string } =
    displayName === undefined ? { callId, ...call.base } : { callId, displayName, ...call.base };
  options.callId = callId;
  if (displayName !== undefined) options.displayName = displayName;
  if (id !== undefined) {
    if (call.idempotencyScope !== undefined) options.idempotencyKey = `${call.idempotencyScope}:${id}`;
    else if (call.keyByCallId === true) options.idempotencyKey = id;
  }
  if (call.signal instanceof AbortSignal) options.signal = call.signal;
  return options;
}

function usableId(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'string' && value.length > 0) return value;
  return undefined;
}
