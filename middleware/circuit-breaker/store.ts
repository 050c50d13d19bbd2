/**
 * The circuit breaker's store seam: a versioned record per circuit, a compare-and-set and a
 * failure window; the breaker keeps the state machine.
 * @module
 */

import type { MaybePromise } from '../../src/stores.js';

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
