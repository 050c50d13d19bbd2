/**
 * The default stack: the layers that keep the contract, in their order, as an array.
 * @module
 */

import type { ToolRegistry } from '../../src/registry.js';
import type { Middleware } from '../../src/types.js';
import { type Autopilot, autopilotInTimeoutPlace } from '../autopilot/index.js';
import { budgetGuard } from '../budget-guard.js';
import { concurrencyLimit, type ConcurrencyLimitOptions } from '../concurrency-limit/index.js';
import { errorMapping } from '../error-mapping.js';
import { idempotency, type IdempotencyOptions } from '../idempotency/index.js';
import { rateLimit, type RateLimitOptions } from '../rate-limit/index.js';
import { retry, type RetryOptions } from '../retry.js';
import { windowedBudget, type WindowedBudgetOptions } from '../windowed-budget/index.js';
import { schemaValidation, type SchemaValidationOptions } from '../schema-validation/index.js';
import { timeout, type TimeoutOptions, timeoutSettings } from '../timeout/index.js';
import { toolLookup } from '../tool-lookup.js';
import { optionKeys, rejectUnknownKeys } from '../kit.js';

/** Options for `defaultStack`: the registry, and each layer's own options. */
export interface DefaultStackOptions {
  /** Where tools are looked up. */
  registry: Pick<ToolRegistry, 'get'>;
  /** Options for `schemaValidation`. */
  schema?: SchemaValidationOptions;
  /** Options for `idempotency`. */
  idempotency?: IdempotencyOptions;
  /** Options for `concurrencyLimit`. */
  concurrency?: ConcurrencyLimitOptions;
  /** A layer placed between `idempotency` and `concurrencyLimit`, such as a `circuitBreaker()`. */
  breaker?: Middleware;
  /** Options for `retry`. */
  retry?: RetryOptions;
  /** `rateLimit` layers (one per options object), between `retry` and `timeout`. @default none */
  rateLimit?: RateLimitOptions | readonly RateLimitOptions[];
  /** `windowedBudget` layers (one per options object), after the rate limits. @default none */
  windowedBudget?: WindowedBudgetOptions | readonly WindowedBudgetOptions[];
  /** Options for `timeout` (with an `autopilot`, the static deadline it gives in the timeout's place). */
  timeout?: TimeoutOptions;
  /**
   * An `autopilot()`, placed after the rate limits and windowed budgets in the timeout's place
   * (inside `retry`, so it sees each attempt): it gives each attempt the static deadline `timeout`
   * would, tightened to the tool's own once it has one. Its retry budget becomes `retry`'s `budget`.
   */
  autopilot?: Autopilot;
  /**
   * An `approvalGate()`, placed after schema validation and before the budget guard: the spelling
   * every host bridge uses (`toAiSdkTools({ approvals })`, `createMcpServer({ approvals })`…).
   */
  approvals?: Middleware;
  /** @deprecated The old spelling of `approvals`; it still works (give one of the two). */
  approval?: Middleware;
  /** An `outputGuard()`, placed right inside error mapping. */
  output?: Middleware;
}

const defaultStackOptionKeys = optionKeys<DefaultStackOptions>({
  registry: true,
  schema: true,
  idempotency: true,
  concurrency: true,
  breaker: true,
  retry: true,
  rateLimit: true,
  windowedBudget: true,
  timeout: true,
  autopilot: true,
  approvals: true,
  approval: true,
  output: true,
});

