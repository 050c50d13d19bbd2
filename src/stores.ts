/**
 * The state seam: where the layers keep what must outlive one call, as clock.ts is the seam for time.
 *
 * Stores hold data; middleware keep the decisions. A store offers atomic primitives (claim a key,
 * compare-and-set a record, take a permit) and never runs a layer's state machine, so the memory
 * and the Redis stores never implement the same machine twice. Every method may answer
 * synchronously: the memory stores do, so the default stack pays no promise for them.
 * @module
 */

import { noop } from './internal/abort.js';
import { systemClock, type Clock } from './clock.js';
import { DispatchError, type OutcomeWindow } from './errors.js';

/** A value, or a promise of it: what every store method returns. */
export type MaybePromise<T> = T | Promise<T>;

/**
 * The content fingerprint of a call (its tool name and args), as the idempotency layer computes
 * it: two calls carry equal strings exactly when they are the same call. Stores compare it and
 * never parse it; it crosses processes, so every process of a fleet must compute it the same
 * way (a deploy that changes the algorithm should change the key prefix too).
 */
export type StoreFingerprint = string;

/**
 * The failure a store reports when it cannot answer in time or at all (kind `store_unavailable`,
 * JSON-RPC -32603, transient, never a breaker failure). A store call that timed out is an
 * *unknown outcome*: the change may have been applied. Every store method that changes state is
 * safe to send again with the same token or id, which is how a caller recovers from it.
 *
 * @example
 * throw storeUnavailable('Redis did not answer within 1000 ms', { cause: error, retryAfterMs: 100 });
 */
export function storeUnavailable(
  message: string,
  options: { cause?: unknown; retryAfterMs?: number } = {},
): DispatchError {
  return new DispatchError('store_unavailable', message, options);
}

// ---------------------------------------------------------------------------------------------
// Leases

/**
 * Something a holder keeps only while it renews it: an idempotency lead or a slot permit. A
 * holder that crashes stops renewing, and what it held comes free when the lease ends (on the
 * store's clock, never the holder's).
 */
export interface StoreLease {
  /** The holder's random owner token; every write checks it, so resends are harmless. */
  readonly token: string;
  /**
   * How often to call the store's `renew` while the lease is held, in milliseconds (a third
   * of the lease). `Infinity` when the lease never lapses on its own (the memory stores: a
   * holder in this process cannot crash without the store going too), so nothing is scheduled.
   */
  readonly renewEveryMs: number;
  /**
   * Aborted, with a `DispatchError` of kind `lease_lost` as its reason, once the store knows
   * the lease is gone: a renewal was refused (someone else holds it now), a completion found
   * another owner, or renewals failed until the lease must have ended. The holder should abort
   * the work it guards; its side effects may already have happened (see docs/scale-out.md).
   */
  readonly signal: AbortSignal;
}

/**
 * Renews `lease` every `lease.renewEveryMs` until the returned function is called, with timers
 * that never keep the process alive. A renewal that throws (the store is unreachable) is
 * retried on the next tick; one that answers `false` (the lease is lost, and the store has
 * aborted `lease.signal`) stops renewing. Schedules nothing for a lease that never lapses.
 *
 * @param renew - The store's renewal of this lease, e.g. `() => store.renew(lease)`.
 * @param clock - The timers to use. @default systemClock
 * @returns A function that stops renewing; call it before `complete`/`release`.
 * @example
 * const stop = keepLeaseAlive(claim.lease, () => store.renew(claim.lease));
 * try { await next(); } finally { stop(); }
 */
export function keepLeaseAlive(
  lease: StoreLease,
  renew: () => MaybePromise<boolean>,
  clock: Pick<Clock, 'setTimeout' | 'clearTimeout'> = systemClock,
): () => void {
  const everyMs = lease.renewEveryMs;
  if (!(everyMs < Infinity)) return noop;
  let handle: unknown;
  let stopped = false;
  // It never listens on `lease.signal` (a store may make that signal only when asked for it):
  // a lost lease answers `false` to the next renewal, which stops it.
  const stop = () => {
    if (stopped) return;
    stopped = true;
    clock.clearTimeout(handle);
  };
  const schedule = () => {
    handle = clock.setTimeout(tick, everyMs);
    (handle as { unref?: () => void } | undefined)?.unref?.();
  };
  const tick = () => {
    if (stopped) return;
    let answer: MaybePromise<boolean>;
    try {
      answer = renew();
    } catch {
      schedule();
      return;
    }
    Promise.resolve(answer).then(
      (kept) => {
        if (kept) {
          if (!stopped) schedule();
        } else stop();
      },
      () => {
        if (!stopped) schedule();
      },
    );
  };
  schedule();
  return stop;
}

