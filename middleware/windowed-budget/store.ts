/**
 * The windowed budget's store seam: units used per key in fixed windows of the store's clock.
 * @module
 */

import type { MaybePromise } from '../../src/stores.js';

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
