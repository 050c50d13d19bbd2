/**
 * What every engine adapter shares: its options checked, the step's dispatch keyed by the
 * engine's stable id, and the outcome as the journal keeps it.
 * @module
 */

import { optionKeys, rejectUnknownKeys } from '../../middleware/index.js';
import { engineVerdict } from './engine-verdict.js';
import {
  DispatchError,
  type DispatchErrorJson,
  type Dispatcher,
  type DispatchOptions,
  type Outcome,
  type Tool,
} from '../../index.js';

/**
 * A day: the retry horizon of a durable step, and how long its key must be remembered.
 *
 * @example
 * restateRun(ctx, dispatcher, 'payments.charge', order, { name: 'charge', keyTtlMs: 2 * defaultKeyTtlMs });
 */
export const defaultKeyTtlMs = 24 * 60 * 60 * 1000;

/** The tool a step runs: its registry name, or the registered tool (`registry.get(name)`). */
export type StepTool = string | Pick<Tool, 'name' | 'idempotent'>;

/** Options every engine adapter takes. */
export interface DurableStepOptions {
  /** The step's name in the engine's journal; unique within the workflow or handler. */
  name: string;
  /**
   * How long the idempotency store remembers the step's key (the dispatch's `idempotencyTtlMs`),
   * in milliseconds: at least the engine's whole retry horizon, so a retry hours later is
   * still served from the store instead of running the tool again.
   * @default 86_400_000 (24 h)
   */
  keyTtlMs?: number;
  /**
   * `'throw'`: a final failure becomes the engine's non-retryable error and the step resolves
   * to the handler's result. `'return'`: the step resolves to the outcome (`{ ok: true, result,
   * attempts }` or the envelope's JSON), journaled as data, so a replay hands the model the
   * same text it saw. Failures the engine should retry are thrown either way.
   * @default 'throw'
   */
  failures?: 'throw' | 'return';
}

/** The keys of `DurableStepOptions`, for an adapter's list of its own option keys. */
export const durableStepOptionKeys = optionKeys<DurableStepOptions>({
  name: true,
  keyTtlMs: true,
  failures: true,
});

/** An outcome as a journal keeps it: plain JSON, a success or a failure's envelope. */
export type JournaledOutcome<Result = unknown> =
  | {
      /** Always `true`. */
      readonly ok: true;
      /** What the handler returned. */
      readonly result: Result;
      /** Handler attempts this call made. */
      readonly attempts: number;
    }
  | DispatchErrorJson;

/** The options of one adapter call, checked, defaults filled in. */
export interface CheckedStepOptions {
  readonly name: string;
  readonly keyTtlMs: number;
  readonly failures: 'throw' | 'return';
  readonly tool: string;
  readonly toolRef: Pick<Tool, 'idempotent'> | undefined;
}

/**
 * Checks what every adapter takes; a `TypeError` naming the argument or option that is wrong, or
 * the nearest of `known` (the adapter's option keys) to a key it does not take.
 *
 * @example
 * const checked = checkStepOptions(dispatcher, 'payments.charge', { name: 'charge' }, 'restateRun', durableStepOptionKeys);
 */
export function checkStepOptions(
  dispatcher: Dispatcher,
  tool: StepTool,
  options: DurableStepOptions,
  adapter: string,
  known: readonly string[],
): CheckedStepOptions {
  if (typeof (dispatcher as { dispatch?: unknown } | null | undefined)?.dispatch !== 'function') {
    throw new TypeError('dispatcher must be a Dispatcher (createDispatcher(...))');
  }
  const toolName = typeof tool === 'string' ? tool : (tool as { name?: unknown } | null | undefined)?.name;
  if (typeof toolName !== 'string' || toolName === '') {
    throw new TypeError('tool must be a tool name or the registered tool (registry.get(name))');
  }
  if (typeof options !== 'object' || options === null) throw new TypeError('options must be an object');
  rejectUnknownKeys(adapter, options, known);
  const { name, keyTtlMs = defaultKeyTtlMs, failures = 'throw' } = options;
  if (typeof name !== 'string' || name === '') throw new TypeError('name must be a non-empty string');
  if (!Number.isInteger(keyTtlMs) || keyTtlMs < 1) {
    throw new TypeError(`keyTtlMs must be an integer >= 1 (milliseconds), got ${String(keyTtlMs)}`);
  }
  if (failures !== 'throw' && failures !== 'return') {
    throw new TypeError(`failures must be 'throw' or 'return', got ${String(failures)}`);
  }
  return { name, keyTtlMs, failures, tool: toolName, toolRef: typeof tool === 'string' ? undefined : tool };
}

