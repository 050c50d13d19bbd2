/**
 * Time as the library sees it: injectable, and by default the globals that fake timers replace.
 * @module
 */

/** The time source and timers a middleware uses; inject one to control time in tests. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Schedules `callback` after `ms` milliseconds and returns a handle for `clearTimeout`. */
  setTimeout(callback: () => void, ms: number): unknown;
  /** Cancels a handle from `setTimeout`. */
  clearTimeout(handle: unknown): void;
}

/**
 * The real clock: `Date.now`, `setTimeout` and `clearTimeout`, looked up on each call so that
 * `vi.useFakeTimers()` installed after import still drives it.
 *
 * @example
 * const elapsed = systemClock.now() - startedAt;
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
