/**
 * The state seam: where the layers keep what must outlive one call. Stores hold data and offer
 * atomic primitives; the layers keep the decisions. Every method may answer synchronously.
 * @module
 */

import { noop } from './internal/abort.js';
import { systemClock, type Clock } from './clock.js';
import { DispatchError, type OutcomeWindow } from './errors.js';

/** A value, or a promise of it: what every store method returns. */
export type MaybePromise<T> = T | Promise<T>;

/**
 * The content fingerprint of a call (tool name and args): equal exactly for the same call. It
 * crosses processes, so a deploy that changes the algorithm should change the key prefix too.
 */
export type StoreFingerprint = string;

/**
 * The failure a store reports when it cannot answer in time or at all (kind `store_unavailable`,
 * transient, never a breaker failure); the change may have been applied, and a resend is safe.
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

/** Something held only while renewed (a lead, a permit), ending on the store's clock. */
export interface StoreLease {
  /** The holder's random owner token; every write checks it, so resends are harmless. */
  readonly token: string;
  /** How often to renew, in ms (a third of the lease); `Infinity` when it never lapses (memory stores). */
  readonly renewEveryMs: number;
  /** Aborted with a `lease_lost` envelope once the store knows the lease is gone; abort the guarded work. */
  readonly signal: AbortSignal;
}

/**
 * Renews `lease` every `lease.renewEveryMs` until the returned function is called, on timers that
 * never keep the process alive; a renewal that throws is retried, one that answers `false` stops.
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
    if (stopped) return;
    handle = clock.setTimeout(tick, everyMs);
    (handle as { unref?: () => void } | undefined)?.unref?.();
  };
  const tick = () => {
    if (stopped) return;
    let answer: MaybePromise<boolean>;
    try {
      answer = renew();
    } catch {
      return schedule();
    }
    Promise.resolve(answer).then((kept) => (kept ? schedule() : stop()), schedule);
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
  /** Whether the handler or the tool's `reconcile` settled it. */
  readonly settledBy?: 'handler' | 'reconcile';
  /** What `reconcile` found, as it gave it, whatever its verdict. */
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
 * A counting semaphore of `max` permits in one named pool shared by every process using the
 * store: the concurrency layer's cap. Waiters queue first in, first out within a process; a
 * permit is a lease, so a crashed holder's slot comes back when its lease ends.
 */
export interface SlotStore {
  /** The pool's name. */
  readonly pool: string;
  /** The most permits held at once across the pool. */
  readonly max: number;
  /**
   * Takes a permit if one is free and nobody in this process waits; `undefined` otherwise.
   *
   * @param options.token - The owner token; a fresh random one by default.
   */
  tryAcquire(options?: { token?: string }): MaybePromise<SlotPermit | undefined>;
  /** Queues `waiter` for the next free permit; returns a function that leaves the queue. */
  enqueue(waiter: SlotWaiter): () => void;
  /** Extends the permit's lease; `false` when it is gone (the store aborts `permit.signal`). */
  renew(permit: SlotPermit): MaybePromise<boolean>;
  /** Gives the permit back (a no-op when already released or expired) to the next waiter. */
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

/** One circuit's record: plain data in the store's timebase (`CircuitView.now`). */
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
 * Where circuit breakers keep their circuits, shared by every process using the store: a
 * versioned record, a compare-and-set and a failure window; the breaker keeps the state machine.
 */
export interface CircuitStore {
  /** The circuit as the store sees it now. */
  read(key: string): MaybePromise<CircuitView>;
  /**
   * Writes `next` (deletes, for `undefined`) only when the record is still at `version`, and
   * clears the failure window; answers whether it wrote, with the view after.
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
  /** Adds `failureId` once to the key's window, drops those older than `windowMs`, answers the view. */
  addFailure(key: string, failureId: string, windowMs: number): MaybePromise<CircuitView>;
  /** The circuits this store knows of, for `snapshot()`. */
  entries(): MaybePromise<Iterable<readonly [string, CircuitView]>>;
}

// ---------------------------------------------------------------------------------------------
// Budget

/** A tool-call budget whose `tryConsume` may answer with a promise (`redisBudget` does). */
export interface StoreBudget {
  /** Units left, as last known; a hint. */
  readonly remaining: number;
  /** Units the budget started with. */
  readonly limit: number;
  /**
   * Takes `units` if that many are left and says whether it did, never overspending; rejects
   * with `store_unavailable` when the store cannot answer.
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
