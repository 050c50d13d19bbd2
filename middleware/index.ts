/**
 * Every middleware factory of tool-dispatcher, the default stack, the memory stores and the kit.
 * @module tool-dispatcher/middleware
 */

// The layers' tool fields, declared to the registry when these modules load: every entry of the
// package reaches this face, and package.json lists it and them in sideEffects, so no bundler
// drops them (a bundler skips a side-effect-free face, effect imports and all, when it follows a
// re-export straight to the module that declares the name).
import './approval-gate/tool-fields.js';
import './windowed-budget/tool-fields.js';

export { defaultStack } from './default-stack/index.js';
export type { DefaultStackOptions } from './default-stack/index.js';
export { errorMapping } from './error-mapping.js';
export { toolLookup } from './tool-lookup.js';
export { schemaValidation } from './schema-validation/index.js';
export type { SchemaValidationOptions } from './schema-validation/index.js';
export { budgetGuard } from './budget-guard.js';
export { idempotency } from './idempotency/index.js';
export type {
  IdempotencyLayer,
  IdempotencyMiddleware,
  IdempotencyOptions,
  IdempotencySize,
} from './idempotency/index.js';
export { concurrencyLimit } from './concurrency-limit/index.js';
export type {
  ConcurrencyLimitLayer,
  ConcurrencyLimitMiddleware,
  ConcurrencyLimitOptions,
  ConcurrencyLoad,
} from './concurrency-limit/index.js';
export { retry, isRetryable } from './retry.js';
export type { RetryBudgetLike, RetryOptions } from './retry.js';
export { autopilot } from './autopilot/index.js';
export type {
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
} from './autopilot/index.js';
export { retryBudget } from './autopilot/retry-budget.js';
export type { RetryBudget, RetryBudgetOptions, RetryThrottleOptions } from './autopilot/retry-budget.js';
export { memoryAutopilotStore } from './autopilot/memory-store.js';
export type { MemoryAutopilotStore, MemoryAutopilotStoreOptions } from './autopilot/memory-store.js';
export type { AutopilotStore, RetryBudgetStore, RetryBudgetWindow } from './autopilot/store.js';
export type { LatencySketchData } from './autopilot/latency-sketch.js';
export { timeout } from './timeout/index.js';
export type { TimeoutOptions } from './timeout/index.js';
export { logging } from './logging.js';
export type { LoggingOptions, Logger, LogLevel, LogRecord } from './logging.js';
export { circuitBreaker, isCircuitFailure } from './circuit-breaker/index.js';
export type {
  CircuitBreakerLayer,
  CircuitBreakerMiddleware,
  CircuitBreakerOptions,
  CircuitSnapshot,
  CircuitState,
} from './circuit-breaker/index.js';
export { rateLimit } from './rate-limit/index.js';
export type { RateLimitOptions } from './rate-limit/index.js';
export { windowedBudget } from './windowed-budget/index.js';
export type { WindowedBudgetOptions } from './windowed-budget/index.js';
export { settledCost } from './windowed-budget/tool-fields.js';
export { memoryIdempotencyStore } from './idempotency/memory-store.js';
export { memoryReceiptStore } from './idempotency/receipts.js';
export type { MemoryReceiptStore, MemoryReceiptStoreOptions } from './idempotency/receipts.js';
export type { MemoryIdempotencyStore, MemoryIdempotencyStoreOptions } from './idempotency/memory-store.js';
export type {
  IdempotencyClaim,
  IdempotencyCompletion,
  IdempotencyLease,
  IdempotencyPeek,
  IdempotencyStore,
  Receipt,
  ReceiptQuery,
  ReceiptStore,
  StoreFingerprint,
} from './idempotency/store.js';
export { memorySlotStore } from './concurrency-limit/memory-store.js';
export type { MemorySlotStoreOptions } from './concurrency-limit/memory-store.js';
export type { SlotPermit, SlotStore, SlotWaiter } from './concurrency-limit/store.js';
export { memoryCircuitStore } from './circuit-breaker/memory-store.js';
export type { MemoryCircuitStore, MemoryCircuitStoreOptions } from './circuit-breaker/memory-store.js';
export type { CircuitRecord, CircuitStore, CircuitStoreState, CircuitView } from './circuit-breaker/store.js';
export { memoryRateStore } from './rate-limit/memory-store.js';
export type { MemoryRateStoreOptions } from './rate-limit/memory-store.js';
export type { RateBucket, RateGrant, RateStore } from './rate-limit/store.js';
export { memoryWindowStore } from './windowed-budget/memory-store.js';
export type { MemoryWindowStoreOptions } from './windowed-budget/memory-store.js';
export type { WindowReservation, WindowStore } from './windowed-budget/store.js';
export { approvalGate } from './approval-gate/index.js';
export type {
  ApprovalAction,
  ApprovalDecision,
  ApprovalGate,
  ApprovalGateOptions,
  ApprovalVerdict,
  ApproveOptions,
  ApprovalDecidedEvent,
  DenyOptions,
  EvaluateOptions,
} from './approval-gate/index.js';
export type { ApprovalCall, ApprovalRequirement } from './approval-gate/tool-fields.js';
export type { ToolSource } from './approval-gate/gate.js';
export { memoryApprovalStore } from './approval-gate/memory-store.js';
export type { MemoryApprovalStoreOptions } from './approval-gate/memory-store.js';
export type {
  ApprovalAnswer,
  ApprovalAuditPage,
  ApprovalAuditQuery,
  ApprovalAuditRecord,
  ApprovalDecisionKind,
  ApprovalListQuery,
  ApprovalPage,
  ApprovalRecord,
  ApprovalRedemption,
  ApprovalRequest,
  ApprovalSettlement,
  ApprovalStatus,
  ApprovalStore,
} from './approval-gate/store.js';
export { outputGuard } from './output-guard/index.js';
export type { OutputGuardLayer, OutputGuardMiddleware, OutputGuardOptions } from './output-guard/index.js';
export { memorySpillStore } from './output-guard/spill-store.js';
export type { MemorySpillStoreOptions, SpillStore } from './output-guard/spill-store.js';
export * from './kit.js';
