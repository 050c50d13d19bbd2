/**
 * Rate limit: a token bucket per key in front of each attempt; an attempt reserves its tokens,
 * waits its turn (FIFO per key) or is refused at once, and a backend's 429 empties the bucket.
 * @module
 */

import { DispatchError, isDispatchError } from '../../src/errors.js';
import { trusted } from '../../src/internal/trusted.js';
import { systemClock, type Clock } from '../../src/clock.js';
import type { RateBucket, RateGrant, RateStore } from './store.js';
import type { DispatchContext, Middleware, Next } from '../../src/types.js';
import {
  cancelled,
  optionKeys,
  optionsObject,
  raceAbort,
  requireClock,
  requireFunction,
  requireNumber,
  sleep,
  storeUnavailable,
} from '../kit.js';
import { answeredAtOnce, attemptTimeoutMs, callNext, noop } from '../internal-kit.js';
import { MemoryRateStore } from './memory-store.js';

// The layer's events, merged into the core's DispatchEventDetails (kept in its declaration files).
export type {} from './events.js';

/** Options for `rateLimit`. */
export interface RateLimitOptions {
  /**
   * The bucket a call draws from: a tool, a backend, a tenant (`ctx.options.tenant`).
   * @default the tool's name
   */
  key?: (ctx: DispatchContext) => string;
  /** Tokens added per `intervalMs`, continuously. */
  rate: number;
  /**
   * The refill interval, in milliseconds.
   * @default 1_000
   */
  intervalMs?: number;
  /**
   * The most tokens the bucket holds: how many attempts may start at once after a quiet spell.
   * @default rate
   */
  burst?: number;
  /**
   * Tokens one attempt takes: a number, or a function of the parsed args and the context.
   * @default 1
   */
  cost?: number | ((args: unknown, ctx: DispatchContext) => number);
  /**
   * The longest an attempt waits for its tokens (never longer than its own timeout); a longer
   * wait is refused at once with `rate_limited` and `retryAfterMs`.
   * @default 5_000
   */
  maxWaitMs?: number;
  /**
   * Where the buckets live: this process (`memoryRateStore`), or a fleet (`redisRateStore`).
   * @default a memory store of this layer's own
   */
  store?: RateStore;
  /**
   * When the store cannot answer: `'fail'` fails the attempt `store_unavailable`, `'open'` lets
   * it through unlimited.
   * @default 'fail'
   */
  onStoreError?: 'fail' | 'open';
  /**
   * The timers waits sleep on, and the memory store's clock.
   * @default systemClock
   */
  clock?: Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>;
}

const rateLimitOptionKeys = optionKeys<RateLimitOptions>({
  key: true,
  rate: true,
  intervalMs: true,
  burst: true,
  cost: true,
  maxWaitMs: true,
  store: true,
  onStoreError: true,
  clock: true,
});

/**
 * Limits how fast attempts start, per key: a token bucket of `rate` tokens per `intervalMs`, up
 * to `burst`. An attempt reserves `cost` tokens and waits for them in FIFO order (emitting
 * `rate_limit.wait`), at most `maxWaitMs` and its own timeout; a longer wait, or a cost above
 * `burst`, is refused at once with `rate_limited` (never a breaker failure), the handler not run.
 * An abort while waiting gives the tokens back. An attempt failing with `retryAfterMs` (a 429:
 * `classifyRateLimit`) empties its key's bucket until then (`rate_limit.debit`), so every
 * sibling call waits too instead of finding the 429 again. Sits inside `retry`.
 *
 * @example
 * createDispatcher([errorMapping(), toolLookup(registry), retry(),
 *   rateLimit({ key: () => 'search-api', rate: 5, intervalMs: 1_000 })]);
 */
export function rateLimit(options: RateLimitOptions): Middleware {
  const limiter = new RateLimiter(checkOptions(options));
  return trusted(function rateLimit(ctx: DispatchContext, next: Next): Promise<void> {
    return limiter.run(ctx, next);
  });
}

interface Settings {
  readonly key: ((ctx: DispatchContext) => string) | undefined;
  readonly bucket: RateBucket;
  readonly cost: number | ((args: unknown, ctx: DispatchContext) => number);
  readonly maxWaitMs: number;
  readonly store: RateStore;
  readonly onStoreError: 'fail' | 'open';
  readonly clock: Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>;
}

