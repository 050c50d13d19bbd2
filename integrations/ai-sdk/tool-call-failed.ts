/**
 * The error an AI SDK tool throws when its dispatch failed: the SDK turns it into a `tool-error` the model reads.
 * @module
 */

import { isDispatchError, toToolMessage, type DispatchError, type ToolMessageOptions } from '../../index.js';

/**
 * Thrown by a tool from `toAiSdkTools` when its dispatch did not succeed. Its message is
 * `toToolMessage(outcome)` (no stack frames), which the AI SDK sends to the model as the
 * call's `error-text` result; `outcome` is the envelope itself, for the application.
 *
 * `toString()` is the message alone: AI SDK 6 shows the model `error.message`, AI SDK 7
 * `error.toString()`, and the model should read the same text under both, not
 * `ToolCallFailed: error (…)`.
 *
 * @example
 * for (const part of result.steps.flatMap((step) => step.content)) {
 *   if (part.type === 'tool-error' && part.error instanceof ToolCallFailed) {
 *     console.log(part.toolCallId, part.error.outcome.kind);
 *   }
 * }
 */
export class ToolCallFailed extends Error {
  /** The failed dispatch's envelope: kind, attempts, JSON-RPC code, a message without stack frames. */
  readonly outcome: DispatchError;

  /**
   * Wraps a failed outcome.
   *
   * @param outcome - The envelope the dispatch resolved to.
   * @param options - How the model-facing message is rendered (`maxLength`).
   * @throws TypeError when `outcome` is not a `DispatchError`.
   * @example
   * const outcome = await dispatcher.dispatch('pay.charge', args);
   * if (!outcome.ok) throw new ToolCallFailed(outcome);
   */
  constructor(outcome: DispatchError, options: ToolMessageOptions = {}) {
    if (!isDispatchError(outcome)) {
      throw new TypeError(`ToolCallFailed needs a DispatchError, got ${String(outcome)}`);
    }
    super(toToolMessage(outcome, options), { cause: outcome });
    this.name = 'ToolCallFailed';
    this.outcome = outcome;
  }

  /** The message alone, so hosts that render `String(error)` show the model what `toToolMessage` wrote. */
  override toString(): string {
    return this.message;
  }
}
