// The public API of tool-dispatcher: the core and every middleware factory.

export { createDispatcher, defaultStack } from './dispatcher.js';
export type { DefaultStackOptions, Dispatcher, DispatcherOptions } from './dispatcher.js';
export type { DispatchCall, GatherOptions } from './gather.js';
export { compose } from './compose.js';
export type { ComposableMiddleware, ComposedMiddleware } from './compose.js';
export { ToolRegistry, defaultToolTimeoutMs } from './registry.js';
export type { RegisterOptions, ToolListing } from './registry.js';
export {
  DispatchError,
  ToolError,
  TransientError,
  isDispatchError,
  jsonRpcCodeFor,
  toDispatchError,
  withoutStackFrames,
} from './errors.js';
export type {
  DispatchErrorJson,
  DispatchErrorKind,
  DispatchErrorOptions,
  JsonRpcError,
  JsonRpcErrorCode,
  JsonRpcErrorData,
  ToolErrorOptions,
  TransientErrorOptions,
} from './errors.js';
export { createNameMap } from './name-map.js';
export type { NameMap, NameMapOptions } from './name-map.js';
export { toObjectSchema } from './object-schema.js';
export type { JsonObjectSchema } from './object-schema.js';
export { createBudget } from './budget.js';
export type { Budget } from './budget.js';
export { systemClock } from './clock.js';
export type { Clock } from './clock.js';
export type { StandardSchemaV1 } from './standard-schema.js';
export type {
  CustomDispatchEvent,
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
} from './types.js';

export { errorMapping } from '../middleware/error-mapping.js';
export { toolLookup } from '../middleware/tool-lookup.js';
export { schemaValidation } from '../middleware/schema-validation.js';
export type { SchemaValidationOptions } from '../middleware/schema-validation.js';
export { budgetGuard } from '../middleware/budget-guard.js';
export { idempotency } from '../middleware/idempotency.js';
export type {
  IdempotencyMiddleware,
  IdempotencyOptions,
  IdempotencySize,
} from '../middleware/idempotency.js';
export { concurrencyLimit } from '../middleware/concurrency-limit.js';
export type {
  ConcurrencyLimitMiddleware,
  ConcurrencyLimitOptions,
  ConcurrencyLoad,
} from '../middleware/concurrency-limit.js';
export { retry, isRetryable } from '../middleware/retry.js';
export type { RetryOptions } from '../middleware/retry.js';
export { timeout } from '../middleware/timeout.js';
export type { TimeoutOptions } from '../middleware/timeout.js';
export { logging } from '../middleware/logging.js';
export type { LoggingOptions, Logger, LogLevel, LogRecord } from '../middleware/logging.js';
export { harnessStep, toToolMessage } from './harness.js';
export type {
  HarnessHook,
  HarnessStep,
  HarnessStepOptions,
  ToolMessageOptions,
} from './harness.js';
export { circuitBreaker, isCircuitFailure } from '../middleware/circuit-breaker.js';
export type {
  CircuitBreakerMiddleware,
  CircuitBreakerOptions,
  CircuitSnapshot,
  CircuitState,
} from '../middleware/circuit-breaker.js';