function checkOptions(options: RateLimitOptions): Settings {
  const given = optionsObject('rateLimit', options, rateLimitOptionKeys);
  const { key, rate, intervalMs = 1_000, cost = 1, maxWaitMs = 5_000, store, onStoreError = 'fail' } = given;
  const { clock = systemClock } = given;
  if (key !== undefined) requireFunction('key', key);
  requireNumber('rate', rate, 0, { exclusive: true });
  requireNumber('intervalMs', intervalMs, 0, { exclusive: true });
  const { burst = rate } = given;
  requireNumber('burst', burst, 0, { exclusive: true });
  requireNumber('maxWaitMs', maxWaitMs, 0, { allowInfinity: true });
  if (typeof cost === 'number') {
    requireNumber('cost', cost, 0);
    if (cost > burst) throw new TypeError(`cost must be at most burst (${burst}), got ${cost}`);
  } else requireFunction('cost', cost);
  if (onStoreError !== 'fail' && onStoreError !== 'open') {
    throw new TypeError(`onStoreError must be 'fail' or 'open', got ${String(onStoreError)}`);
  }
  requireClock(clock, ['now', 'setTimeout', 'clearTimeout']);
  if (store !== undefined) {
    for (const method of ['acquire', 'cancel', 'debit', 'delayedSince'] as const) {
      if (typeof (store as unknown as Record<string, unknown>)[method] !== 'function') {
        throw new TypeError(`store must be a RateStore (missing ${method})`);
      }
    }
  }
  return {
    key,
    bucket: { rate, intervalMs, burst },
    cost,
    maxWaitMs,
    store: store ?? new MemoryRateStore(clock),
    onStoreError,
    clock,
  };
}

let limiters = 0;

class RateLimiter {
  readonly #settings: Settings;
  readonly #prefix = `r${++limiters}.${Math.random().toString(36).slice(2, 10)}.`;
  #attempts = 0;

  constructor(settings: Settings) {
    this.#settings = settings;
  }

  run(ctx: DispatchContext, next: Next): Promise<void> {
    let key: string;
    let id: string;
    let taking: Promise<void> | undefined;
    try {
      key = this.#keyOf(ctx);
      const cost = this.#costOf(ctx);
      const { bucket, maxWaitMs } = this.#settings;
      if (cost > bucket.burst) {
        throw refused(ctx, key, undefined, `it costs ${cost} tokens, above the burst of ${bucket.burst}`);
      }
      id = this.#prefix + ++this.#attempts;
      // A wait never outlasts the attempt's own timeout: the call's, else its tool's (an idle
      // tool's total).
      const allowedMs = Math.min(maxWaitMs, attemptTimeoutMs(ctx.options.timeoutMs, ctx.tool, Infinity));
      taking = this.#take(ctx, key, cost, id, allowedMs);
    } catch (error) {
      return Promise.reject(error);
    }
    const attempt = (): Promise<void> =>
      callNext(next).then(undefined, (error: unknown) => this.#debitAndThrow(ctx, key, id, error));
    // Tokens a memory store grants at once let the attempt start in the same turn.
    return taking === undefined ? attempt() : taking.then(attempt);
  }

  // Reserves the tokens, then waits its turn for them; `undefined` when they were granted at once.
  #take(
    ctx: DispatchContext,
    key: string,
    cost: number,
    id: string,
    allowedMs: number,
  ): Promise<void> | undefined {
    const { store, bucket } = this.#settings;
    let answer: RateGrant | PromiseLike<RateGrant>;
    try {
      answer = store.acquire(key, cost, bucket, { maxWaitMs: allowedMs, id });
    } catch (error) {
      return this.#storeFailed(error, key);
    }
    const now = answeredAtOnce(answer);
    if (now !== undefined && !ctx.signal.aborted) return this.#granted(ctx, key, cost, id, allowedMs, now);
    return this.#takeLater(ctx, key, cost, id, allowedMs, answer);
  }