/**
 * The stack that keeps the contract, outermost first: error mapping, (output guard), tool lookup,
 * schema validation, (approval gate), budget guard, idempotency, (breaker), concurrency limit,
 * retry, (rate limits, windowed budgets), timeout (or, given one, the autopilot in its place). The
 * slots only say where a layer goes: placed by hand anywhere in an array, a layer runs the same.
 *
 * @example
 * const dispatcher = createDispatcher([audit, ...defaultStack({ registry, retry: { maxAttempts: 5 } })]);
 * @example
 * defaultStack({ registry, breaker: circuitBreaker({ failureThreshold: 3 }) });
 * @example
 * defaultStack({ registry, concurrency: { max: 4, key: (ctx) => ctx.options.tenant, maxQueue: 32 },
 *   rateLimit: { key: (ctx) => `search:${ctx.options.tenant}`, rate: 5, intervalMs: 1_000 },
 *   windowedBudget: { key: (ctx) => ctx.options.tenant, limit: 10_000, windowMs: 86_400_000 } });
 * @example
 * defaultStack({ registry, autopilot: autopilot({ mode: 'shadow' }) });
 * @example
 * defaultStack({ registry, approvals: approvalGate({ registry }), output: outputGuard({ maxChars: 8_000 }) });
 * @example
 * defaultStack({ registry, idempotency: { store: redisIdempotencyStore(redis) },
 *   concurrency: { max: 8, store: redisSlotStore(redis, { pool: 'billing-api', max: 16 }) } });
 */
export function defaultStack(options: DefaultStackOptions): Middleware[] {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('defaultStack() needs an options object with a registry');
  }
  rejectUnknownKeys('defaultStack', options, defaultStackOptionKeys);
  const { breaker, output } = options;
  const approval = approvalGateOf(options);
  if (breaker !== undefined && typeof breaker !== 'function') {
    throw new TypeError('defaultStack() breaker must be a middleware function');
  }
  if (approval !== undefined && typeof (approval as { evaluate?: unknown }).evaluate !== 'function') {
    throw new TypeError('defaultStack() approvals must be an approvalGate()');
  }
  if (output !== undefined && typeof (output as { maxChars?: unknown }).maxChars !== 'number') {
    throw new TypeError('defaultStack() output must be an outputGuard()');
  }
  const pilot = options.autopilot;
  if (
    pilot !== undefined &&
    (typeof pilot !== 'function' || typeof (pilot as { snapshot?: unknown }).snapshot !== 'function')
  ) {
    throw new TypeError('defaultStack() autopilot must be an autopilot()');
  }
  return [
    errorMapping(),
    ...listOf(output),
    toolLookup(options.registry),
    schemaValidation(options.schema),
    ...listOf(approval),
    budgetGuard(),
    idempotency(options.idempotency),
    ...listOf(breaker),
    concurrencyLimit(options.concurrency),
    retry(retryOptionsOf(options.retry, pilot)),
    ...listOf(options.rateLimit).map((given) => rateLimit(given)),
    ...listOf(options.windowedBudget).map((given) => windowedBudget(given)),
    // The autopilot gives each attempt its deadline in the timeout's place: one limit, not two.
    pilot === undefined
      ? timeout(options.timeout)
      : autopilotInTimeoutPlace(pilot, timeoutSettings(options.timeout)),
  ];
}

// The autopilot's retry budget is retry's, unless the caller gave retry one (then it must choose).
function retryOptionsOf(
  given: RetryOptions | undefined,
  pilot: Autopilot | undefined,
): RetryOptions | undefined {
  const budget = pilot?.retryBudget;
  if (budget === undefined) return given;
  if (given?.budget !== undefined) {
    throw new TypeError(
      'defaultStack() takes one retry budget: give it to autopilot({ retryBudget }) or to retry: { budget }, with autopilot({ retryBudget: false })',
    );
  }
  return { ...given, budget };
}

// `approval` is the old spelling: before both were read, a bridge-style `approvals` here was silently ignored.
function approvalGateOf({ approvals, approval }: DefaultStackOptions): Middleware | undefined {
  if (approvals !== undefined && approval !== undefined && approvals !== approval) {
    throw new TypeError(
      'defaultStack() takes one approval gate: give approvals (approval is its old spelling)',
    );
  }
  return approvals ?? approval;
}

function listOf<Options>(given: Options | readonly Options[] | undefined): readonly Options[] {
  if (given === undefined) return [];
  return Array.isArray(given) ? given : [given as Options];
}
