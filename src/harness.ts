/**
 * Harness-loop helpers: what the agent loop does with an outcome, and how the model reads it.
 * @module
 */

import { DispatchError, describeThrown, withoutStackFrames } from './errors.js';
import { optionsObject, requireInteger } from './internal/options.js';
import { readJsonSafe } from './json-safe.js';
import type { Outcome } from './types.js';

/** The harness-loop hook an outcome calls for. */
export type HarnessHook = 'on_error' | 'on_budget_exceeded' | 'none';

/** What the loop should do after one tool call. */
export interface HarnessStep {
  /** The hook to run: `on_error`, `on_budget_exceeded`, or `none`. */
  readonly hook: HarnessHook;
  /** Whether to ask the model for a new plan rather than carry on or send the same call again. */
  readonly replan: boolean;
}

/** Options for `harnessStep`. */
export interface HarnessStepOptions {
  /** The retry layer's `maxAttempts`: a failure with this many attempts has no retry left. @default 3 */
  maxAttempts?: number;
}

/** Options for `toToolMessage`. */
export interface ToolMessageOptions {
  /** The longest message, in characters (cut with `… [truncated]`); `Infinity` for no cap. @default 2000 */
  maxLength?: number;
}

/** Options for `toolAnswer`. */
export interface ToolAnswerOptions extends ToolMessageOptions {
  /** The name the model knows the tool by, quoted when its result cannot be rendered. */
  displayName?: string;
  /** Replace a result `JSON.stringify` throws on by its `toJsonSafe` copy. @default false */
  serializable?: boolean;
}

/** One call's answer for a host: the text the model reads and the outcome that text describes. */
export interface ToolAnswer {
  /** The dispatch's outcome; a success whose result cannot be rendered at all becomes `internal`. */
  readonly outcome: Outcome;
  /** The model-facing text of `outcome`, exactly as `toToolMessage` renders it. */
  readonly text: string;
}

const none: HarnessStep = Object.freeze({ hook: 'none', replan: false });
const replanOnError: HarnessStep = Object.freeze({ hook: 'on_error', replan: true });
const retryOnError: HarnessStep = Object.freeze({ hook: 'on_error', replan: false });
const budgetSpent: HarnessStep = Object.freeze({ hook: 'on_budget_exceeded', replan: false });

/**
 * Decides the harness loop's next step for an outcome (SPEC §4): `cancelled` and success need
 * nothing, `budget_exceeded` calls its hook, a `timeout` or `transient` failure replans once its
 * attempts reach `maxAttempts`, and every other failure replans.
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
 * Renders an outcome as compact text for the model: a success as its result (compact JSON), a
 * failure as `error (kind, after n attempts): message` and a hint; never throws, never a stack.
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
  return answerFor(outcome, maxLength, undefined, false).text;
}

/**
 * What a host sends back for one call: `toToolMessage`'s text and the outcome it describes (a
 * success whose result cannot be rendered at all becomes `internal`); never throws.
 *
 * @example
 * const { outcome, text } = toolAnswer(await dispatcher.dispatch('search.web', args), {
 *   displayName: 'search__web',
 * });
 * messages.push({ role: 'tool', tool_call_id: id, content: text });
 * if (!outcome.ok) log.warn(outcome.kind, outcome.message);
 */
export function toolAnswer(outcome: Outcome, options: ToolAnswerOptions = {}): ToolAnswer {
  const { maxLength = 2000, displayName, serializable = false } = optionsObject('toolAnswer', options);
  if (maxLength !== Infinity) requireInteger('maxLength', maxLength, 1);
  if (displayName !== undefined && typeof displayName !== 'string') {
    throw new TypeError(`displayName must be a string, got ${String(displayName)}`);
  }
  if (typeof serializable !== 'boolean') {
    throw new TypeError(`serializable must be a boolean, got ${String(serializable)}`);
  }
  requireOutcome('toolAnswer', outcome);
  return answerFor(outcome, maxLength, displayName, serializable);
}

