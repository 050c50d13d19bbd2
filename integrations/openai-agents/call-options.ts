// Turns an Agents SDK call's values into strict dispatch options: the call id, the scoped key, the signal.

import type { DispatchOptions } from '../../index.js';

/**
 * The dispatch options for one Agents SDK call. The Responses `call_id` is the call id when
 * usable (a number becomes its string; a missing or empty one gets a fresh id); the key is
 * the scoped call id, or none without a scope unless `keyByCallId`. A generated id never
 * makes a key: nothing can repeat it.
 */
export function callOptions(
  providerId: unknown,
  signal: unknown,
  scope: string | undefined,
  keyByCallId: boolean,
  base: DispatchOptions,
): DispatchOptions & { callId: string } {
  const id = usableId(providerId);
  const options: DispatchOptions & { callId: string } = {
    ...base,
    callId: id ?? `openai-agents-${globalThis.crypto.randomUUID()}`,
  };
  if (id !== undefined) {
    if (scope !== undefined) options.idempotencyKey = `${scope}:${id}`;
    else if (keyByCallId) options.idempotencyKey = id;
  }
  if (signal instanceof AbortSignal) options.signal = signal;
  return options;
}

function usableId(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'string' && value.length > 0) return value;
  return undefined;
}