/**
 * Dispatches the step's call keyed by the engine's stable id: the engine's journal dedupes a
 * replay, the idempotency store the window between the side effect and the journal write.
 *
 * @example
 * const outcome = await dispatchStep(dispatcher, checked, args, `dbos:${workflowID}:${stepID}`, signal);
 */
export function dispatchStep(
  dispatcher: Dispatcher,
  checked: CheckedStepOptions,
  args: unknown,
  key: string,
  signal: AbortSignal | undefined,
): Promise<Outcome> {
  const options: DispatchOptions = {
    idempotencyKey: key,
    callId: key,
    idempotencyTtlMs: checked.keyTtlMs,
    ...(signal === undefined ? {} : { signal }),
  };
  return dispatcher.dispatch(checked.tool, args, options);
}

/**
 * A success as the journal keeps it.
 *
 * @example
 * if (outcome.ok) return journaledSuccess(outcome); // { ok: true, result, attempts }
 */
export function journaledSuccess<Result>(outcome: Outcome<Result> & { ok: true }): JournaledOutcome<Result> {
  // Spread, so fields a newer core adds to a success (how it was reconciled) reach the journal too.
  return { ...outcome };
}

/**
 * The envelope as an engine may log and persist it: its fields, a stack of its message alone, and
 * no `cause` (the handler's own error, which may hold what the user never asked to record).
 *
 * @example
 * if (!outcome.ok) throw withoutCause(outcome);
 */
export function withoutCause(envelope: DispatchError): DispatchError {
  const copy = new DispatchError(envelope.kind, envelope.message, {
    attempts: envelope.attempts,
    jsonrpcCode: envelope.jsonrpcCode,
    ...(envelope.retryAfterMs === undefined ? {} : { retryAfterMs: envelope.retryAfterMs }),
  });
  // Fields a newer core adds to the envelope (where an outcome became unknown) come along.
  for (const [field, value] of Object.entries(envelope)) {
    if (!Object.hasOwn(copy, field)) Object.defineProperty(copy, field, { value, enumerable: true });
  }
  copy.stack = `DispatchError: ${envelope.message}`;
  return copy;
}

/** How an engine wants a step's failure thrown. */
export interface EngineErrors {
  /** A failure the engine should retry, after `afterMs` when the envelope says so. */
  retryable(envelope: DispatchError, afterMs: number | undefined): Error;
  /** A final failure (with `failures: 'throw'`). */
  terminal(envelope: DispatchError): Error;
}

/**
 * One run of a step's body, shared by the engine adapters: the keyed dispatch, then what the
 * journal keeps (the success, or a final failure as data with `failures: 'return'`); a failure
 * the engine should retry, or a final one with `failures: 'throw'`, is thrown as `errors` says.
 *
 * @example
 * const journaled = await runStepDispatch(dispatcher, checked, args, key, signal, { retryable, terminal });
 */
export async function runStepDispatch(
  dispatcher: Dispatcher,
  checked: CheckedStepOptions,
  args: unknown,
  key: string,
  signal: AbortSignal | undefined,
  errors: EngineErrors,
): Promise<JournaledOutcome> {
  const outcome = await dispatchStep(dispatcher, checked, args, key, signal);
  if (outcome.ok) return journaledSuccess(outcome);
  const verdict = engineVerdict(outcome, checked.toolRef);
  if (verdict.retry) throw errors.retryable(outcome, verdict.afterMs);
  if (checked.failures === 'return') return outcome.toJSON();
  throw errors.terminal(outcome);
}

/**
 * What the adapter's caller gets from a journaled step: the outcome with `failures: 'return'`,
 * else the handler's result.
 *
 * @example
 * return stepResult(checked, await ctx.run(checked.name, body));
 */
export function stepResult(checked: CheckedStepOptions, journaled: JournaledOutcome): unknown {
  return checked.failures === 'return' ? journaled : (journaled as JournaledOutcome & { ok: true }).result;
}
