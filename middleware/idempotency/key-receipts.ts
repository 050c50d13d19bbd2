/**
 * The receipts a keyed execution leaves: made from how it settled, kept from an earlier leader's,
 * and said aloud when one cannot be written.
 * @module
 */

import { describeThrown, isDispatchError, type OutcomeWindow } from '../../src/errors.js';
import type { Receipt } from './store.js';
import type { DispatchContext, Tool } from '../../src/types.js';
import { builtinRedactor, previewOf, reconcileFindingOf } from '../internal-kit.js';

/** The execution a receipt describes: a walk of a key by this process. */
export interface ReceiptSubject {
  /** The dispatch that leads the key. */
  readonly ctx: DispatchContext;
  /** The idempotency key. */
  readonly key: string;
  /** The tool the key runs. */
  readonly tool: Tool;
  /** When the walk began, on the layer's clock. */
  readonly startedAt: number;
}

/**
 * The receipt of `subject`'s execution as it settles at `endedAt`; `notCommitted` when a
 * reconcile found that a failure's action did not take effect.
 */
export function executionReceipt(
  subject: ReceiptSubject,
  status: Receipt['status'],
  window: OutcomeWindow | undefined,
  endedAt: number,
  notCommitted = false,
): Receipt {
  const { ctx } = subject;
  const found = reconcileFindingOf(ctx);
  const byReconcile =
    notCommitted ||
    (status === 'succeeded' && ctx.outcome?.ok === true && ctx.outcome.reconciled !== undefined);
  const receipt: { -readonly [K in keyof Receipt]: Receipt[K] } = {
    key: subject.key,
    tool: subject.tool.name,
    status,
    attempts: ctx.attempt,
    startedAt: subject.startedAt,
    endedAt,
    settledBy: byReconcile ? 'reconcile' : 'handler',
  };
  if (window !== undefined) receipt.window = window;
  // The evidence of the reconcile that decided this settlement (or left it in doubt).
  const decided = byReconcile || (status === 'in_doubt' && found?.status === 'unknown');
  if (decided && found?.evidence !== undefined) receipt.evidence = found.evidence;
  if (status === 'in_doubt') keepPreview(receipt, ctx);
  return receipt;
}

/** The most characters of args an in-doubt receipt keeps. */
export const receiptPreviewChars = 2_000;

// Only a receipt left in doubt keeps the args (redacted, capped): the one an operator must judge,
// and the only one worth the redaction's cost on a keyed call.
function keepPreview(receipt: { preview?: string }, ctx: DispatchContext): void {
  try {
    const preview = previewOf(ctx.args, ctx.redactor ?? builtinRedactor(), receiptPreviewChars);
    if (preview !== undefined) receipt.preview = preview;
  } catch {
    // Args that cannot be shown (a getter that throws) leave the receipt without a preview.
  }
}

/**
 * The earlier execution's receipt as a refusal leaves it: as it was, or a crashed leader's
 * running one marked in doubt (when it was sent is kept), with what a reconcile that could not
 * tell saw.
 */
export function keptReceipt(earlier: Receipt, window: OutcomeWindow, ctx: DispatchContext): Receipt {
  const found = reconcileFindingOf(ctx);
  const seen = found?.status === 'unknown' && found.evidence !== undefined;
  if (earlier.status === 'in_doubt' && !seen && earlier.preview !== undefined) return earlier;
  const receipt: { -readonly [K in keyof Receipt]: Receipt[K] } = { ...earlier };
  if (earlier.status !== 'in_doubt') Object.assign(receipt, { status: 'in_doubt', window });
  if (seen) receipt.evidence = found.evidence;
  // The same key and fingerprint: this call's args are the earlier execution's.
  if (receipt.preview === undefined) keepPreview(receipt, ctx);
  return receipt;
}

/** `key` as a message names it: cut to 64 characters. */
export function shortKey(key: string): string {
  return key.length > 64 ? `${key.slice(0, 61)}...` : key;
}

/** Says that `receipt` could not be written: the call it describes stands. */
export function receiptFailed(ctx: DispatchContext, receipt: Receipt, error: unknown): void {
  const kind = isDispatchError(error) ? error.kind : undefined;
  ctx.emit('receipt.failed', {
    key: receipt.key,
    receiptStatus: receipt.status,
    ...(kind === undefined ? {} : { kind }),
    message: describeThrown(error),
    error,
  });
}
