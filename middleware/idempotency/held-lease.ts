/**
 * A lead's lease while this process holds it: renewed while the execution runs, watched from
 * the first renewal on, and said lost once.
 * @module
 */

import type { Clock } from '../../src/clock.js';
import type { IdempotencyLease, IdempotencyStore } from './store.js';
import type { DispatchContext } from '../../src/types.js';
import { keepLeaseAlive, onAbort } from '../kit.js';
import { noop } from '../internal-kit.js';

/** The lease of one lead of a key, with its renewals and whether it was found lost. */
export class HeldLease {
  #watching = false;
  #lostReported = false;
  #stopKeepingAlive: () => void = noop;

  constructor(
    /** The lease the store gave this lead. */
    readonly lease: IdempotencyLease,
    private readonly ctx: DispatchContext,
  ) {}

  /**
   * Whether a renewal has begun to watch the lease. A store aborts a lease's signal only when a
   * renewal or the completion finds it gone, so it is watched from the first renewal on: a call
   * shorter than a renewal period never makes the store build that signal.
   */
  get watching(): boolean {
    return this.#watching;
  }

  /** Whether a renewal found the lease lost. */
  get lost(): boolean {
    return this.#watching && this.lease.signal.aborted;
  }

  /**
   * Renews a lease that can lapse while the execution runs, and answers the signal that
   * execution runs under: aborted when `walk` aborts or the lease is lost. Answers `undefined`
   * for a lease that never lapses.
   */
  keepAlive(
    walk: AbortSignal,
    store: IdempotencyStore,
    timers: Pick<Clock, 'setTimeout' | 'clearTimeout'>,
  ): AbortSignal | undefined {
    const { lease } = this;
    if (!(lease.renewEveryMs < Infinity)) return undefined;
    const execution = new AbortController();
    const offWalk = onAbort(walk, () => execution.abort(walk.reason));
    let offLost = noop;
    const renew = () => {
      if (!this.#watching) {
        this.#watching = true;
        offLost = onAbort(lease.signal, () => {
          this.reportLost();
          execution.abort(lease.signal.reason);
        });
      }
      return store.renew(lease);
    };
    const stopRenewing = keepLeaseAlive(lease, renew, timers);
    this.#stopKeepingAlive = () => {
      stopRenewing();
      offWalk();
      offLost();
    };
    return execution.signal;
  }

  /**
   * Whether a step that ran with the lease unrenewed for `unrenewedMs` (a reconcile, a receipt
   * lookup) may have outlived it: past a renewal period it may have lapsed, and another process
   * may have led the key and run it meanwhile. A lease that never lapses never has.
   */
  mayHaveLapsed(unrenewedMs: number): boolean {
    return unrenewedMs >= this.lease.renewEveryMs;
  }

  /** Stops the renewals and the watches `keepAlive` started. */
  stopKeepingAlive(): void {
    this.#stopKeepingAlive();
    this.#stopKeepingAlive = noop;
  }

  /** Says once that the lease was lost, when the store has said so. */
  reportLost(): void {
    if (this.#lostReported || !this.lease.signal.aborted) return;
    this.#lostReported = true;
    this.ctx.emit('idempotency.lease_lost', { key: this.lease.key, fence: this.lease.fence });
  }
}