function answerFor(
  outcome: Outcome,
  maxLength: number,
  displayName: string | undefined,
  serializable: boolean,
): ToolAnswer {
  if (!outcome.ok) return { outcome, text: failureText(outcome, maxLength) };
  // The output guard's copy is already cut to its own budget, with its notice: shown as it is.
  const { result, modelCopy } = outcome;
  if (typeof modelCopy?.text === 'string') return { outcome, text: modelCopy.text };
  if (typeof result === 'string') return { outcome, text: truncate(result, maxLength) };
  const rendered = renderResult(result);
  if (!rendered.ok) {
    const attempts = Number.isInteger(outcome.attempts) && outcome.attempts >= 0 ? outcome.attempts : 0;
    const name = displayName === undefined ? 'The tool' : JSON.stringify(displayName);
    const failure = new DispatchError(
      'internal',
      `${name} ran, but its result cannot be rendered for the model: ${describeThrown(rendered.error)}`,
      { attempts, cause: rendered.error },
    );
    return { outcome: failure, text: failureText(failure, maxLength) };
  }
  const text = truncate(rendered.json ?? '(no result)', maxLength);
  if (!serializable || serializes(result)) return { outcome, text };
  return { outcome: { ok: true, result: rendered.value, attempts: outcome.attempts }, text };
}

function failureText(outcome: DispatchError, maxLength: number): string {
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

const hints: Readonly<Record<string, string>> = {
  schema: "Fix the arguments to match the tool's input schema, then call it again.",
  not_found: 'Use one of the listed tools.',
  idempotency_conflict: 'That idempotency key belongs to a different call; use a new key.',
  internal: 'The tool failed; do not repeat the same call unchanged.',
  budget_exceeded: 'The tool-call budget is spent; stop calling tools and answer with what you have.',
  cancelled: 'The call was cancelled; do not retry it.',
  overloaded: 'The tool is overloaded; try again later or use another tool.',
  outcome_unknown:
    'The action may have happened: do not repeat it, not even under a new idempotency key; check its effect first, or tell the user it is unknown.',
  protocol:
    'The remote server refused the request itself (protocol revision or capability); calling again gets the same answer.',
  approval_required:
    'A person must approve this call first; do not call it again until you are told it was approved.',
  approval_denied: 'The call was denied; do not repeat it, choose another approach or tell the user.',
  tool_contract:
    'The tool ran, but its result is not what it promised; do not repeat the same call unchanged.',
  idempotency_result_unavailable:
    'That call already succeeded but its result cannot be shown again; do not repeat it, carry on without it.',
};

function hintFor(kind: string, retryAfterMs: number | undefined): string | undefined {
  if (Object.hasOwn(hints, kind)) return hints[kind];
  if (kind === 'timeout') {
    return 'The tool did not answer in time; if it changes state it may have done so, so check before calling it again, or try another approach.';
  }
  const after =
    typeof retryAfterMs === 'number' && retryAfterMs >= 0 ? `after ${Math.ceil(retryAfterMs)} ms` : 'later';
  if (kind === 'transient')
    return `The failure may be temporary; try again ${after} or use another approach.`;
  if (kind === 'circuit_open') return `The tool is unavailable for now; retry ${after} or use another tool.`;
  if (kind === 'store_unavailable') {
    return `The tool was not run: shared state it needs is unreachable for now; try again ${after}.`;
  }
  return retryAfterMs === undefined ? undefined : `Retry ${after} or use another tool.`;
}

// Drops stack-frame lines ("    at fn (file:1:2)") and folds the rest onto one line.
function withoutStack(message: string): string {
  return withoutStackFrames(message)
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line.length > 0)
    .join(' ');
}

type RenderedResult = { ok: true; value: unknown; json: string | undefined } | { ok: false; error: unknown };

// A result that throws when read as a whole, or whose JSON no string can hold, cannot be rendered.
function renderResult(result: unknown): RenderedResult {
  const read = readJsonSafe(result);
  if (!read.ok) return read;
  try {
    return {
      ok: true,
      value: read.value,
      json: read.value === undefined ? undefined : JSON.stringify(read.value),
    };
  } catch (error) {
    return { ok: false, error };
  }
}

function serializes(result: unknown): boolean {
  try {
    JSON.stringify(result);
    return true;
  } catch {
    return false;
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
