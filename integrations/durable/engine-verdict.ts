/**
 * One retry owner per failure class: which envelopes a durable engine should retry, and when.
 * @module
 */

import { isDispatchError, type DispatchError, type DispatchErrorKind } from '../../index.js';

/** What `engineVerdict` answers: leave the failure as it is, or let the engine try the step again. */
export type EngineVerdict =
  | {
      /** The failure is final: the engine records it and never runs the step again. */
      readonly retry: false;
    }
  | {
      /** The engine should run the step again. */
      readonly retry: true;
      /**
       * The least wait before it does, in milliseconds (the envelope's `retryAfterMs`: an open
       * circuit's cool-down, a rate limit); `undefined` leaves the wait to the engine's backoff.
       */
      readonly afterMs: number | undefined;
    };

/** What `engineVerdict` reads of a tool: whether running it twice is harmless. */
export interface EngineVerdictTool {
  /** Whether the tool is idempotent (a `Tool` from `registry.get(name)` or a listing has it). */
  readonly idempotent?: boolean;
}

// What is left of these after the stack's own retry layer gave up is worth a later, slower try:
// the backend, the store or the circuit may be back by then, and an aborted attempt never ran.
const retriedByTheEngine: ReadonlySet<DispatchErrorKind> = new Set([
  'transient',
  'store_unavailable',
  'circuit_open',
  'cancelled',
]);

/**
 * Decides who retries a failed dispatch that ran inside a durable step. The stack's retry layer
 * has already made its fast in-process attempts; what reaches here goes to the engine only for
 * `transient`, `store_unavailable`, `circuit_open`, `cancelled`, and `timeout` of an idempotent
 * tool. Everything else is final: a wrong call (`schema`, `not_found`), a failure the tool
 * reported (`tool_error`), a spent budget, a key conflict, an `outcome_unknown`, and the timeout
 * of a tool that may have acted (running it again could repeat the side effect).
 *
 * @param error - The envelope the dispatch resolved to.
 * @param tool - The tool that ran (`registry.get(name)`), to tell an idempotent timeout apart;
 *   without it every timeout is final.
 * @throws TypeError for an `error` that is not a `DispatchError` envelope.
 * @example
 * const outcome = await dispatcher.dispatch('search.web', args, { idempotencyKey });
 * if (!outcome.ok) {
 *   const verdict = engineVerdict(outcome, registry.get('search.web'));
 *   if (verdict.retry) throw new RetryableError(outcome.message, { retryAfter: verdict.afterMs });
 *   throw new TerminalError(`${outcome.kind}: ${outcome.message}`);
 * }
 */
export function engineVerdict(error: DispatchError, tool?: EngineVerdictTool): EngineVerdict {
  if (!isDispatchError(error)) {
    throw new TypeError('engineVerdict takes a DispatchError envelope (a failed dispatch outcome)');
  }
  if (tool !== undefined && (typeof tool !== 'object' || tool === null)) {
    throw new TypeError('tool must be the registered tool (registry.get(name)) or undefined');
  }
  const retry = retriedByTheEngine.has(error.kind) || (error.kind === 'timeout' && tool?.idempotent === true);
  return retry ? { retry: true, afterMs: error.retryAfterMs } : { retry: false };
}