  async #takeLater(
    ctx: DispatchContext,
    key: string,
    cost: number,
    id: string,
    allowedMs: number,
    pending: RateGrant | PromiseLike<RateGrant>,
  ): Promise<void> {
    const { signal } = ctx;
    let abandoned = false;
    let grant: RateGrant;
    try {
      const answer = Promise.resolve(pending);
      grant = await raceAbort(answer, signal, () => {
        abandoned = true;
        // Tokens granted to a caller who has left go back.
        answer.then((late) => {
          if (late.granted) void this.#giveBack(key, cost, id);
        }, noop);
        return cancelled(ctx, signal);
      });
    } catch (error) {
      if (abandoned) throw error;
      return this.#storeFailed(error, key);
    }
    await this.#granted(ctx, key, cost, id, allowedMs, grant);
  }

  // What the store answered: a refusal, or the tokens, then the wait for them if there is one.
  #granted(
    ctx: DispatchContext,
    key: string,
    cost: number,
    id: string,
    allowedMs: number,
    grant: RateGrant,
  ): Promise<void> | undefined {
    if (!grant.granted) {
      throw refused(ctx, key, grant.retryAfterMs, `the wait of ${grant.retryAfterMs} ms is too long`);
    }
    if (grant.fill !== undefined)
      ctx.emit('rate_limit.granted', { key, waitMs: grant.waitMs, fill: grant.fill });
    if (grant.waitMs > 0)
      return this.#wait(ctx, key, cost, id, grant.waitMs, grant.mark, allowedMs - grant.waitMs);
    return undefined;
  }

  // A debit on a shared store is written before the failure is answered, so a sibling
  // dispatched next already finds the bucket empty.
  async #debitAndThrow(ctx: DispatchContext, key: string, id: string, error: unknown): Promise<never> {
    await this.#debit(ctx, key, id, error);
    throw error;
  }

  // A backend's 429 (a `transient` failure with `retryAfterMs`) empties the key's bucket until then.
  async #debit(ctx: DispatchContext, key: string, id: string, error: unknown): Promise<void> {
    if (!isDispatchError(error) || error.kind !== 'transient') return;
    const retryAfterMs = error.retryAfterMs;
    if (retryAfterMs === undefined || !(retryAfterMs > 0)) return;
    ctx.emit('rate_limit.debit', { key, retryAfterMs });
    try {
      await this.#settings.store.debit(key, retryAfterMs, this.#settings.bucket, id);
    } catch {
      // A debit that cannot be written leaves the bucket as it was: siblings may find the 429 too.
    }
  }

  // Sleeps `waitMs`, then as long again as 429s seen meanwhile moved the bucket back.
  async #wait(
    ctx: DispatchContext,
    key: string,
    cost: number,
    id: string,
    waitMs: number,
    mark: number,
    leftMs: number,
  ): Promise<void> {
    const { clock } = this.#settings;
    const { signal } = ctx;
    try {
      for (;;) {
        ctx.emit('rate_limit.wait', { key, waitMs });
        await sleep(waitMs, signal, clock, () => cancelled(ctx, signal));
        const later = await this.#delayedSince(ctx, key, mark);
        if (!(later > 0)) return;
        if (later > leftMs) throw refused(ctx, key, later, `the backend asked to wait ${later} ms more`);
        mark += later;
        leftMs -= later;
        waitMs = later;
      }
    } catch (error) {
      void this.#giveBack(key, cost, id);
      throw error;
    }
  }

  // How far 429s moved the bucket since `mark`; 0 when the store cannot say and may be bypassed.
  async #delayedSince(ctx: DispatchContext, key: string, mark: number): Promise<number> {
    const { signal } = ctx;
    try {
      const later = Promise.resolve(this.#settings.store.delayedSince(key, mark));
      return await raceAbort(later, signal, () => cancelled(ctx, signal));
    } catch (error) {
      if (signal.aborted) throw error;
      this.#storeFailed(error, key);
      return 0;
    }
  }

  async #giveBack(key: string, cost: number, id: string): Promise<void> {
    try {
      await this.#settings.store.cancel(key, cost, this.#settings.bucket, id);
    } catch {
      // The reservation lapses with the bucket's refill.
    }
  }

  #storeFailed(error: unknown, key: string): undefined {
    if (this.#settings.onStoreError === 'open') return undefined;
    throw isDispatchError(error)
      ? error
      : storeUnavailable(`The rate limit "${key}" could not be checked`, { cause: error });
  }

  #keyOf(ctx: DispatchContext): string {
    const keyOf = this.#settings.key;
    if (keyOf === undefined) return ctx.tool?.name ?? ctx.toolName;
    const key: unknown = keyOf(ctx);
    if (typeof key === 'string' && key.length > 0) return key;
    throw new DispatchError('internal', `rateLimit key must answer a non-empty string, got ${String(key)}`, {
      attempts: ctx.attempt,
    });
  }

  #costOf(ctx: DispatchContext): number {
    const { cost } = this.#settings;
    if (typeof cost === 'number') return cost;
    let value: unknown;
    try {
      value = cost(ctx.args, ctx);
    } catch (error) {
      value = error instanceof Error ? `an error (${error.message})` : error;
    }
    if (typeof value === 'number' && value >= 0 && Number.isFinite(value)) return value;
    throw new DispatchError(
      'internal',
      `rateLimit cost must answer a finite number >= 0, got ${String(value)}`,
      {
        attempts: ctx.attempt,
      },
    );
  }
}

function refused(
  ctx: DispatchContext,
  key: string,
  retryAfterMs: number | undefined,
  why: string,
): DispatchError {
  ctx.emit('rate_limit.refused', retryAfterMs === undefined ? { key } : { key, retryAfterMs });
  return new DispatchError('rate_limited', `"${ctx.displayName}" is rate limited (${key}): ${why}`, {
    attempts: ctx.attempt,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });
}
