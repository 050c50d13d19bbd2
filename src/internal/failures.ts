/**
 * Envelopes several layers make the same way.
 * @module
 */

import { DispatchError } from '../errors.js';
import type { DispatchContext } from '../types.js';

// The timeouts of deadlines (see limits.ts): a signal aborted by one ends its waits with it.
const deadlineErrors = new WeakSet<DispatchError>();

/** Marks `error` as a deadline's timeout, which `cancelled` passes on as it is. */
export function markDeadline(error: DispatchError): DispatchError {
  deadlineErrors.add(error);
  return error;
}

/**
 * The envelope for a wait that `signal` ended: `cancelled` for a caller that aborted, or the
 * `timeout` of the deadline that aborted it (`ctx.signal` inside a timeout layer).
 */
export function cancelled(ctx: DispatchContext, signal: AbortSignal): DispatchError {
  const { reason } = signal;
  if (reason instanceof DispatchError && deadlineErrors.has(reason)) return reason;
  return new DispatchError('cancelled', `The call to "${ctx.displayName}" was cancelled by the caller`, {
    attempts: ctx.attempt,
    cause: reason,
  });
}

/** The envelope for a spent budget. */
export function budgetExceeded(ctx: DispatchContext, cause?: unknown): DispatchError {
  return new DispatchError(
    'budget_exceeded',
    `The tool-call budget is spent; "${ctx.displayName}" was not run again`,
    { attempts: ctx.attempt, cause },
  );
}

/** How the envelope of a call no window of a budget can hold begins; the model's hint knows it by it. */
export const neverFitsWindow = 'No whole window of the budget';

/**
 * Emits `dispatch.attempt_failed` for an attempt that has started and just failed with
 * `failure`, and returns the envelope; layers that judge attempts (a breaker) listen for it.
 */
export function failedAttempt(ctx: DispatchContext, failure: DispatchError): DispatchError {
  ctx.emit('dispatch.attempt_failed', { kind: failure.kind, error: failure });
  return failure;
}
