/**
 * The receipt types of issue 24, as its Public API gives them, until the core publishes its own.
 * @module
 */

// TEMPORARY: replaced by the core's types at merge

import type { MaybePromise } from '../../src/stores.js';

/** Where an outcome became unknown: the window a call fell into. */
export type OutcomeWindow =
  | 'attempt_timeout'
  | 'handler_unknown'
  | 'lease_lost'
  | 'leader_crashed'
  | 'store_reset';

/** What is known of one keyed execution: times are milliseconds on the store's clock. */
export interface Receipt {
  /** The idempotency key. */
  key: string;
  /** The tool's registry name. */
  tool: string;
  /** Where the execution stands. */
  status: 'running' | 'succeeded' | 'failed' | 'in_doubt';
  /** Handler attempts made. */
  attempts: number;
  /** When the execution started. */
  startedAt: number;
  /** When it settled. */
  endedAt?: number;
  /** Where the outcome became unknown, for `in_doubt` (and a reconciled success). */
  window?: OutcomeWindow;
  /** Who settled it. */
  settledBy?: 'handler' | 'reconcile';
  /** What `reconcile` returned as proof. */
  evidence?: unknown;
}

/** Where receipts live. */
export interface ReceiptStore {
  /** The receipt of `key`, if any. */
  get(key: string): MaybePromise<Receipt | undefined>;
  /** Writes `receipt`, replacing the one of its key. */
  record(receipt: Receipt): MaybePromise<void>;
  /** Receipts matching every field of `query`, newest first. */
  list(query?: {
    inDoubt?: boolean;
    status?: Receipt['status'];
    tool?: string;
    limit?: number;
  }): MaybePromise<Receipt[]>;
}
