/**
 * The `_meta` keys this integration reads and writes, and the envelope it puts on the wire.
 * @module
 */

import type { DispatchError, DispatchErrorJson } from '../../index.js';

/**
 * The `_meta` key of a `tools/call` request that carries the caller's idempotency key.
 *
 * @example
 * client.callTool({ name: 'pay.charge', arguments, _meta: { [idempotencyKeyMetaKey]: 'order-42' } });
 */
export const idempotencyKeyMetaKey = 'tool-dispatcher/idempotencyKey';

/**
 * The `_meta` key of an `approval_required` result (`{ token, reason, expiresAt }`, plus
 * `notAsked`, why nobody was asked, when the server has `approvals`), and of a `tools/call` that
 * resumes the call with the approved token (a string).
 *
 * @example
 * client.callTool({ name: 'payments.refund', arguments, _meta: { [approvalMetaKey]: token } });
 */
export const approvalMetaKey = 'tool-dispatcher/approval';

/**
 * The `_meta` key of a failed `CallToolResult` that carries the error envelope.
 *
 * @example
 * if (result.isError) console.log(result._meta?.[errorMetaKey]); // { ok: false, kind: 'schema', … }
 */
export const errorMetaKey = 'tool-dispatcher/error';

/**
 * The `_meta` key of a keyed call's result: `{ key, replayed }`, the idempotency key it ran under
 * and whether this answer is another execution's (served from the idempotency store, or joined
 * while it ran) rather than a run of its own.
 *
 * @example
 * const { replayed } = result._meta?.[receiptMetaKey] as McpReceipt; // true: it did not run again
 */
export const receiptMetaKey = 'tool-dispatcher/receipt';

/** What a keyed call's result carries under `_meta[receiptMetaKey]`. */
export interface McpReceipt {
  /** The idempotency key the call came with. */
  key: string;
  /** `true` when the answer is another execution's and the tool did not run for this call. */
  replayed: boolean;
}

/**
 * The envelope as plain JSON for `_meta`: kind, message (the core keeps stack frames out of it),
 * attempts, JSON-RPC code and `retryAfterMs`; never `cause`.
 *
 * @example
 * const meta = { [errorMetaKey]: envelopeOf(outcome) };
 */
export function envelopeOf(error: DispatchError): DispatchErrorJson {
  return error.toJSON();
}
