/**
 * The approval store seam: pending, approved and denied requests by token, shared by the gate
 * and whoever approves (one process, or a fleet through Redis).
 * @module
 */

import type { MaybePromise } from '../../src/stores.js';

/** Where a request stands. */
export type ApprovalStatus = 'pending' | 'approved' | 'denied';

/** What the gate asks a store to open: one request per call. */
export interface ApprovalRequest {
  /** A fresh, unguessable token, used when no request of this call is pending. */
  readonly token: string;
  /** The call's identity: a pending request with the same one is returned instead of a new one. */
  readonly callKey: string;
  /** The tool the token is bound to. */
  readonly tool: string;
  /** The fingerprint of the validated args (base64url), which the token is bound to. */
  readonly fingerprint: string;
  /** The call's idempotency key, or `null`; the token is bound to it. */
  readonly key: string | null;
  /** The call that asked. */
  readonly callId: string;
  /** Why approval is needed. */
  readonly reason: string;
  /** How long the token lives, in milliseconds. */
  readonly ttlMs: number;
}

/** A request as the store holds it. */
export interface ApprovalRecord {
  /** The token. */
  readonly token: string;
  /** The tool it is bound to. */
  readonly tool: string;
  /** The args' fingerprint it is bound to. */
  readonly fingerprint: string;
  /** The idempotency key it is bound to, or `null`. */
  readonly key: string | null;
  /** The call that asked. */
  readonly callId: string;
  /** Why approval was needed. */
  readonly reason: string;
  /** When the token expires, in milliseconds since the epoch on the store's clock. */
  readonly expiresAt: number;
  /** Where it stands. */
  readonly status: ApprovalStatus;
  /** Who approved it, once approved. */
  readonly approvedBy?: string;
  /** The reviewer's reason, once denied. */
  readonly deniedReason?: string;
}

/** A reviewer's answer. */
export type ApprovalAnswer =
  | {
      /** Approve the request. */
      readonly action: 'approve';
      /** Who approved it. */
      readonly by: string;
    }
  | {
      /** Deny the request; final. */
      readonly action: 'deny';
      /** Why, as the reviewer gave it. */
      readonly reason: string;
    };

/**
 * Holds approval requests. Each method is one atomic step (one Lua script on Redis) and safe to
 * send again.
 */
export interface ApprovalStore {
  /**
   * The pending, unexpired request of `request.callKey` if there is one (`created: false`), else a
   * new pending one under `request.token` (`created: true`).
   */
  open(request: ApprovalRequest): MaybePromise<{
    /** The request as stored: the new one, or the one already pending for the call. */
    record: ApprovalRecord;
    /** Whether this call created it. */
    created: boolean;
  }>;
  /** The request under `token`, or `undefined` when unknown or expired. */
  get(token: string): MaybePromise<ApprovalRecord | undefined>;
  /**
   * Answers a request: `true` when it now stands as answered (answering it the same way again is
   * `true` too), `false` when unknown, expired, or answered the other way (a deny is final).
   */
  answer(token: string, answer: ApprovalAnswer): MaybePromise<boolean>;
}
