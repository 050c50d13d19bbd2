/**
 * The autopilot's state seam: where a retry budget keeps its ledger (and, on a fleet, where tools'
 * latency windows meet), so that every process sharing a store shares one budget.
 *
 * ## The retry budget's ledger
 *
 * A key's ledger is a list of signed amounts in integer units (a token is `retryBudgetUnit`
 * units, so sums are exact): a first attempt deposits `ratio` of a token, a retry withdraws one.
 * An amount counts while the slice of the store's clock it fell in is one of the ten latest
 * slices of `ttlMs / 10` (so for between 0.9 and 1 × `ttlMs`: Finagle's windowed adder). The
 * balance is `reserve` (`minPerSecond × ttlMs / 1000` tokens, always there) plus the amounts
 * that count; a withdrawal succeeds only if the balance covers it, and then it counts against
 * the balance for `ttlMs` like a deposit does for it.
 *
 * ## Round trips (the issue's rule: one per retry at most, none on a first attempt that succeeds)
 *
 * `deposit` is synchronous and returns nothing: a remote store must not wait on the network for
 * it. It adds the amount to a local tally per key and slice and sends the tally later, either with
 * the next `withdraw` of the key (one script that first adds the tally, then checks and takes) or
 * on a timer (`INCRBY` into the slice's key, say every 100 ms, unref'd). So a first attempt costs
 * no round trip, and a retry costs the one `withdraw`. Deposits not sent yet are invisible to
 * other processes until they are (at most the flush interval): a budget is statistical, and that
 * delay only makes a retry storm's first retries a little stricter.
 *
 * On Redis: one key per budget key and slice (`{prefix}:rb:{key}:{slice}`, expiring after
 * `ttlMs + ttlMs / 10`), slices numbered on the server's `TIME`; `withdraw` is one `EVAL` that
 * adds the pending tally, sums the ten latest slices, and takes `units` from the current one if
 * `reserve + sum ≥ units`. A resent `withdraw` (same `id`) must not take twice (a `SET NX` on the
 * id, expiring with the slice).
 * @module
 */

import type { MaybePromise } from '../../src/stores.js';
import type { LatencySketchData } from './latency-sketch.js';

/** Units per token in a retry budget's ledger: amounts are integers, so sums are exact. */
export const retryBudgetUnit = 1_000_000;

/** Slices a retry budget's `ttlMs` is cut into: an amount leaves the ledger one slice at a time. */
export const retryBudgetSlices = 10;

/** The shape of a retry budget's ledger, sent with every call: a store keeps no configuration. */
export interface RetryBudgetWindow {
  /** How long a deposit or a withdrawal counts, in milliseconds (Finagle: 10 s). */
  readonly ttlMs: number;
  /** Units always available over any `ttlMs`: `minPerSecond × ttlMs / 1000` tokens. */
  readonly reserve: number;
}

/**
 * Where retry budgets keep their ledgers, one per key, shared by every process using the store
 * (see the module's notes for the ledger's rules and the round trips each method may cost).
 */
export interface RetryBudgetStore {
  /**
   * Adds `units` to `key`'s ledger. Runs on every first attempt, so it answers at once and does
   * no I/O on the caller's path: a remote store tallies it locally and sends it with the next
   * `withdraw` or on a timer.
   */
  deposit(key: string, units: number, window: RetryBudgetWindow): void;
  /**
   * Takes `units` from `key`'s ledger if its balance covers them, and says whether it did: one
   * atomic step, at most one round trip (which also carries the deposits not sent yet). Safe to
   * resend with the same `id`.
   */
  withdraw(
    key: string,
    units: number,
    window: RetryBudgetWindow & { readonly id: string },
  ): MaybePromise<boolean>;
  /** `key`'s balance in units: the reserve plus every amount that still counts (a hint). */
  balance(key: string, window: RetryBudgetWindow): MaybePromise<number>;
}

/**
 * Where an autopilot keeps what its processes share: the retry budget's ledger and, on a fleet,
 * the tools' latency windows.
 */
export interface AutopilotStore extends RetryBudgetStore {
  /**
   * Adds this process's latency counts for `tool` since its last exchange (`delta`) to the
   * fleet's window of `tool`, and answers that window merged: how a fleet tunes on every worker's
   * calls. Called off the call path, at most every so often per tool (one round trip each), never
   * per call. Optional: without it, each process tunes on its own calls.
   */
  exchangeSketch?(
    tool: string,
    delta: LatencySketchData,
    window: { readonly windowMs: number; readonly subWindows: number },
  ): MaybePromise<LatencySketchData>;
}
