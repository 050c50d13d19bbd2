/**
 * The idempotency layer's store seam: in-flight keys with leases, recent successes, and the
 * receipts keyed executions leave behind (one process, or a fleet through Redis).
 * @module
 */

import type { OutcomeWindow } from '../../src/errors.js';
import type { MaybePromise, StoreLease } from '../../src/stores.js';

/**
 * The content fingerprint of a call (tool name and args): equal exactly for the same call. It
 * crosses processes, so a deploy that changes the algorithm should change the key prefix too.
 */
export type StoreFingerprint = string;

/** The lead on a key: the holder runs the handler, then completes or releases. */
export interface IdempotencyLease extends StoreLease {
  /** The idempotency key. */
  readonly key: string;
  /** Grows with every new leader of this key, for a backend that rejects older leaders' writes. */
  readonly fence: number;
}

/** What `IdempotencyStore.claim` answers. */
export type IdempotencyClaim =
  /** Nobody holds the key: the caller leads and must `complete` or `release` the lease. */
  | {
      /** What the claim found. */
      readonly kind: 'lead';
      /** The lead: renew it, then complete or release it. */
      readonly lease: IdempotencyLease;
      /** An earlier leader's unsettled receipt (present, even `undefined`, when the claim looked). */
      readonly receipt?: Receipt | undefined;
      /**
       * `true` when the store cannot vouch that it remembers the key's past, and holds no
       * unsettled receipt of it: it may have lost its data lately (a Redis whose epoch is younger
       * than its reset window, which no process has yet reported as a restart: a first
       * deployment looks the same). The idempotency layer then asks its attached `receipts`,
       * when they are not the store's own, before it runs a tool that is not idempotent.
       */
      readonly pastUnknown?: boolean;
    }
  /** A success is stored for this key and fingerprint; serve it without running the handler. */
  | {
      /** What the claim found. */
      readonly kind: 'hit';
      /** The stored success. */
      readonly result: unknown;
      /** How long it is served still, in milliseconds. */
      readonly expiresInMs: number;
    }
  /** The key succeeded but its result could not be shared: fail the caller, never run it again. */
  | {
      /** What the claim found. */
      readonly kind: 'unshareable';
      /** Why the result could not be shared. */
      readonly reason: string;
      /** How long the key stays done, in milliseconds. */
      readonly expiresInMs: number;
    }
  /** Another holder runs the key: wait with `changed(key, fence, …)`, then claim again. */
  | {
      /** What the claim found. */
      readonly kind: 'follow';
      /** The running holder's fence. */
      readonly fence: number;
      /** When that holder's lease ends unless it renews, in milliseconds. */
      readonly leaseEndsInMs: number;
    }
  /** The key is held or stored for another fingerprint: an `idempotency_conflict`. */
  | {
      /** What the claim found. */
      readonly kind: 'conflict';
    };

/** What `IdempotencyStore.complete` answers. */
export type IdempotencyCompletion =
  /** The result is stored for `ttlMs` (a resend of a stored completion answers this too). */
  | {
      /** What the completion did. */
      readonly kind: 'stored';
    }
  /** The lease had lapsed but nobody claimed the key since: stored anyway. */
  | {
      /** What the completion did. */
      readonly kind: 'late';
    }
  /** Another leader took the key over; nothing was written and the lease's signal is aborted. */
  | {
      /** What the completion did. */
      readonly kind: 'lost';
      /** The winning leader's stored outcome, once it has one: serve it. */
      readonly winner?: {
        /** The winner's result. */
        readonly result: unknown;
      };
    };

/** What `IdempotencyStore.peek` answers: what `claim` would find, without claiming. */
export type IdempotencyPeek =
  /** A success is stored for this key and fingerprint. */
  | {
      /** What the look found. */
      readonly kind: 'hit';
      /** The stored success. */
      readonly result: unknown;
      /** How long it is served still, in milliseconds. */
      readonly expiresInMs: number;
    }
  /** The key succeeded but its result could not be shared. */
  | {
      /** What the look found. */
      readonly kind: 'unshareable';
      /** Why the result could not be shared. */
      readonly reason: string;
      /** How long the key stays done, in milliseconds. */
      readonly expiresInMs: number;
    }
  /** The key is held or stored for another fingerprint. */
  | {
      /** What the look found. */
      readonly kind: 'conflict';
    }
  /** Nothing is stored: the key is free, or a leader holds it. */
  | {
      /** What the look found. */
      readonly kind: 'none';
    };

/**
 * Where the idempotency layer keeps in-flight keys and recent successes: one handler execution
 * per key across every process sharing the store, while held and for `ttlMs` after a success.
 * The layer's loop: `claim`; on `lead` keep the lease alive, run, then `complete` or `release`;
 * on `follow` await `changed` and claim again. A failing method throws `store_unavailable`.
 */