// ---------------------------------------------------------------------------------------------
// Idempotency

/** The lead on a key: the holder runs the handler, then completes or releases. */
export interface IdempotencyLease extends StoreLease {
  /** The idempotency key. */
  readonly key: string;
  /**
   * Grows with every new leader of this key (never reused while the store lives); hand it to a
   * backend that can reject writes from an older leader.
   */
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
      /**
       * The key's unsettled receipt (`running` or `in_doubt`) from an earlier leader, when the
       * store keeps receipts: a present member, even `undefined`, means the claim looked.
       */
      readonly receipt?: Receipt | undefined;
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
  /**
   * The key succeeded, but its result could not be shared (not serialisable, or over the size
   * cap; `reason` says which). Never run it again within `expiresInMs`; fail the caller.
   */
  | {
      /** What the claim found. */
      readonly kind: 'unshareable';
      /** Why the result could not be shared. */
      readonly reason: string;
      /** How long the key stays done, in milliseconds. */
      readonly expiresInMs: number;
    }
  /**
   * Another holder (`fence`) is running the key: wait with `changed(key, fence, …)`, then claim
   * again. `leaseEndsInMs` is when that holder's lease ends unless it renews.
   */
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
  /**
   * Another leader took the key over. Nothing was written. `winner` is that leader's stored
   * result when it has finished (serve it, so every caller sees one execution's result), and
   * absent while it still runs. The lease's signal is aborted.
   */
  | {
      /** What the completion did. */
      readonly kind: 'lost';
      /** The winning leader's stored outcome, once it has one. */
      readonly winner?: {
        /** The winner's result. */
        readonly result: unknown;
      };
    };

/**
 * Where the idempotency layer keeps in-flight keys and recent successes. One handler execution
 * per key, across every process sharing the store, while the key is held and for `ttlMs` after
 * a success. Every method may answer synchronously (the memory store does) or with a promise; a
 * method that cannot reach its backing store throws or rejects with `store_unavailable`.
 *
 * The layer keeps coalescing same-process callers in memory in front of it, so only one caller
 * per process and key talks to the store. Its loop, for that local leader:
 *
 * 1. `claim(key, fingerprint)`:
 *    - `hit` → serve `result`; `unshareable` → fail without running; `conflict` → conflict.
 *    - `lead` → `keepLeaseAlive(lease, () => store.renew(lease))`, run the handler with a signal
 *      that also aborts on `lease.signal`, stop renewing, then `complete(lease, result, ttlMs)`
 *      on success (`lost` with a `winner`: serve the winner's result) or `release(lease)` on
 *      failure or abandonment.
 *    - `follow` → `await changed(key, claim.fence, { signal, timeoutMs: claim.leaseEndsInMs })`
 *      and claim again (the leader may have finished, failed or crashed).
 * 2. A `complete` that throws after a success still returns the result to the caller: the side
 *    effect happened. Retry it (same lease, it is resend-safe) until the lease would have ended.
 */
export interface IdempotencyStore {
  /**
   * Claims `key` for `fingerprint` with a new lease, or reports who has it. Resend-safe: a
   * claim with the token of the current holder answers `lead` with the same lease again.
   *
   * @param options.token - The owner token to claim with; a fresh random one by default.
   * @param options.tool - The tool's name: a store with `receipts` records a `running`
   *   receipt for a lead in the same round trip.
   * @param options.reconcilable - The tool has `reconcile`: a store that lost its past (a Redis
   *   restarted empty) may lead it with an `in_doubt` receipt of window `store_reset` instead
   *   of refusing it.
   */
  claim(
    key: string,
    fingerprint: StoreFingerprint,
    options?: { token?: string; tool?: string; reconcilable?: boolean },
  ): MaybePromise<IdempotencyClaim>;
  /**
   * Extends the lease by a full lease from now. `false` when the lease is gone (expired and
   * taken, completed or released): the store aborts `lease.signal` then. Resend-safe.
   */
  renew(lease: IdempotencyLease): MaybePromise<boolean>;
  /**
   * Records the holder's success, served to every claim of the key for `ttlMs` from now.
   * Resend-safe: completing twice stores once. Wakes every follower of the key. A store with
   * `receipts` records `receipt` in the same round trip.
   */
  complete(
    lease: IdempotencyLease,
    result: unknown,
    ttlMs: number,
    receipt?: Receipt,
  ): MaybePromise<IdempotencyCompletion>;
  /**
   * Frees the key after a failure, so the next caller leads at once; a no-op when the lease
   * is no longer the holder's (it never deletes another leader's claim). Wakes followers. A
   * store with `receipts` records `receipt` in the same round trip.
   */
  release(lease: IdempotencyLease, receipt?: Receipt): MaybePromise<void>;
  /**
   * Resolves when the holder with `fence` may have finished with `key` (completed, released,
   * or its lease ended), or after `timeoutMs` at the latest (the store may wake sooner, e.g. a
   * safety poll), or at once when `signal` aborts (it never rejects for an abort: check the
   * signal). A change that happened after the `claim` that answered `follow` is never missed.
   * Then claim again.
   */
  changed(
    key: string,
    fence: number,
    options: { signal: AbortSignal; timeoutMs: number },
  ): MaybePromise<void>;
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
  /** Handler attempts made. */
  readonly attempts: number;
  /** When the execution started, in ms. */
  readonly startedAt: number;
  /** When it settled, in ms. */
  readonly endedAt?: number;
  /** For `in_doubt`, or a success found by `reconcile`: where the outcome was lost. */
  readonly window?: OutcomeWindow;
  /** Whether the handler or the tool's `reconcile` settled it. */
  readonly settledBy?: 'handler' | 'reconcile';
  /** What `reconcile` found, as it gave it. */
  readonly evidence?: unknown;
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

// ---------------------------------------------------------------------------------------------
// Concurrency slots

/** A slot held in a pool; release it exactly once. */
export interface SlotPermit extends StoreLease {
  /** The pool it belongs to. */
  readonly pool: string;
}

/** Waits for a permit in a `SlotStore` queue. */
export interface SlotWaiter {
  /** Called once with the permit handed to this waiter (the waiter then owns it). */
  grant(permit: SlotPermit): void;
  /** Called once instead of `grant` when the store cannot hand out permits (`store_unavailable`). */
  fail(error: DispatchError): void;
}

/**
 * A counting semaphore of `max` permits in one named pool, shared by every process using the
 * store: the concurrency layer's cap. Waiters queue first in, first out within a process (best
 * effort across processes); a permit is a lease, so a crashed holder's slot comes back when its
 * lease ends.
 *
 * The layer's use, per call: `tryAcquire()`; if it gives a permit, run; otherwise `enqueue` a
 * waiter (emit `concurrency.queued`) and remove it with the returned function when the caller
 * aborts. While holding a permit: `keepLeaseAlive(permit, () => store.renew(permit))`. When the
 * inner layers settle: stop renewing, then `release(permit)` (without waiting for it: the call's
 * outcome does not depend on it, and a release that fails leaves the slot to its lease).
 */
export interface SlotStore {
  /** The pool's name. */
  readonly pool: string;
  /** The most permits held at once across the pool. */
  readonly max: number;
  /**
   * Takes a permit if one is free and nobody in this process waits for one; `undefined`
   * otherwise. Resend-safe with the same token.
   *
   * @param options.token - The owner token; a fresh random one by default.
   */
  tryAcquire(options?: { token?: string }): MaybePromise<SlotPermit | undefined>;
  /**
   * Queues `waiter` for the next free permit, first in, first out within this process; returns
   * a function that leaves the queue (a no-op once granted or failed).
   */
  enqueue(waiter: SlotWaiter): () => void;
  /** Extends the permit's lease; `false` when it is gone (the store aborts `permit.signal`). */
  renew(permit: SlotPermit): MaybePromise<boolean>;
  /**
   * Gives the permit back (a no-op for one already released or expired) and hands it to the
   * next waiter. Resend-safe.
   */
  release(permit: SlotPermit): MaybePromise<void>;
  /** How many permits are held and how many callers wait in this process, as best known. */
  load(): MaybePromise<{
    /** Permits held. */
    running: number;
    /** Callers waiting in this process. */
    queued: number;
  }>;
}

// ---------------------------------------------------------------------------------------------
// Circuits

/** Where a circuit stands, as a store holds it (the breaker decides what each means). */
export type CircuitStoreState = 'closed' | 'open' | 'half_open';

/**
 * One circuit's record: plain data the breaker writes and the store keeps. Times are in the
 * store's timebase (`CircuitView.now`), never a process's own clock.
 */
export interface CircuitRecord {
  /** The circuit's state. */
  readonly state: CircuitStoreState;
  /** The counted failures that opened it (0 while closed: those live in the failure window). */
  readonly failures: number;
  /** When it last opened, in store ms; 0 while closed. */
  readonly openedAt: number;
  /** The owner token of the half-open probe, `''` when there is none. */
  readonly probe: string;
  /** When the probe's lease ends, in store ms (a crashed prober frees it then); 0 without one. */
  readonly probeUntil: number;
}

/** A circuit as a store sees it at one instant. */
export interface CircuitView {
  /** The record, or `undefined` for a circuit never written (or wiped): closed. */
  readonly record: CircuitRecord | undefined;
  /** The record's version: `compareAndSet` writes only when it is still this one. 0 when absent. */
  readonly version: number;
  /** Failures recorded in the window (ids added by `addFailure` since the last write). */
  readonly failures: number;
  /** The store's time at this view, in ms; compare record times against this, never `Date.now()`. */
  readonly now: number;
}

/**
 * Where circuit breakers keep their circuits, shared by every process using the store. The
 * breaker keeps the state machine; the store offers a versioned record, a compare-and-set, and
 * a failure window, all in the store's timebase.
 *
 * The breaker's use, per call:
 * 1. `read(key)` (the Redis store answers from a local mirror kept fresh by pub/sub: no round
 *    trip while closed and healthy). `open` with `now < openedAt + cooldown` → `circuit_open`
 *    (retry after the difference). `open` past its cooldown, or `half_open` with
 *    `probeUntil <= now` → `compareAndSet(key, version, { state: 'half_open', probe: token,
 *    probeUntil: now + probeLeaseMs, … })`: the one caller whose write lands is the probe;
 *    the others get `circuit_open`. `half_open` with a live probe → `circuit_open`.
 * 2. After the call, for a counted failure while closed: `addFailure(key, failureId, windowMs)`
 *    and, when the view's `failures` reach the threshold, `compareAndSet` to `open`. For a
 *    probe's outcome: `compareAndSet` to `closed` (success) or `open` (failure) with the
 *    version it read. A success while closed with `failures > 0`: `compareAndSet` the same
 *    closed record, which clears the window (any success clears the streak, fleet-wide).
 * 3. A store error (`store_unavailable`): fall back to a local breaker; never fail the call.
 */
export interface CircuitStore {
  /** The circuit as the store sees it now. */
  read(key: string): MaybePromise<CircuitView>;
  /**
   * Writes `next` (or deletes the record, for `undefined`) only when the record is still at
   * `version`, and clears the failure window; says whether it wrote, with the view after
   * (the current one when it did not). Resend-safe: the store's own resend of a write that
   * landed answers `written: true`.
   */
  compareAndSet(
    key: string,
    version: number,
    next: CircuitRecord | undefined,
  ): MaybePromise<{
    /** Whether the write landed. */
    readonly written: boolean;
    /** The circuit after the write, or as it is when the write did not land. */
    readonly view: CircuitView;
  }>;
  /**
   * Adds one failure (`failureId` counts once however often it is sent) to the key's window,
   * drops those older than `windowMs`, and answers the view with the count left.
   */
  addFailure(key: string, failureId: string, windowMs: number): MaybePromise<CircuitView>;
  /** The circuits this store knows of (the Redis store: those in its mirror), for `snapshot()`. */
  entries(): MaybePromise<Iterable<readonly [string, CircuitView]>>;
}

// ---------------------------------------------------------------------------------------------
// Budget

/**
 * A tool-call budget whose `tryConsume` may answer with a promise: the shape of `Budget` once
 * it is widened (the memory `createBudget` stays synchronous; `redisBudget` answers with a
 * promise). Each handler attempt takes one unit.
 */
export interface StoreBudget {
  /** Units left, as last known (a shared budget: the last count the store reported); a hint. */
  readonly remaining: number;
  /** Units the budget started with. */
  readonly limit: number;
  /**
   * Takes `units` if that many are left and says whether it did; never overspends, across
   * every process sharing it. Resend-safe: the same `attemptId` takes its units once.
   * Rejects with `store_unavailable` when the store cannot answer (fail closed).
   *
   * @param units - Units to take. @default 1
   * @param attemptId - Names this take, so a resend takes nothing more. @default a random id
   */
  tryConsume(units?: number, attemptId?: string): MaybePromise<boolean>;
}

// ---------------------------------------------------------------------------------------------
// Rate limits

/** A token bucket's shape: `rate` tokens per `intervalMs`, refilled continuously up to `burst`. */
export interface RateBucket {
  /** Tokens added per `intervalMs`. */
  readonly rate: number;
  /** The refill interval, in milliseconds. */
  readonly intervalMs: number;
  /** The most tokens the bucket holds. */
  readonly burst: number;
}

/** What `RateStore.acquire` answers. */
export type RateGrant =
  /** The tokens are reserved: the attempt may start after `waitMs`. */
  | {
      /** Reserved. */
      readonly granted: true;
      /** How long to wait before starting, in milliseconds (0: now). */
      readonly waitMs: number;
      /** The key's debit mark at the reservation, for `delayedSince`. */
      readonly mark: number;
    }
  /** Nothing was reserved: the tokens would come only after `retryAfterMs`, past the allowed wait. */
  | {
      /** Refused. */
      readonly granted: false;
      /** When the tokens would be there, in milliseconds from now. */
      readonly retryAfterMs: number;
    };

/**
 * Where rate-limit layers keep their token buckets, one per key, shared by every process using
 * the store. Times are the store's (Redis: `TIME`). Reservations queue: each one takes its tokens
 * from the future, so later callers wait longer, first in, first out. Every method that changes
 * state takes an id and is safe to send again.
 *
 * The layer's use, per attempt: `acquire`; wait `waitMs`; then `delayedSince(key, mark)` and wait
 * that much more (a 429 seen meanwhile); run. On abort while waiting: `cancel`. When the attempt
 * fails with `retryAfterMs`: `debit`.
 */
export interface RateStore {
  /** Reserves `cost` tokens of `key`, or refuses (reserving nothing) when the wait would pass `maxWaitMs`. */
  acquire(
    key: string,
    cost: number,
    bucket: RateBucket,
    options: { maxWaitMs: number; id: string },
  ): MaybePromise<RateGrant>;
  /** Gives back a reservation whose caller left before using it. */
  cancel(key: string, cost: number, bucket: RateBucket, id: string): MaybePromise<void>;
  /**
   * Empties `key`'s bucket until `retryAfterMs` from now (a backend's 429); it refills from empty
   * after. Reservations already made move back by as much (see `delayedSince`).
   */
  debit(key: string, retryAfterMs: number, bucket: RateBucket, id: string): MaybePromise<void>;
  /** How much later than planned the reservation with `mark` may start, in milliseconds: the debits since. */
  delayedSince(key: string, mark: number): MaybePromise<number>;
}

// ---------------------------------------------------------------------------------------------
// Windowed budgets

/** What `WindowStore.reserve` answers. */
export type WindowReservation =
  /** The units are reserved in `window` (the window's number: store time / windowMs, floored). */
  | {
      /** Reserved. */
      readonly ok: true;
      /** The window the units count in. */
      readonly window: number;
    }
  /** The window has not that many units left; nothing was reserved. */
  | {
      /** Refused. */
      readonly ok: false;
      /** Time until the window ends, in milliseconds. */
      readonly retryAfterMs: number;
    };

/**
 * Where windowed budgets keep their ledgers: units used per key in fixed windows aligned on
 * multiples of `windowMs` of the store's clock, never above `limit` when reserving. Methods that
 * change state take an id and are safe to send again.
 */
export interface WindowStore {
  /** Reserves `units` of `key`'s current window if they fit under `limit`. */
  reserve(
    key: string,
    units: number,
    options: { limit: number; windowMs: number; id: string },
  ): MaybePromise<WindowReservation>;
  /**
   * Adjusts a reservation of `window` by `delta` units once the actual cost is known: a negative
   * delta gives units back, a positive one charges an overrun (even past `limit`: it was spent).
   * A no-op for a window already over.
   */
  settle(
    key: string,
    window: number,
    delta: number,
    options: { windowMs: number; id: string },
  ): MaybePromise<void>;
}
