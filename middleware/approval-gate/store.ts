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
  /** Who the call is for (the dispatch's `tenant` option), if any. */
  readonly tenant?: string;
  /**
   * The validated args as JSON text, redacted and capped by the gate before it reaches the store
   * (a reviewer's screen and a shared store are sinks too); absent when previews are off.
   */
  readonly preview?: string;
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
  /** Who the call is for, if the request said (absent in records stored before it was kept). */
  readonly tenant?: string;
  /** The redacted, capped JSON text of the args the token is bound to, if kept. */
  readonly preview?: string;
  /** When the request was opened, in milliseconds since the epoch on the store's clock. */
  readonly createdAt?: number;
  /** The fingerprint of the args first asked for, once a reviewer approved edited args instead. */
  readonly editedFrom?: string;
  /** Through which channel it was answered (`console`, `host`, `mcp`, `api`, …), once answered. */
  readonly channel?: string;
  /** When it was answered, in milliseconds since the epoch on the store's clock. */
  readonly decidedAt?: number;
}

/**
 * What `list` answers for: the status of the requests (`pending` by default), a page size, where
 * to go on, and the tool and tenant to keep.
 */
export interface ApprovalListQuery {
  /**
   * Which requests: only `pending` ones can be listed across a fleet in bounded time, so a store
   * may refuse other statuses (the built-in ones list `pending` only).
   * @default 'pending'
   */
  readonly status?: 'pending';
  /**
   * The most requests in a page, 1 to 500.
   * @default 100
   */
  readonly limit?: number;
  /** Where the previous page ended (its `cursor`); absent for the first page. */
  readonly cursor?: string;
  /**
   * Only requests for this tool. The built-in stores filter where they read, so a page holds up
   * to `limit` matches; a store written before filters may ignore it, so a caller that must not
   * show others checks each item too (the console does).
   */
  readonly tool?: string;
  /** Only requests for this tenant (a request that named none never matches); as `tool`. */
  readonly tenant?: string;
}

/** A page of `list`: requests oldest first, and the cursor of the next page when there is more. */
export interface ApprovalPage {
  /**
   * The requests, oldest first (by `createdAt`, then token). A store that bounds its work per call
   * may end a page early with a cursor (the Redis store looks at 20 000 requests at most): fewer
   * than `limit`, even none, means the end only when `cursor` is absent.
   */
  readonly items: readonly ApprovalRecord[];
  /** Pass it back for the next page; absent on the last one. */
  readonly cursor?: string;
}

/** How a request was decided: approved as asked, approved with edited args, denied, or left to expire. */
export type ApprovalDecisionKind = 'approved' | 'edited' | 'denied' | 'expired';

/**
 * One decision on a request, as the store's audit log keeps it (one per request at most: an
 * answer sent again, or losing a race, writes nothing). Published to `subscribe`rs as it is written.
 */
export interface ApprovalAuditRecord {
  /** The request's token. */
  readonly token: string;
  /** The tool it is bound to. */
  readonly tool: string;
  /** What was decided. */
  readonly decision: ApprovalDecisionKind;
  /** Who decided (a reviewer's name, `mcp-client`, or `store` for an expiry). */
  readonly by: string;
  /** Through which channel: `console`, `host`, `mcp`, `api` (the default), `store` for an expiry, … */
  readonly channel: string;
  /** When, in milliseconds since the epoch on the store's clock. */
  readonly at: number;
  /** The fingerprint the decision applies to: for `edited`, the edited args' (the one that may run). */
  readonly fingerprint: string;
  /** For `edited`, the fingerprint of the args first asked for (they can no longer run). */
  readonly editedFrom?: string;
  /** For `denied`, the reviewer's reason. */
  readonly reason?: string;
  /** Who the call was for, if known. */
  readonly tenant?: string;
}

/** What `audit` answers for: one request's decisions, or the whole log from a cursor. */
export interface ApprovalAuditQuery {
  /** Only this request's decision(s). */
  readonly token?: string;
  /**
   * The most records in a page, 1 to 500.
   * @default 100
   */
  readonly limit?: number;
  /** Where the previous page ended; absent for the oldest kept. */
  readonly cursor?: string;
}

/** A page of the audit log, oldest first, and the cursor of the next page when there is more. */
export interface ApprovalAuditPage {
  /** The records, oldest first. */
  readonly items: readonly ApprovalAuditRecord[];
  /** Pass it back for the next page; absent on the last one. */
  readonly cursor?: string;
}

/** A reviewer's answer. */
export type ApprovalAnswer =
  | {
      /** Approve the request. */
      readonly action: 'approve';
      /** Who approved it. */
      readonly by: string;
      /** Through which channel (kept in the record and its audit record). @default 'api' */
      readonly channel?: string;
      /**
       * Approve edited args instead of the ones asked for: the token is bound to this fingerprint
       * from now on (the original args can no longer run on it). Only a store whose `edits` is
       * `true` honours it; the gate never sends it to another.
       */
      readonly edit?: {
        /** The edited, validated args' fingerprint (base64url). */
        readonly fingerprint: string;
        /** Their redacted, capped JSON text, replacing the record's `preview`. */
        readonly preview?: string;
      };
    }
  | {
      /** Deny the request; final. */
      readonly action: 'deny';
      /** Why, as the reviewer gave it. */
      readonly reason: string;
      /** Who denied it. @default 'a reviewer' */
      readonly by?: string;
      /** Through which channel. @default 'api' */
      readonly channel?: string;
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
  /**
   * `true` when `answer` honours an approve's `edit` (binds the token to the edited fingerprint in
   * the same atomic step). A store without it cannot take edit-then-approve: the gate refuses it.
   */
  readonly edits?: boolean;
  /**
   * A page of requests, oldest first (optional: a console says "this store cannot list" without
   * it). Expired requests are never listed (and are audited as `expired` when found).
   *
   * @throws TypeError for a `limit` outside 1..500, a status other than `pending`, or a cursor it did not give.
   * @example
   * const { items, cursor } = await store.list?.({ limit: 50 });
   */
  list?(query?: ApprovalListQuery): MaybePromise<ApprovalPage>;
  /**
   * A page of the audit log: every decision (approve, edit, deny, expiry), oldest first, or one
   * request's with `token`.
   *
   * @example
   * const { items } = await store.audit?.({ token });
   */
  audit?(query?: ApprovalAuditQuery): MaybePromise<ApprovalAuditPage>;
  /**
   * Hears every decision as it is written, made through any store on the same backing (in this
   * process for the memory store, across the fleet over Redis pub/sub). Returns the unsubscribe
   * function. A listener that throws is ignored.
   *
   * @example
   * const stop = store.subscribe?.((decided) => console.log(decided.token, decided.decision));
   */
  subscribe?(listener: (decided: ApprovalAuditRecord) => void): () => void;
}
