/**
 * The attribute and event names the OpenTelemetry layers write, and how a dispatch event becomes one.
 * @module
 */

import type { Attributes } from '@opentelemetry/api';
import type { DispatchContext, DispatchEvent } from '../../index.js';
import type { Failure } from './safe-message.js';

/** The instrumentation scope both layers report under. */
export const scopeName = 'tool-dispatcher';

/** The package version the scope reports; a test keeps it equal to package.json's. */
export const scopeVersion = '0.1.0';

/** Names from the GenAI semantic conventions (semantic-conventions-genai, execute_tool span and metric). */
export const genAi = {
  operationName: 'gen_ai.operation.name',
  toolName: 'gen_ai.tool.name',
  toolType: 'gen_ai.tool.type',
  toolCallId: 'gen_ai.tool.call.id',
  toolDescription: 'gen_ai.tool.description',
  toolCallArguments: 'gen_ai.tool.call.arguments',
  toolCallResult: 'gen_ai.tool.call.result',
  errorType: 'error.type',
  executeTool: 'execute_tool',
} as const;

/** What only the dispatcher knows, under its own namespace. */
export const ours = {
  attempts: 'tool_dispatcher.attempts',
  attempt: 'tool_dispatcher.attempt',
  retries: 'tool_dispatcher.retries',
  retryDelayMs: 'tool_dispatcher.retry.delay_ms',
  retryTotalDelayMs: 'tool_dispatcher.retry.total_delay_ms',
  timeoutMs: 'tool_dispatcher.timeout_ms',
  queueLength: 'tool_dispatcher.queue.length',
  queueWaitMs: 'tool_dispatcher.queue.wait_ms',
  concurrencyMax: 'tool_dispatcher.concurrency.max',
  idempotencySource: 'tool_dispatcher.idempotency.source',
  receiptStatus: 'tool_dispatcher.receipt.status',
  circuitState: 'tool_dispatcher.circuit.state',
  outcomeWindow: 'tool_dispatcher.outcome.window',
  approvalDecision: 'tool_dispatcher.approval.decision',
  circuitKey: 'tool_dispatcher.circuit.key',
  circuitFailures: 'tool_dispatcher.circuit.failures',
  circuitCooldownMs: 'tool_dispatcher.circuit.cooldown_ms',
  budgetRemaining: 'tool_dispatcher.budget.remaining',
  errorMessage: 'tool_dispatcher.error.message',
  policyMode: 'tool_dispatcher.policy.mode',
  policyTimeoutMs: 'tool_dispatcher.policy.timeout_ms',
  policySource: 'tool_dispatcher.policy.source',
  policyCutOff: 'tool_dispatcher.policy.cut_off',
  policyHedged: 'tool_dispatcher.policy.hedged',
  policyRetried: 'tool_dispatcher.policy.retried',
  policyBudget: 'tool_dispatcher.policy.budget',
} as const;

/** The name metrics use for a tool the registry does not know, so invented names add no series. */
export const unknownTool = '_OTHER';

/** The tool name for metric attributes: the registry's name, or `_OTHER` before or without a lookup. */
export function metricToolName(ctx: DispatchContext): string {
  const name = ctx.tool?.name;
  return typeof name === 'string' ? name : unknownTool;
}

/** The dispatch events that end a call; the span and the duration are closed on them. */
export function isTerminal(type: string): boolean {
  return type === 'dispatch.success' || type === 'dispatch.failure';
}

// Event details with a fixed meaning, and the attribute each becomes. Anything else a layer
// emits is kept only when it is a number or a boolean: strings may carry ids, keys or content.
const detailAttributes: Readonly<Record<string, string>> = {
  delayMs: ours.retryDelayMs,
  kind: genAi.errorType,
  timeoutMs: ours.timeoutMs,
  queued: ours.queueLength,
  max: ours.concurrencyMax,
  waitedMs: ours.queueWaitMs,
  source: ours.idempotencySource,
  receiptStatus: ours.receiptStatus,
  failures: ours.circuitFailures,
  cooldownMs: ours.circuitCooldownMs,
};

// Never recorded: an idempotency key (the conventions forbid raw keys), the envelope fields
// every event carries, and anything that may hold content or a stack.
const skippedDetails = new Set([
  'type',
  'tool',
  'callId',
  'attempt',
  'key',
  'message',
  'cause',
  'stack',
  'error',
]);

/**
 * The span event for a dispatch event: `tool_dispatcher.<type>`, with the attempt number and the
 * event's low-cardinality details under `tool_dispatcher.*` (and `error.type` for its kind). A
 * failed attempt's message is recorded as `messageOf` tells (see `safeMessage`).
 */
export function spanEventAttributes(
  event: DispatchEvent,
  maxLength: number,
  messageOf: (failure: Failure) => string,
): Attributes {
  const attributes: Attributes = { [ours.attempt]: event.attempt };
  for (const name of Object.keys(event)) {
    if (skippedDetails.has(name)) continue;
    const value: unknown = event[name];
    const mapped = detailAttributes[name];
    if (mapped !== undefined) {
      if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
        attributes[mapped] = value;
      }
    } else if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean') {
      attributes[`tool_dispatcher.${snakeCase(name)}`] = value;
    }
  }
  if (event.type.startsWith('circuit.') && typeof event.key === 'string') {
    // A circuit key names a tool or a backend (a bounded set, per circuitBreaker's docs).
    attributes[ours.circuitKey] = truncate(event.key, maxLength);
  }
  const error = event.error as { kind?: unknown; message?: unknown; cause?: unknown } | undefined;
  if (event.type === 'dispatch.attempt_failed' && typeof error?.message === 'string') {
    const kind = typeof error.kind === 'string' ? error.kind : String(event.kind);
    const message = messageOf({ kind, message: error.message, cause: error.cause });
    attributes[ours.errorMessage] = truncate(message, maxLength);
  }
  return attributes;
}

/** `text` cut to `maxLength` characters, with an ellipsis when it was longer. */
export function truncate(text: string, maxLength: number): string {
  return text.length <= maxLength ? text : `${text.slice(0, Math.max(0, maxLength - 1))}…`;
}

/**
 * A value as attribute text: strings as they are (JSON arguments arrive that way), anything else
 * as JSON; a value JSON cannot write becomes a short placeholder. Cut to `maxLength`.
 */
export function attributeText(value: unknown, maxLength: number): string {
  if (typeof value === 'string') return truncate(value, maxLength);
  let text: string | undefined;
  try {
    text = JSON.stringify(value, (_key, inner: unknown) =>
      typeof inner === 'bigint' ? inner.toString() : inner,
    );
  } catch {
    text = undefined;
  }
  return truncate(text ?? `[${typeof value}]`, maxLength);
}

function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}
