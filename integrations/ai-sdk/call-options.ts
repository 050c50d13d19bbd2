// Turns the AI SDK's per-call values into strict dispatch options: the call id, the scoped key, the signal.

import type { DispatchOptions } from '../../index.js';

/** How keys are derived, fixed when the tool set is built. */
export interface KeyPolicy {
  readonly idempotencyScope: string | undefined;
  readonly keyByCallId: boolean;
}

/**
 * The dispatch options for one AI SDK call. The provider's id is the call id when usable (a
 * number becomes its string; an empty or missing id gets a fresh one); the key is the scoped
 * provider id, or none without a scope unless the caller opted in. A generated id never makes
 * a key: nothing can ever repeat it, so it would only fill the cache.
 */
export function callOptions(
  providerId: unknown,
  signal: unknown,
  policy: KeyPolicy,
  base: DispatchOptions,
): DispatchOptions {
  const options: DispatchOptions = { ...base };
  const id = usableId(providerId);
  options.callId = id ?? `ai-sdk-${globalThis.crypto.randomUUID()}`;
  if (id !== undefined) {
    if (policy.idempotencyScope !== undefined) options.idempotencyKey = `${policy.idempotencyScope}:${id}`;
    else if (policy.keyByCallId) options.idempotencyKey = id;
  }
  // The AI SDK leaves abortSignal out when the caller gave none; anything else is not passed on.
  if (signal instanceof AbortSignal) options.signal = signal;
  return options;
}

function usableId(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'string' && value.length > 0) return value;
  return undefined;
}
