/**
 * The core of tool-dispatcher: the dispatcher, the registry, the envelope, the seams and helpers.
 * @module
 */

export { createDispatcher } from './dispatcher.js';
export type { Dispatcher, DispatcherOptions } from './dispatcher.js';
export type { DispatchCall, GatherOptions } from './gather.js';
export { compose } from './compose.js';
export type { ComposableMiddleware, ComposableStack, ComposedMiddleware } from './compose.js';
export { ToolRegistry, defaultToolTimeoutMs } from './registry.js';
export type { RegisterOptions, ToolListing } from './registry.js';
export {
  DispatchError,
  OutcomeUnknownError,
  ToolError,
  TransientError,
  isDispatchError,
  jsonRpcCodeFor,
  toDispatchError,
} from './errors.js';
export type {
  DispatchErrorJson,
  DispatchErrorKind,
  DispatchErrorOptions,
  JsonRpcError,
  JsonRpcErrorCode,
  JsonRpcErrorData,
  OutcomeUnknownErrorOptions,
  OutcomeWindow,
  ToolErrorKind,
  ToolErrorOptions,
  TransientErrorOptions,
} from './errors.js';
export { classifyRateLimit, parseRetryAfter } from './rate-limit-signals.js';
export type { HeadersLike, RetryAfterOptions } from './rate-limit-signals.js';
export { createNameMap } from './name-map.js';
export type { NameMap, NameMapOptions } from './name-map.js';
export { toObjectSchema } from './object-schema.js';
export type { JsonObjectSchema } from './object-schema.js';
export { createRedactor } from './redact.js';
export type { RedactPattern, Redactor, RedactorOptions } from './redact.js';
export { createBudget } from './budget.js';
export type { Budget, LocalBudget } from './budget.js';
export { systemClock } from './clock.js';
export type { Clock } from './clock.js';
export type { StandardSchemaV1 } from './standard-schema.js';
export type { ApprovalTicket } from './errors.js';
export type {
  ModelCopy,
  ToolAnnotations,
  AttemptLimits,
  CustomDispatchEvent,
  DeadlineClock,
  DispatchContext,
  DispatchEvent,
  DispatchEventBase,
  DispatchEventDetails,
  DispatchEventOf,
  DispatchEventType,
  KnownDispatchEvent,
  ProgressUpdate,
  DispatchOptions,
  DispatchSuccess,
  EventListener,
  Middleware,
  Next,
  Outcome,
  Tool,
  ToolContext,
  ToolDefinition,
  ToolHandler,
  ToolTimeout,
  Reconcile,
  ReconcileContext,
  ReconcileVerdict,
} from './types.js';

export { harnessStep, toolAnswer, toToolMessage } from './harness.js';
export { toJsonSafe } from './json-safe.js';
export { fingerprint } from './fingerprint.js';
export type { Fingerprint } from './fingerprint.js';
export { providerCallOptions } from './provider-call.js';
export type { ProviderCall } from './provider-call.js';
export type { JsonSafeOptions } from './json-safe.js';
export type {
  HarnessHook,
  HarnessStep,
  HarnessStepOptions,
  ToolAnswer,
  ToolAnswerOptions,
  ToolMessageOptions,
} from './harness.js';
export * from './stores.js';
