/**
 * MRTR pass-through (2026-07-28): an upstream's `input_required` answer handed back to our own
 * caller as that answer, and the caller's retry (`inputResponses`, `requestState`) sent on.
 * @module
 */

import { AsyncLocalStorage } from 'node:async_hooks';
import { ToolError } from '../../index.js';

/**
 * One round of a multi-round-trip call as our server received it: what the retry carried and
 * the capabilities its caller declared.
 */
export interface InputRound {
  /** The caller's answers to the previous round's `inputRequests`. */
  readonly inputResponses?: Record<string, unknown> | undefined;
  /** The opaque state the previous round's answer carried, echoed verbatim. */
  readonly requestState?: string | undefined;
  /** The client capabilities the caller declared (whoever answers the input is the caller). */
  readonly capabilities?: unknown;
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
 * and no breaker counts it. It carries the upstream's answer, which our server sends back to
 * every 2026-07-28 caller the failure reaches (one that joined the same key's run included).
 *
 * @example
 * throw new InputRequiredError('deploy', result);
 */
export class InputRequiredError extends ToolError {
  /** Makes the failure for `remoteName`'s `input_required` answer. */
  constructor(
    remoteName: string,
    /** The upstream's `input_required` result, as it came. */
    readonly answer: object,
  ) {
    super(
      `The MCP tool "${remoteName}" needs input from the caller (input_required); retry with the answers`,
    );
    this.name = 'InputRequiredError';
  }
}

/**
 * The `input_required` answer a failed dispatch carries, if it does.
 *
 * @example
 * const answer = inputAnswerOf(outcome);
 */
export function inputAnswerOf(outcome: { cause?: unknown }): object | undefined {
  return outcome.cause instanceof InputRequiredError ? outcome.cause.answer : undefined;
}
