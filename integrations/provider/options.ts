/**
 * The option checks the OpenAI and Anthropic toolkits share: the toolkit's own options and a
 * batch's run options, each a `TypeError` naming the option.
 * @module
 */

import { createBudget, type Budget, type DispatchOptions } from '../../index.js';
import { optionKeys, rejectUnknownKeys } from '../../middleware/index.js';

/** The options both provider toolkits take. */
export interface ProviderToolkitBase {
  registry: unknown;
  dispatcher: unknown;
  idempotencyScope?: string | undefined;
  keyByCallId?: boolean | undefined;
  maxMessageLength?: number | undefined;
}

/** The run options both provider toolkits take, per batch or turn. */
export interface ProviderRunOptions {
  signal?: AbortSignal | null | undefined;
  budget?: number | Budget | undefined;
  timeoutMs?: number | undefined;
  idempotencyScope?: string | undefined;
  approvals?: Readonly<Record<string, string | { approvedBy: string }>> | undefined;
}

const runOptionKeys = optionKeys<ProviderRunOptions>({
  signal: true,
  budget: true,
  timeoutMs: true,
  idempotencyScope: true,
  approvals: true,
});

/** A batch's dispatch options, its idempotency scope and its approvals by call id. */
export interface ProviderRun {
  options: DispatchOptions;
  scope: string | undefined;
  approvals?: ProviderRunOptions['approvals'];
}

/**
 * Checks the options a provider toolkit shares with the other one, and that it has no key outside
 * `known` (the toolkit's own option keys).
 *
 * @example
 * checkToolkitOptions('createOpenAIToolkit()', options, openAIToolkitOptionKeys);
 */
export function checkToolkitOptions(
  factory: string,
  options: ProviderToolkitBase,
  known: readonly string[],
): void {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`${factory} needs an options object with a registry and a dispatcher`);
  }
  rejectUnknownKeys(factory, options, known);
  const { registry, dispatcher, idempotencyScope, keyByCallId = false, maxMessageLength = 2000 } = options;
  if (typeof (registry as { list?: unknown } | undefined)?.list !== 'function')
    throw new TypeError('registry must be a ToolRegistry (something with list())');
  const { dispatch, dispatchJson } = (dispatcher ?? {}) as { dispatch?: unknown; dispatchJson?: unknown };
  if (typeof dispatchJson !== 'function' || typeof dispatch !== 'function') {
    throw new TypeError('dispatcher must be a Dispatcher (with dispatch() and dispatchJson())');
  }
  requireScope(idempotencyScope);
  if (typeof keyByCallId !== 'boolean')
    throw new TypeError(`keyByCallId must be a boolean, got ${String(keyByCallId)}`);
  if (maxMessageLength !== Infinity && !(Number.isInteger(maxMessageLength) && maxMessageLength >= 1)) {
    throw new TypeError(
      `maxMessageLength must be an integer >= 1 or Infinity, got ${String(maxMessageLength)}`,
    );
  }
}

/**
 * Reads a batch's run options; `ids` names what the approvals are keyed by in its error.
 *
 * @example
 * const run = readRunOptions(options, toolkitScope, 'call ids');
 */
export function readRunOptions(
  options: ProviderRunOptions | undefined,
  defaultScope: string | undefined,
  ids: string,
): ProviderRun {
  if (options === undefined) return { options: {}, scope: defaultScope };
  if (typeof options !== 'object' || options === null)
    throw new TypeError(`run options must be an object, got ${String(options)}`);
  rejectUnknownKeys('run options', options, runOptionKeys);
  const { signal, budget, timeoutMs, idempotencyScope, approvals } = options;
  if (approvals !== undefined && (typeof approvals !== 'object' || approvals === null)) {
    throw new TypeError(`approvals must be an object of ${ids} to approval tokens`);
  }
  const out: DispatchOptions = {};
  if (signal !== undefined && signal !== null) {
    if (!(signal instanceof AbortSignal)) throw new TypeError('signal must be an AbortSignal');
    out.signal = signal;
  }
  // A number is the batch's allowance, so it becomes one budget all of the batch's calls share.
  if (budget !== undefined) out.budget = typeof budget === 'number' ? createBudget(budget) : budget;
  if (timeoutMs !== undefined) {
    if (typeof timeoutMs !== 'number' || !(timeoutMs > 0))
      throw new TypeError(`timeoutMs must be a number > 0 (or Infinity), got ${String(timeoutMs)}`);
    out.timeoutMs = timeoutMs;
  }
  requireScope(idempotencyScope);
  return { options: out, scope: idempotencyScope ?? defaultScope, approvals };
}

function requireScope(scope: unknown): void {
  if (scope !== undefined && (typeof scope !== 'string' || scope === '')) {
    throw new TypeError(`idempotencyScope must be a non-empty string, got ${JSON.stringify(scope)}`);
  }
}
