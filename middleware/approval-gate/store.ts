/**
 * The approval store seam: pending, approved and denied requests by token, shared by the gate
 * and whoever approves (one process, or a fleet through Redis).
 * @module
 */

import type { OutcomeWindow } from '../../src/errors.js';
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
 * Where the run of an approved token stands, as `redeem` answers: `claimed` by the delivery that
 * asked (it runs the handler), `running` under another delivery's claim, or how that run ended.
 */
export type ApprovalRedemption =
  | {
      /** This claim holds the run: the caller runs the handler, then calls `settle`. */
      readonly state: 'claimed';
    }
  | {
      /** Another claim holds the run and has not settled it (it is running, or its process died). */
      readonly state: 'running';
    }
  | {
      /** The run succeeded. */
      readonly state: 'succeeded';
      /** The handler's result, as the store could keep it. */
      readonly result: unknown;
    }
  | {
      /** The run succeeded, but its result could not be kept (not JSON, too large). */
      readonly state: 'unshareable';
      /** Why the result was not kept. */
      readonly reason: string;
    }
  | {
      /** The run may or may not have taken effect. */
      readonly state: 'in_doubt';
      /** Where its outcome was lost. */
      readonly window: OutcomeWindow;
    };

/** How the claimed run of an approved token ended, as the gate reports it to `settle`. */
export type ApprovalSettlement =
  | {
      /** The run succeeded: later deliveries get `result`. */
      readonly state: 'succeeded';
      /** The handler's result. */
      readonly result: unknown;
    }
  | {
      /** The run may have taken effect: later deliveries are `outcome_unknown`. */
      readonly state: 'in_doubt';
      /** Where its outcome was lost. */
      readonly window: OutcomeWindow;
    }
  | {
      /** The run failed and took no effect: the claim is dropped, and the token may be redeemed again. */
      readonly state: 'released';
    };

/**
 * Holds approval requests. Each method is one atomic step (one Lua script on Redis) and safe to
 * send again. `redeem` and `settle` are optional so that older stores keep working, but a store
 * without them leaves "an approved token runs once" to the idempotency layer's memory of the
 * outcome, which is bounded (`maxEntries`); the built-in stores have both.
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
  /**
   * Claims the one run of an approved token for `claim` (an id fresh for each delivery), in one
   * atomic step: `claimed` when nobody held it (or `claim` already does: safe to send again),
   * else where the run stands. `undefined` when the token is unknown, expired or not approved.
   * The redemption lives as long as the request.
   *
   * @example
   * const run = await store.redeem?.(token, claim); // { state: 'claimed' } for the first delivery
   */
  redeem?(token: string, claim: string): MaybePromise<ApprovalRedemption | undefined>;
  /**
   * Records how the run held by `claim` ended (a no-op when `claim` does not hold it, so safe to
   * send again): later `redeem`s answer the outcome, or, once `released`, may claim the run anew.
   *
   * @example
   * await store.settle?.(token, claim, { state: 'succeeded', result });
   */
  settle?(token: string, claim: string, settlement: ApprovalSettlement): MaybePromise<void>;
}
