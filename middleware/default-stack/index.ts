/**
 * The default stack: the layers that keep the contract, in their order, with their fast runner.
 * @module
 */

import { fuseLayers } from '../../src/stack-runner.js';
import type { ToolRegistry } from '../../src/registry.js';
import { DispatchError } from '../../src/errors.js';
import type { DispatchContext, Middleware } from '../../src/types.js';
import { createBudgetGuard } from '../budget-guard.js';
import { createConcurrencyLimit, type ConcurrencyLimitOptions } from '../concurrency-limit/index.js';
import { errorMapping } from '../error-mapping.js';
import { idempotency, type IdempotencyOptions } from '../idempotency/index.js';
import { createRateLimit, type RateLimitOptions } from '../rate-limit/index.js';
import { createRetry, type RetryOptions } from '../retry.js';
import { createWindowedBudget, type WindowedBudgetOptions } from '../windowed-budget/index.js';
import { createSchemaValidation, type SchemaValidationOptions } from '../schema-validation/index.js';
import { createTimeout, type TimeoutOptions } from '../timeout/index.js';
import { createToolLookup } from '../tool-lookup.js';
import { gateCheckOf } from '../approval-gate/index.js';
import { checkContract } from '../output-contract.js';
import { outputStepOf, type OutputStep } from '../output-guard/index.js';
import { fusedDefaultStack } from './fused.js';
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
  /** Options for `timeout`. */
  timeout?: TimeoutOptions;
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
  approvals: true,
  approval: true,
  output: true,
});

/**
 * The stack that keeps the contract, outermost first: error mapping, (output guard), tool lookup,
 * schema validation, (approval gate), budget guard, idempotency, (breaker), concurrency limit,
 * retry, (rate limits, windowed budgets), timeout. The dispatcher runs these layers fused wherever
 * they end a stack.
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
  const timeout = createTimeout(options.timeout);
  const gateCheck = approval === undefined ? undefined : gateCheckOf(approval);
  if (approval !== undefined && gateCheck === undefined) {
    throw new TypeError('defaultStack() approvals must be an approvalGate()');
  }
  const outputStep = output === undefined ? undefined : outputStepOf(output);
  if (output !== undefined && outputStep === undefined) {
    throw new TypeError('defaultStack() output must be an outputGuard()');
  }
  const parts = {
    breaker,
    approvalGate:
      approval === undefined || gateCheck === undefined ? undefined : { layer: approval, check: gateCheck },
    afterSuccess: afterSuccess(outputStep),
    errorMapping: errorMapping(),
    toolLookup: createToolLookup(options.registry),
    schemaValidation: createSchemaValidation(options.schema),
    budgetGuard: createBudgetGuard(),
    idempotency: idempotency(options.idempotency),
    concurrencyLimit: createConcurrencyLimit(options.concurrency),
    retry: createRetry(options.retry),
    rateLimits: listOf(options.rateLimit).map((given) => createRateLimit(given, timeout.deadlineMs)),
    windowedBudgets: listOf(options.windowedBudget).map((given) => createWindowedBudget(given)),
    timeout,
  };
  const layers: Middleware[] = [
    parts.errorMapping,
    ...(output === undefined ? [] : [output]),
    parts.toolLookup.layer,
    parts.schemaValidation.layer,
    ...(approval === undefined ? [] : [approval]),
    parts.budgetGuard.layer,
    parts.idempotency,
    ...(breaker === undefined ? [] : [breaker]),
    parts.concurrencyLimit.layer,
    parts.retry.layer,
    ...parts.rateLimits.map((part) => part.layer),
    ...parts.windowedBudgets.map((part) => part.layer),
    parts.timeout.layer,
  ];
  fuseLayers(layers, fusedDefaultStack(parts));
  return layers;
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

// After a success, as the layers outside the lookup would see it: the tool's output contract
// (checked by the lookup layer), then the output guard.
function afterSuccess(step: OutputStep | undefined) {
  return (ctx: DispatchContext): DispatchError | undefined | Promise<DispatchError | undefined> => {
    if (ctx.tool?.outputSchema === undefined) return step?.(ctx);
    const broken = checkContract(ctx);
    if (step === undefined || broken instanceof DispatchError) return broken;
    if (broken === undefined) return step(ctx);
    return broken.then((problem) => problem ?? step(ctx));
  };
}
