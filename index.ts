/**
 * tool-dispatcher: what a user of the dispatcher needs, under pinned names: the dispatcher, the
 * registry, the error envelope, every layer and the default stack with their options, the helpers
 * a harness loop uses, and the types. The author kit (`compose`, `sleep`, `raceAbort`, the option
 * checks, the helpers a host bridge is made with…) and the in-memory stores live in
 * `tool-dispatcher/middleware`. Host integrations live under their own subpaths
 * (`tool-dispatcher/openai`, `/mcp`, `/otel`, …) and are never loaded from here.
 * @module tool-dispatcher
 */

// The dispatcher and the registry.
export { createDispatcher, ToolRegistry } from './src/index.js';
export type {
  DispatchCall,
  Dispatcher,
  DispatcherOptions,
  GatherOptions,
  RegisterOptions,
  ToolListing,
} from './src/index.js';

// The envelope.
export {
  DispatchError,
  isDispatchError,
  toDispatchError,
  OutcomeUnknownError,
  ToolError,
  TransientError,
} from './src/index.js';
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
} from './src/index.js';

// Reading a backend's 429 (rate limits).
export { classifyRateLimit, parseRetryAfter } from './src/index.js';
export type { HeadersLike, RetryAfterOptions } from './src/index.js';

// The helpers a harness loop uses.
export {
  createBudget,
  createRedactor,
  harnessStep,
  toolAnswer,
  toToolMessage,
} from './src/index.js';
export type {
  Budget,
  Clock,
  HarnessHook,
  HarnessStep,
  HarnessStepOptions,
  LocalBudget,
  RedactPattern,
  Redactor,
  RedactorOptions,
  ToolAnswer,
  ToolAnswerOptions,
  ToolMessageOptions,
} from './src/index.js';

// The onion, the tools and the events.
export type {
  ApprovalTicket,
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
  DispatchOptions,
  DispatchSuccess,
  EventListener,
  KnownDispatchEvent,
  Middleware,
  Next,
  Outcome,
  ProgressUpdate,
  StandardSchemaV1,
  Tool,
  ToolContext,
  ToolDefinition,
  ToolHandler,
  ToolTimeout,
  Reconcile,
  ReconcileContext,
  ReconcileVerdict,
} from './src/index.js';

// The state seam: what a store implements (the memory stores are in `tool-dispatcher/middleware`).
// The shared plumbing is the core's; each layer's store contract lives beside its layer.
export type { MaybePromise, StoreBudget, StoreLease } from './src/index.js';
export type {
  CircuitRecord,
  CircuitStore,
  CircuitStoreState,
  CircuitView,
  IdempotencyClaim,
  IdempotencyCompletion,
  IdempotencyLease,
  IdempotencyPeek,
  IdempotencyStore,
  SlotPermit,
  SlotStore,
  SlotWaiter,
  StoreFingerprint,
  RateBucket,
  RateGrant,
  RateStore,
  Receipt,
  ReceiptQuery,
  ReceiptStore,
  WindowReservation,
  WindowStore,
  AutopilotStore,
  LatencySketchData,
  RetryBudgetStore,
  RetryBudgetWindow,
} from './middleware/index.js';

// The layers and the default stack.
export {
  approvalGate,
  autopilot,
  retryBudget,
  memoryApprovalStore,
  memorySpillStore,
  outputGuard,
  budgetGuard,
  circuitBreaker,
  concurrencyLimit,
  defaultStack,
  errorMapping,
  idempotency,
  isCircuitFailure,
  isRetryable,
  logging,
  rateLimit,
  retry,
  schemaValidation,
  timeout,
  toolLookup,
  windowedBudget,
} from './middleware/index.js';
export type {
  ApprovalAction,
  ApprovalCall,
  ApprovalRequirement,
  ApprovalDecision,
  ApprovalGate,
  ApprovalGateOptions,
  ToolSource,
  ApprovalRecord,
  ApprovalStore,
  ApprovalVerdict,
  ApprovalAuditRecord,
  ApprovalDecidedEvent,
  ApprovalListQuery,
  ApprovalPage,
  ApproveOptions,
  DenyOptions,
  OutputGuardLayer,
  OutputGuardMiddleware,
  OutputGuardOptions,
  SpillStore,
  CircuitBreakerLayer,
  CircuitBreakerMiddleware,
  CircuitBreakerOptions,
  CircuitSnapshot,
  CircuitState,
  ConcurrencyLimitLayer,
  ConcurrencyLimitMiddleware,
  ConcurrencyLimitOptions,
  RateLimitOptions,
  WindowedBudgetOptions,
  ConcurrencyLoad,
  DefaultStackOptions,
  IdempotencyLayer,
  IdempotencyMiddleware,
  IdempotencyOptions,
  IdempotencySize,
  Logger,
  LoggingOptions,
  LogLevel,
  LogRecord,
  RetryOptions,
  RetryBudgetLike,
  SchemaValidationOptions,
  TimeoutOptions,
  Autopilot,
  AutopilotConcurrencyOptions,
  AutopilotHedgeOptions,
  AutopilotKnob,
  AutopilotOptions,
  AutopilotRetryBudget,
  AutopilotRetryBudgetOptions,
  AutopilotSnapshot,
  AutopilotTimeoutOptions,
  OutcomePolicy,
  PolicyBudgetState,
  RetryBudget,
  RetryBudgetOptions,
  RetryThrottleOptions,
} from './middleware/index.js';
