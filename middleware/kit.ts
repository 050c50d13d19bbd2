/**
 * The author kit: the helpers the built-in layers are made with, for a layer of your own.
 * @module
 */

export { maxTimerDelayMs, neverAborted, noop, onAbort, raceAbort, sleep } from '../src/internal/abort.js';
export { budgetExceeded, cancelled, windowTooSmall } from '../src/internal/failures.js';
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
// For a layer that puts a field of its own on outcomes (autopilot's `policy`), or rewords an
// envelope it passes on.
export { declareOutcomeField, withMessage } from '../src/errors.js';
export { keepLeaseAlive, storeUnavailable } from '../src/stores.js';
// For a handler that relays its call to another service (as the MCP client does).
export { hasProgressListener, signalEndsWithAttempt } from '../src/attempt.js';
export { parseJsonArgs, refusedArgs } from '../src/internal/raw-json-args.js';
// For a layer that judges approvals: the `approval_denied` of a call a person refused in the host.
export { hostDenialOf } from '../src/internal/host-denial.js';
// A call's fingerprint (its tool and canonical args), for a layer that binds something to the
// args: an idempotency key's claim, an approval token.
export { fingerprint } from '../src/fingerprint.js';
export type { Fingerprint } from '../src/fingerprint.js';
// For a layer that sets a limit: the layers inside end with it, even one that never settles.
export { untilLimitEnds } from '../src/internal/limits.js';
// What an attempt costs, for a layer that counts it (windowedBudget).
export { attemptCost } from '../src/internal/cost.js';
// For a layer that reads a tool field of its own: the registry then accepts and checks it.
export { declareToolField } from '../src/registry.js';
export type { ToolField } from '../src/registry.js';
// For a layer that finds an action's outcome lost (the idempotency leader's lost lease, say).
export {
  foundNotCommitted,
  outcomeUnknown,
  reconcileFindingOf,
  reconcileOutcome,
} from '../src/internal/reconcile.js';
export type { ReconcileFinding, Reconciled } from '../src/internal/reconcile.js';
// The onion engine, for a stack of your own (`[audit, compose(defaultStack(…))]`), and the clock
// every layer defaults to.
export { compose } from '../src/compose.js';
export type { ComposableMiddleware, ComposableStack, ComposedMiddleware } from '../src/compose.js';
export { systemClock } from '../src/clock.js';
// For a host bridge of your own (the built-in ones are made with these): the JSON-safe renderer,
// the JSON-RPC code of a kind, a provider-safe name map and root object schema, and a host's call
// as dispatch options.
export { toJsonSafe } from '../src/json-safe.js';
export type { JsonSafeOptions } from '../src/json-safe.js';
export { jsonRpcCodeFor } from '../src/errors.js';
export { createNameMap } from '../src/name-map.js';
export type { NameMap, NameMapOptions } from '../src/name-map.js';
export { toObjectSchema } from '../src/object-schema.js';
export type { JsonObjectSchema } from '../src/object-schema.js';
export { providerCallOptions } from '../src/provider-call.js';
export type { ProviderCall } from '../src/provider-call.js';