export interface IdempotencyStore {
  /**
   * Claims `key` for `fingerprint` with a new lease, or reports who has it; a claim with the
   * holder's token answers `lead` with the same lease again.
   *
   * @param options.token - The owner token to claim with; a fresh random one by default.
   * @param options.tool - The tool's name, for the `running` receipt of a store with `receipts`.
   * @param options.reconcilable - The tool has `reconcile`: a store that lost its past (a Redis
   *   restarted empty) may lead it with an `in_doubt` receipt of window `store_reset`.
   */
  claim(
    key: string,
    fingerprint: StoreFingerprint,
    options?: { token?: string; tool?: string; reconcilable?: boolean },
  ): MaybePromise<IdempotencyClaim>;
  /** Extends the lease by a full lease; `false` (and `lease.signal` aborted) when it is gone. */
  renew(lease: IdempotencyLease): MaybePromise<boolean>;
  /** Records the holder's success for `ttlMs` (once, however often sent) and wakes followers. */
  complete(
    lease: IdempotencyLease,
    result: unknown,
    ttlMs: number,
    receipt?: Receipt,
  ): MaybePromise<IdempotencyCompletion>;
  /** Frees the key after a failure and wakes followers; a no-op when the lease is not the holder's. */
  release(lease: IdempotencyLease, receipt?: Receipt): MaybePromise<void>;
  /**
   * Resolves when the holder with `fence` may have finished with `key`, after `timeoutMs` at the
   * latest, or at once when `signal` aborts (never rejecting for it); never misses a change.
   */
  changed(
    key: string,
    fence: number,
    options: { signal: AbortSignal; timeoutMs: number },
  ): MaybePromise<void>;
  /**
   * Reads what is stored under `key` for `fingerprint` without claiming it (one round trip, no
   * write); optional, for readers that must not hold a key they only look at.
   *
   * @example
   * const seen = await store.peek?.('task-1', 'mcp-task'); // { kind: 'hit', result, expiresInMs }
   */
  peek?(key: string, fingerprint: StoreFingerprint): MaybePromise<IdempotencyPeek>;
  /**
   * Stores `result` under `key` for `ttlMs` only if the key has no record, held or stored
   * (`'exists'` then, nothing written), in one round trip without a lease; optional.
   *
   * @example
   * if ((await store.putIfAbsent?.('task-1', 'mcp-task', record, 60_000)) === 'stored') created();
   */
  putIfAbsent?(
    key: string,
    fingerprint: StoreFingerprint,
    result: unknown,
    ttlMs: number,
  ): MaybePromise<'stored' | 'exists'>;
  /** The store's own receipts, if it keeps them (written by `claim`, `complete` and `release`). */
  readonly receipts?: ReceiptStore;
}

/**
 * What one keyed execution left behind: what ran, how it ended, and who said so. Receipts
 * outlive the success they describe, so that a crash or an unknown outcome stays visible.
 */
export interface Receipt {
  /** The idempotency key. */
  readonly key: string;
  /** The tool's name. */
  readonly tool: string;
  /** `running` until it settles; `in_doubt` when the action may or may not have happened. */
  readonly status: 'running' | 'succeeded' | 'failed' | 'in_doubt';
  /**
   * Handler attempts made by this execution; 0 for one that `reconcile` settled before the handler
   * ran again (after a crashed leader, a store reset or an earlier `in_doubt` receipt).
   */
  readonly attempts: number;
  /** When the execution started, in ms (a refusal or a crash's `in_doubt` keeps the original). */
  readonly startedAt: number;
  /** When it settled, in ms. */
  readonly endedAt?: number;
  /** For `in_doubt`, or a success found by `reconcile`: where the outcome was lost. */
  readonly window?: OutcomeWindow;
  /**
   * Who settled it: the handler, the tool's `reconcile` (in the call, or run from the console),
   * or a person who marked it resolved (see `resolution`).
   */
  readonly settledBy?: 'handler' | 'reconcile' | 'person';
  /** What `reconcile` found, as it gave it, whatever its verdict. */
  readonly evidence?: unknown;
  /**
   * The call's args as JSON text, redacted (the dispatcher's redactor, else the built-in
   * patterns) and capped at 2 000 characters (ending `…[truncated]` when cut); kept on
   * `in_doubt` receipts, so that an operator sees what may have run and the console can hand
   * them to `reconcile`.
   */
  readonly preview?: string;
  /** For a receipt a person marked resolved: who, when (ms since the epoch), and their note. */
  readonly resolution?: {
    /** Who marked it. */
    readonly by: string;
    /** When. */
    readonly at: number;
    /** Why, in their words. */
    readonly note: string;
  };
}

/** Which receipts `ReceiptStore.list` answers. */
export interface ReceiptQuery {
  /** Only receipts in doubt (the operator's query). */
  inDoubt?: boolean;
  /** Only receipts with this status. */
  status?: Receipt['status'];
  /** Only receipts of this tool. */
  tool?: string;
  /** The most receipts answered. @default 100 */
  limit?: number;
}

/**
 * Where receipts of keyed executions live: one per key, the latest record winning.
 *
 * @example
 * const doubtful = await receipts.list({ inDoubt: true });
 */
export interface ReceiptStore {
  /** The receipt of `key`, if one is kept. */
  get(key: string): MaybePromise<Receipt | undefined>;
  /** Records `receipt`, replacing the key's earlier one. */
  record(receipt: Receipt): MaybePromise<void>;
  /** Receipts matching `query`, the most recent first. */
  list(query?: ReceiptQuery): MaybePromise<Receipt[]>;
}
