/**
 * MRTR pass-through (2026-07-28): an upstream's `input_required` answer handed back to our own
 * caller as that answer, and the caller's retry (`inputResponses`, `requestState`) sent on.
 * @module
 */

import { AsyncLocalStorage } from 'node:async_hooks';
import { ToolError } from '../../index.js';

/**
 * One round of a multi-round-trip call as our server received it: what the retry carried, the
 * capabilities its caller declared, and, once an imported tool hears one, the upstream's
 * `input_required` result to answer with.
 */
export interface InputRound {
  /** The caller's answers to the previous round's `inputRequests`. */
  readonly inputResponses?: Record<string, unknown> | undefined;
  /** The opaque state the previous round's answer carried, echoed verbatim. */
  readonly requestState?: string | undefined;
  /** The client capabilities the caller declared (whoever answers the input is the caller). */
  readonly capabilities?: unknown;
  /** The upstream's `input_required` result, set by the imported tool that received it. */
  answer?: object;
}

const rounds = new AsyncLocalStorage<InputRound>();

/**
 * Runs `run` with `round` as the current round, for imported tools called inside it.
 *
 * @example
 * const outcome = await withInputRound(round, () => dispatcher.dispatch(name, args, options));
 */
export function withInputRound<T>(round: InputRound | undefined, run: () => T): T {
  return round === undefined ? run() : rounds.run(round, run);
}

/**
 * The round of the MCP request being served, when it came on 2026-07-28 (a caller that can
 * answer `input_required`).
 *
 * @example
 * const round = currentInputRound();
 */
export function currentInputRound(): InputRound | undefined {
  return rounds.getStore();
}

/**
 * Whether a `tools/call` answer asks for input rather than ending the call.
 *
 * @example
 * if (asksForInput(result)) round.answer = result;
 */
export function asksForInput(result: unknown): boolean {
  return (
    typeof result === 'object' &&
    result !== null &&
    (result as { resultType?: unknown }).resultType === 'input_required'
  );
}

/**
 * The failure an imported tool ends with when the upstream asks for input: a `tool_error`, so
 * the idempotency layer stores nothing under the key (only successes are kept), no retry runs
 * and no breaker counts it; our server answers the caller with the round's `answer` instead.
 *
 * @example
 * throw inputRequiredFailure('deploy');
 */
export function inputRequiredFailure(remoteName: string): ToolError {
  return new ToolError(
    `The MCP tool "${remoteName}" needs input from the caller (input_required); retry with the answers`,
  );
}
