/**
 * The author kit: what a layer of your own needs (the waits, the library's envelopes, the option
 * checks, the store helpers, tool fields), the onion engine, and the helpers for a host bridge of
 * your own. `tool-dispatcher/middleware` exports all of it; the helpers only the built-in layers
 * and integrations share live in `./internal-kit.ts`, which no subpath exports.
 * @module
 */

export { maxTimerDelayMs, onAbort, raceAbort, sleep } from '../src/internal/abort.js';
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
// For a layer that puts a field of its own on outcomes (autopilot's `policy`), or rewords an
// envelope it passes on.
export { declareOutcomeField, withMessage } from '../src/errors.js';
export { keepLeaseAlive, storeUnavailable } from '../src/stores.js';
// For a handler that relays its call to another service (as the MCP client does).
export { hasProgressListener, signalEndsWithAttempt } from '../src/attempt.js';
// A call's fingerprint (its tool and canonical args), for a layer that binds something to the
// args: an idempotency key's claim, an approval token.
export { fingerprint } from '../src/fingerprint.js';
export type { Fingerprint } from '../src/fingerprint.js';
// For a layer that sets a limit: the layers inside end with it, even one that never settles.
export { untilLimitEnds } from '../src/internal/limits.js';
// For a layer that reads a tool field of its own: the registry then accepts and checks it.
export { declareToolField } from '../src/registry.js';
export type { ToolField } from '../src/registry.js';
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
