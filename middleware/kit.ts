/**
 * The author kit: the helpers the built-in layers are made with, for a layer of your own.
 * @module
 */

export { maxTimerDelayMs, neverAborted, noop, onAbort, raceAbort, sleep } from '../src/internal/abort.js';
export { budgetExceeded, cancelled } from '../src/internal/failures.js';
export {
  nearestName,
  optionKeys,
  optionsObject,
  rejectUnknownKeys,
  requireClock,
  requireFunction,
  requireInteger,
  requireNumber,
} from '../src/internal/options.js';
export { isThenable } from '../src/internal/thenable.js';
export { isJsonParseError, withoutStackFrames } from '../src/errors.js';
export { keepLeaseAlive, storeUnavailable } from '../src/stores.js';
// For a handler that relays its call to another service (as the MCP client does).
export { hasProgressListener, signalEndsWithAttempt } from '../src/attempt.js';
export { parseJsonArgs } from '../src/internal/raw-json-args.js';
// What an attempt costs, for a layer that counts it (windowedBudget).
export { attemptCost, settledCost } from '../src/internal/cost.js';
// For a layer that finds an action's outcome lost (the idempotency leader's lost lease, say).
export { outcomeUnknown, reconcileOutcome } from '../src/internal/reconcile.js';
export type { Reconciled } from '../src/internal/reconcile.js';
