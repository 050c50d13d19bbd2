/**
 * Timeout: gives each attempt a deadline, by tightening `ctx.limit` for the layers inside.
 * @module
 */

import { systemClock } from '../../src/clock.js';
import { trusted } from '../../src/internal/trusted.js';
import type { DeadlineClock, DispatchContext, Middleware, Next } from '../../src/types.js';
import { attemptLimitsOf } from '../internal-kit.js';
import { optionsObject, requireClock, requireNumber, untilLimitEnds, optionKeys } from '../kit.js';

/** Options for `timeout`. */
export interface TimeoutOptions {
  /**
   * The per-attempt timeout for tools without their own, in milliseconds; `Infinity` for none.
   * @default 30_000
   */
  defaultMs?: number;
  /** The time source and timers used; an injected clock has its timers set at once. @default systemClock */
  clock?: DeadlineClock;
}

const timeoutOptionKeys = optionKeys<TimeoutOptions>({ defaultMs: true, clock: true });

/** `timeout`'s options, checked, with their defaults. */
export interface TimeoutSettings {
  /** The per-attempt timeout for tools without their own, in milliseconds (`Infinity`: none). */
  readonly defaultMs: number;
  /** The time source and timers of the deadlines. */
  readonly clock: DeadlineClock;
}

/**
 * Checks `timeout`'s options and fills in their defaults: for a layer that takes the timeout's
 * place and gives each attempt the same static deadline (the autopilot, in `defaultStack`).
 *
 * @example
 * timeoutSettings({ defaultMs: 10_000 }); // { defaultMs: 10_000, clock: systemClock }
 */
export function timeoutSettings(options?: TimeoutOptions): TimeoutSettings {
  const { defaultMs = 30_000, clock = systemClock } = optionsObject('timeout', options, timeoutOptionKeys);
  requireNumber('defaultMs', defaultMs, 0, { exclusive: true, allowInfinity: true });
  requireClock(clock, ['now', 'setTimeout', 'clearTimeout']);
  return { defaultMs, clock };
}

/**
 * Gives each attempt its own deadline (the call's `timeoutMs`, else the tool's, else `defaultMs`);
 * when it passes, the attempt fails with `timeout` at once, whatever the handler (or a layer
 * between this one and the attempt) does. A tool with an idle `timeout: { idleMs, totalMs }` gets
 * a deadline its `ctx.progress` reports push back, never past `totalMs` (nor the call's
 * `timeoutMs`, which caps it).
 *
 * @example
 * createDispatcher([errorMapping(), toolLookup(registry), retry(), timeout({ defaultMs: 10_000 })]);
 */
export function timeout(options?: TimeoutOptions): Middleware {
  const { defaultMs, clock } = timeoutSettings(options);
  return trusted(function timeout(ctx: DispatchContext, next: Next): Promise<void> {
    const limits = attemptLimitsOf(ctx.options.timeoutMs, ctx.tool, defaultMs, clock);
    // Beyond a timer's range there is no fixed deadline.
    if (limits === undefined) return next();
    const restore = ctx.limit(limits);
    let running: Promise<void>;
    try {
      // The attempt ends at the deadline by itself; a layer of the user's between here and the
      // attempt may not, and would hold the call and its slots for ever.
      running = untilLimitEnds(ctx, next());
    } catch (error) {
      restore();
      return Promise.reject(error);
    }
    // One reaction, not an async function's frame: the limit is put back as the call settles.
    return running.then(restore, (error: unknown) => {
      restore();
      throw error;
    });
  });
}
