// Timeout: bounds each attempt, aborting the handler's signal when the time is up.

import { systemClock, type Clock } from '../src/clock.js';
import { DispatchError } from '../src/errors.js';
import { maxTimerDelayMs, onAbort } from '../src/internal/abort.js';
import { AttemptAbort, abortSourceOf, hasLazySignal } from '../src/internal/attempt-abort.js';
import { cancelled } from '../src/internal/failures.js';
import { trusted } from '../src/internal/trusted.js';
import { optionsObject, requireNumber } from '../src/internal/options.js';
import type { DispatchContext, Middleware, Next } from '../src/types.js';

/** Options for `timeout`. */
export interface TimeoutOptions {
  /**
   * The per-attempt timeout for tools without their own, in milliseconds; `Infinity` for none.
   * @default 30_000
   */
  defaultMs?: number;
  /**
   * The timers used.
   * @default systemClock
   */
  clock?: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
}

/**
 * Gives each attempt its own deadline: the call's `timeoutMs`, else the tool's, else
 * `defaultMs`. When it passes, the attempt's signal is aborted, `dispatch.timeout` is emitted and
 * the attempt fails with `timeout` at once, whatever the handler does; its late outcome is
 * ignored. A caller abort ends the attempt at once with `cancelled`. Deadlines beyond a Node
 * timer's range (about 24.8 days) count as none.
 *
 * @example
 * createDispatcher([errorMapping(), toolLookup(registry), retry(), timeout({ defaultMs: 10_000 })]);
 */
export function timeout(options?: TimeoutOptions): Middleware {
  const { defaultMs = 30_000, clock = systemClock } = optionsObject('timeout', options);
  requireNumber('defaultMs', defaultMs, 0, { exclusive: true, allowInfinity: true });
  if (typeof clock?.setTimeout !== 'function' || typeof clock.clearTimeout !== 'function') {
    throw new TypeError('clock must have setTimeout() and clearTimeout() methods');
  }

  return trusted(function timeout(ctx: DispatchContext, next: Next): Promise<void> {
    const ms = ctx.options.timeoutMs ?? ctx.tool?.timeoutMs ?? defaultMs;
    if (ms > maxTimerDelayMs) return next();
    const source = abortSourceOf(ctx);
    const parent = source instanceof AttemptAbort ? source.signal : source;
    if (parent.aborted) return Promise.reject(cancelled(ctx, parent));
    const attempt = new AttemptAbort();
    const lazy = hasLazySignal(ctx);
    if (lazy) ctx.setAttemptAbort(attempt);
    else ctx.signal = attempt.signal;

    return new Promise<void>((resolve, reject) => {
      let finished = false;
      // Runs once: a late settlement must not touch the signal of the attempt that followed.
      const finish = () => {
        if (finished) return;
        finished = true;
        clock.clearTimeout(timer);
        unsubscribe();
        if (!lazy) ctx.signal = parent;
        else if (source instanceof AttemptAbort) ctx.setAttemptAbort(source);
        else ctx.setAttemptAbort(undefined);
      };
      const timer = clock.setTimeout(() => {
        finish();
        const error = new DispatchError(
          'timeout',
          `"${ctx.toolName}" timed out after ${ms} ms (attempt ${ctx.attempt})`,
          { attempts: ctx.attempt },
        );
        ctx.emit('dispatch.timeout', { timeoutMs: ms });
        reject(error);
        attempt.abort(error);
      }, ms);
      const unsubscribe = onAbort(parent, () => {
        finish();
        reject(cancelled(ctx, parent));
        attempt.abort(parent.reason);
      });
      next().then(
        () => {
          finish();
          resolve();
        },
        (error: unknown) => {
          finish();
          reject(error);
        },
      );
    });
  });
}
