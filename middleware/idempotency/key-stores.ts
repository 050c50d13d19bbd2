/**
 * The stores a keyed call talks to, and the writes of a settled execution whose failure never
 * fails the call they describe.
 * @module
 */

import type { Clock } from '../../src/clock.js';
import type { IdempotencyLease, IdempotencyStore, Receipt, ReceiptStore } from './store.js';
import type { DispatchContext, Tool } from '../../src/types.js';
import { receiptFailed } from './key-receipts.js';

/** The idempotency layer's stores, its TTL and clock, shared by every walk of a key. */
export class KeyStores {
  /** Whether receipts go to a store of their own, besides riding with the key's writes. */
  readonly recordsApart: boolean;

  constructor(
    /** Where keys and successes live. */
    readonly store: IdempotencyStore,
    /** Where receipts are recorded. */
    readonly receipts: ReceiptStore,
    private readonly storeTtlMs: number,
    /** The timers that renew leases and pace completion resends. */
    readonly timers: Pick<Clock, 'setTimeout' | 'clearTimeout'>,
    /** The layer's clock. */
    readonly now: () => number,
    /** Whether each lead records a running receipt (a store shared with other processes). */
    readonly receiptsOnLead: boolean,
  ) {
    this.recordsApart = receipts !== store.receipts;
  }

  /**
   * What a claim tells the store. A store shared with other processes records a running receipt
   * with each lead, so that a crashed leader is seen; a store of this layer's own dies with its
   * leaders, so it needs none.
   */
  claimOptions(tool: Tool): { tool: string; reconcilable: boolean } | undefined {
    return this.receiptsOnLead ? { tool: tool.name, reconcilable: tool.reconcile !== undefined } : undefined;
  }

  /** How long `ctx`'s success is stored: a store's TTL is finite, "for ever" as long as a timer can count. */
  ttlOf(ctx: DispatchContext): number {
    const { idempotencyTtlMs } = ctx.options;
    return idempotencyTtlMs === undefined ? this.storeTtlMs : Math.min(idempotencyTtlMs, 2 ** 47);
  }

  /**
   * Records `receipt` in an attached receipt store (the store's own receipts get it with the
   * key's write instead). Never rejects: a record that fails is said with `receipt.failed`.
   */
  async record(ctx: DispatchContext, receipt: Receipt): Promise<void> {
    if (!this.recordsApart) return;
    try {
      await this.receipts.record(receipt);
    } catch (error) {
      receiptFailed(ctx, receipt, error);
    }
  }

  /**
   * Releases `lease`, `receipt` riding with it, and records the receipt apart (unless `apart` is
   * `false`: the attached store then keeps what it holds); settles when both are written or
   * failed. Never rejects: the lease frees the key when it ends anyway.
   */
  async release(
    ctx: DispatchContext,
    lease: IdempotencyLease,
    receipt?: Receipt,
    apart = true,
  ): Promise<void> {
    const recorded = receipt === undefined || !apart ? undefined : this.record(ctx, receipt);
    try {
      await this.store.release(lease, receipt);
    } catch (error) {
      // A receipt that rode with the release is lost with it.
      if (receipt !== undefined) receiptFailed(ctx, receipt, error);
    }
    await recorded;
  }
}
