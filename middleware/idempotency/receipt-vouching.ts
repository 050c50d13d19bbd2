/**
 * A lead its idempotency store cannot vouch for: the store may have forgotten the key (a Redis
 * found young, restarted empty before any process that knew its earlier life said so), and the
 * attached receipt store, which outlives it, says whether the key ran before.
 * @module
 */

import type { DispatchError } from '../../src/errors.js';
import { describeThrown } from '../../src/errors.js';
import type { IdempotencyClaim, IdempotencyLease, Receipt } from './store.js';
import type { Tool } from '../../src/types.js';
import { storeUnavailable } from '../kit.js';
import { executionReceipt, shortKey, type ReceiptSubject } from './key-receipts.js';
import type { KeyStores } from './key-stores.js';

/** What a lead settles first after the attached receipts were asked, or why it runs nothing. */
export type Vouching =
  | { readonly ok: true; readonly earlier: Receipt | undefined }
  | { readonly ok: false; readonly error: DispatchError };

/**
 * Whether `claim`'s lead asks the attached receipt store before `tool` runs: its store cannot
 * vouch for the key's past and holds no receipt of it, the receipts are not the store's own
 * (which the claim already read), and the tool must not run twice.
 */
export function needsVouching(
  claim: IdempotencyClaim & { kind: 'lead' },
  tool: Tool,
  stores: KeyStores,
): boolean {
  return claim.pastUnknown === true && claim.receipt === undefined && !tool.idempotent && stores.recordsApart;
}

/**
 * Asks the attached receipt store about `walk`'s key. A receipt there of a run within the key's
 * TTL is what the lead settles first, as after a reset (reconciled, or refused without
 * reconcile), never run over. While the store cannot answer, only a tool that can reconcile may
 * run, once its backend says the key did not; another is refused, its lease released.
 */
export async function vouchForLead(
  stores: KeyStores,
  walk: ReceiptSubject,
  lease: IdempotencyLease,
): Promise<Vouching> {
  const { ctx, key, tool } = walk;
  let found: Receipt | undefined;
  try {
    found = await stores.receipts.get(key);
  } catch (error) {
    // Nobody can say whether it ran: a tool that can reconcile asks its backend, as after a reset.
    if (tool.reconcile !== undefined) return { ok: true, earlier: unknownPast(key, tool.name, stores.now()) };
    // Freed with a settled receipt in the store only (a running one would read as a crash); a
    // Redis found restarted refuses this tool anyway. The attached store keeps what it holds,
    // the evidence the next lead needs.
    await stores.release(ctx, lease, executionReceipt(walk, 'failed', undefined, stores.now()), false);
    const why = `the receipt store could not say whether it ran before the idempotency store was found young (it may have restarted empty): ${describeThrown(error)}`;
    return {
      ok: false,
      error: storeUnavailable(`Idempotency key "${shortKey(key)}" is not run: ${why}`, { cause: error }),
    };
  }
  // A failure left nothing to settle, and a run older than the TTL may run again anyway.
  const ran =
    found !== undefined &&
    found.status !== 'failed' &&
    stores.now() - (found.endedAt ?? found.startedAt) < stores.ttlOf(ctx);
  return { ok: true, earlier: ran && found !== undefined ? forgottenReceipt(found) : undefined };
}

// A receipt of a run the store forgot, as the lead settles it: in doubt (an in-doubt one keeps
// its window), when it started and how often it ran kept.
function forgottenReceipt(found: Receipt): Receipt {
  return found.status === 'in_doubt' ? found : { ...found, status: 'in_doubt', window: 'store_reset' };
}

// The receipt of a key whose past nobody can tell: as a store that lost it leads it.
function unknownPast(key: string, tool: string, now: number): Receipt {
  return { key, tool, status: 'in_doubt', attempts: 0, startedAt: now, window: 'store_reset' };
}
