// Harness-loop helpers: what the agent loop does with an outcome, and how the model reads it.

import { withoutStackFrames } from './errors.js';
import { optionsObject, requireInteger } from './internal/options.js';
import { toJsonSafe } from './json-safe.js';
import type { Outcome } from './types.js';

/** The harness-loop hook an outcome calls for. */
export type HarnessHook = 'on_error' | 'on_budget_exceeded' | 'none';

/** What the loop should do after one tool call. */
export interface HarnessStep {
  /** The hook to run: `on_error`, `on_budget_exceeded`, or `none`. */
  readonly hook: HarnessHook;
  /**
   * Whether to ask the model for a new plan (other args, another tool, another approach) rather
   * than carry on or send the same call again.
   */
  readonly replan: boolean;
}

/** Options for `harnessStep`. */
export interface HarnessStepOptions {
  /**
   * The retry layer's `maxAttempts`: a `transient` failure with at least this many attempts
   * has exhausted its retries.
   * @default 3
   */
  maxAttempts?: number;
}

/** Options for `toToolMessage`. */
export interface ToolMessageOptions {
  /**
   * The longest message, in characters; longer ones end with `… [truncated]`. `Infinity` for
   * no cap.
   * @default 2000
   */
  maxLength?: number;
}

const none: HarnessStep = Object.freeze({ hook: 'none', replan: false });
const replanOnError: HarnessStep = Object.freeze({ hook: 'on_error', replan: true });
const retryOnError: HarnessStep = Object.freeze({ hook: 'on_error', replan: false });
const budgetSpent: HarnessStep = Object.freeze({ hook: 'on_budget_exceeded', replan: false });

/**
 * Decides the harness loop's next step for an outcome (SPEC §4):
 *
 * | outcome                                         | hook                 | replan |
 * |-------------------------------------------------|----------------------|--------|
 * | success                                         | `none`               | false  |
 * | `schema`, `not_found`, `idempotency_conflict`   | `on_error`           | true   |
 * | `timeout`/`transient`, attempts ≥ `maxAttempts` | `on_error`           | true   |
 * | `timeout`/`transient`, attempts < `maxAttempts` | `on_error`           | false  |
 * | `internal`, `circuit_open`, any other kind      | `on_error`           | true   |
 * | `budget_exceeded`                               | `on_budget_exceeded` | false  |
 * | `cancelled`                                     | `none`               | false  |
 *
 * As SPEC §4 has it, `timeout` and `transient` replan depending on attempts: once the call has
 * had every attempt it could have, trying it again is pointless and the loop should replan.
 * Pass the attempts the call could have had: the retry layer's `maxAttempts`, except for a
 * `timeout` of a tool that is not `idempotent`, which is never retried (a timed-out write may
 * have committed), so `maxAttempts: 1` there. `cancelled` means the caller chose to stop, so
 * there is nothing to do.
 *
 * @example
 * const outcome = await dispatcher.dispatch('search.web', { query: 'agents' });
 * const { hook, replan } = harnessStep(outcome, { maxAttempts: 3 });
 * if (hook === 'on_budget_exceeded') return finalAnswer();
 * if (hook === 'on_error') await hooks.onError(outcome);
 * messages.push({ role: 'tool', content: toToolMessage(outcome) });
 * if (replan) messages.push({ role: 'user', content: 'That failed; choose another approach.' });
 */
export function harnessStep(outcome: Outcome, options: HarnessStepOptions = {}): HarnessStep {
  const { maxAttempts = 3 } = optionsObject('harnessStep', options);
  requireInteger('maxAttempts', maxAttempts, 1);
  requireOutcome('harnessStep', outcome);
  if (outcome.ok) return none;
  switch (outcome.kind) {
    case 'budget_exceeded':
      return budgetSpent;
    case 'cancelled':
      return none;
    case 'timeout':
    case 'transient':
      return outcome.attempts >= maxAttempts ? replanOnError : retryOnError;
    default:
      return replanOnError;
  }
}

const truncationMarker = '… [truncated]';

