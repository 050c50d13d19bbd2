// Envelopes several layers make the same way.

import { DispatchError } from '../errors.js';
import type { DispatchContext } from '../types.js';

/** The envelope for a caller that aborted. */
export function cancelled(ctx: DispatchContext, signal: AbortSignal): DispatchError {
  return new DispatchError('cancelled', `The call to "${ctx.toolName}" was cancelled by the caller`, {
    attempts: ctx.attempt,
    cause: signal.reason,
  });
}

/** The envelope for a spent budget. */
export function budgetExceeded(ctx: DispatchContext, cause?: unknown): DispatchError {
  return new DispatchError(
    'budget_exceeded',
    `The tool-call budget is spent; "${ctx.toolName}" was not run again`,
    { attempts: ctx.attempt, cause },
  );
}
