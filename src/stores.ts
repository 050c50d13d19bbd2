/**
 * The state seam's shared plumbing: what every store answers (`MaybePromise`), leases and their
 * renewal, the `store_unavailable` failure, and the budget the engine charges. Each layer's store
 * contract lives beside the layer (`middleware/<layer>/store.ts`).
 * @module
 */

import { noop } from './internal/abort.js';
import { systemClock, type Clock } from './clock.js';
import { DispatchError } from './errors.js';

/** A value, or a promise of it: what every store method returns. */
export type MaybePromise<T> = T | Promise<T>;

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
