/**
 * A lead's success, stored: a completion that fails is sent again (it is resend-safe), with
 * backoff, while the key's callers already have their result.
 * @module
 */

import type { Clock } from '../../src/clock.js';
import type { IdempotencyCompletion, Receipt } from './store.js';
import type { DispatchContext } from '../../src/types.js';
import type { HeldLease } from './held-lease.js';
import { receiptFailed } from './key-receipts.js';
import type { KeyStores } from './key-stores.js';

// A completion that failed is sent again this often at first, doubling.
const completeRetryMs = 50;
// Resends of a completion whose lease never lapses on its own (a memory store's).
const maxCompleteRetries = 8;

/**
 * Stores `result` under the held lease, `receipt` riding with it, and answers the result the
 * key's callers get: this one, or another leader's when this lead lost its lease to it.
 */
export async function completeLead(
  stores: KeyStores,
  ctx: DispatchContext,
  held: HeldLease,
  result: unknown,
  receipt: Receipt | undefined,
): Promise<unknown> {
  const { lease } = held;
  let completion: IdempotencyCompletion;
  try {
    completion = await stores.store.complete(lease, result, stores.ttlOf(ctx), receipt);
  } catch (error) {
    ctx.emit('idempotency.store_error', { key: lease.key, operation: 'complete', error });
    // A completion that failed past the lease's end finds it lost: that is said too.
    held.reportLost();
    void resendCompletion(stores, ctx, held, result, receipt);
    return result;
  }
  // Only a renewal or this completion can have found the lease gone.
  if (held.watching || completion.kind === 'lost') held.reportLost();
  const winner = completion.kind === 'lost' ? completion.winner : undefined;
  return winner === undefined ? result : winner.result;
}

// The side effect happened and the caller has its result; the store learns of it as soon as it
// can. Until the lease ends, other processes wait for the key rather than run it again.
async function resendCompletion(
  stores: KeyStores,
  ctx: DispatchContext,
  held: HeldLease,
  result: unknown,
  receipt: Receipt | undefined,
): Promise<void> {
  const { lease } = held;
  // Past about a lease (three renewal periods) the lease has ended, even if its store never said so.
  const giveUpAfter =
    lease.renewEveryMs < Infinity
      ? Math.log2((3 * lease.renewEveryMs) / completeRetryMs) + 1
      : maxCompleteRetries;
  let delayMs = completeRetryMs;
  for (let tries = 1; ; tries += 1) {
    // The lease ended before the success could be stored: another process may run the key.
    if (lease.signal.aborted) {
      if (receipt !== undefined) receiptFailed(ctx, receipt, lease.signal.reason);
      return held.reportLost();
    }
    if (tries >= Math.max(giveUpAfter, 1)) {
      if (receipt !== undefined) receiptFailed(ctx, receipt, new Error('the completion was never stored'));
      return;
    }
    await unrefDelay(stores.timers, delayMs);
    try {
      // The receipt rides again: a store left with the lead's running receipt would take this
      // success for a crash.
      await stores.store.complete(lease, result, stores.ttlOf(ctx), receipt);
      return held.reportLost();
    } catch (error) {
      ctx.emit('idempotency.store_error', { key: lease.key, operation: 'complete', error });
    }
    delayMs = Math.min(delayMs * 2, lease.renewEveryMs);
  }
}

// A resend must not keep the process alive: the success already reached its callers.
function unrefDelay(timers: Pick<Clock, 'setTimeout'>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const handle = timers.setTimeout(resolve, ms);
    (handle as { unref?: () => void } | undefined)?.unref?.();
  });
}