/**
 * Renders an outcome as compact text for the model: a success as its result (a string as it is,
 * anything else as compact JSON), a failure as `error (kind, after n attempts): message` and a
 * short hint on what to do next. Never throws for any result (bigints, cycles, functions,
 * throwing getters) and never includes a stack trace.
 *
 * @example
 * toToolMessage(await dispatcher.dispatch('search.web', { query: 'x' }));
 * // '{"hits":[…]}' or
 * // 'error (timeout, after 1 attempt): "search.web" timed out after 5000 ms (attempt 1) Hint: …'
 */
export function toToolMessage(outcome: Outcome, options: ToolMessageOptions = {}): string {
  const { maxLength = 2000 } = optionsObject('toToolMessage', options);
  if (maxLength !== Infinity) requireInteger('maxLength', maxLength, 1);
  requireOutcome('toToolMessage', outcome);
  if (outcome.ok) return truncate(renderResult(outcome.result), maxLength);

  const attempts = Number.isInteger(outcome.attempts) ? outcome.attempts : 0;
  const kind = String(outcome.kind);
  const prefix =
    attempts > 0
      ? `error (${kind}, after ${attempts} attempt${attempts === 1 ? '' : 's'}): `
      : `error (${kind}): `;
  const message = withoutStack(typeof outcome.message === 'string' ? outcome.message : '') || kind;
  const hint = hintFor(kind, outcome.retryAfterMs);
  const tail = hint === undefined ? '' : ` Hint: ${hint}`;
  const full = prefix + message + tail;
  if (full.length <= maxLength) return full;
  // Keep the hint whole when there is room: it is the part the model acts on.
  if (maxLength - tail.length >= prefix.length + truncationMarker.length + 16) {
    return truncate(prefix + message, maxLength - tail.length) + tail;
  }
  return truncate(full, maxLength);
}

function requireOutcome(caller: string, outcome: unknown): void {
  if (typeof outcome !== 'object' || outcome === null || !('ok' in outcome)) {
    throw new TypeError(`${caller}() needs a dispatch outcome, got ${String(outcome)}`);
  }
}

function hintFor(kind: string, retryAfterMs: number | undefined): string | undefined {
  const after =
    typeof retryAfterMs === 'number' && retryAfterMs >= 0 ? `after ${Math.ceil(retryAfterMs)} ms` : 'later';
  switch (kind) {
    case 'schema':
      return "Fix the arguments to match the tool's input schema, then call it again.";
    case 'not_found':
      return 'Use one of the listed tools.';
    case 'idempotency_conflict':
      return 'That idempotency key belongs to a different call; use a new key.';
    case 'timeout':
      return 'The tool did not answer in time; if it changes state it may have done so, so check before calling it again, or try another approach.';
    case 'transient':
      return `The failure may be temporary; try again ${after} or use another approach.`;
    case 'internal':
      return 'The tool failed; do not repeat the same call unchanged.';
    case 'budget_exceeded':
      return 'The tool-call budget is spent; stop calling tools and answer with what you have.';
    case 'circuit_open':
      return `The tool is unavailable for now; retry ${after} or use another tool.`;
    case 'cancelled':
      return 'The call was cancelled; do not retry it.';
    case 'store_unavailable':
      return `The tool was not run: shared state it needs is unreachable for now; try again ${after}.`;
    case 'idempotency_result_unavailable':
      return 'That call already succeeded but its result cannot be shown again; do not repeat it, carry on without it.';
    default:
      return retryAfterMs === undefined ? undefined : `Retry ${after} or use another tool.`;
  }
}

// Drops stack-frame lines ("    at fn (file:1:2)") and folds the rest onto one line.
function withoutStack(message: string): string {
  return withoutStackFrames(message)
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line.length > 0)
    .join(' ');
}

function renderResult(result: unknown): string {
  if (typeof result === 'string') return result;
  try {
    const value = toJsonSafe(result);
    return value === undefined ? '(no result)' : JSON.stringify(value);
  } catch {
    return Object.prototype.toString.call(result);
  }
}

function truncate(text: string, maxLength: number): string {
  if (text.length <= maxLength) return text;
  if (maxLength <= truncationMarker.length) return cut(text, maxLength);
  return cut(text, maxLength - truncationMarker.length) + truncationMarker;
}

// Slices without leaving half of a surrogate pair at the end.
function cut(text: string, length: number): string {
  const code = text.charCodeAt(length - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? length - 1 : length);
}
