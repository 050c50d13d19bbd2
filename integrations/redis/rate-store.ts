/**
 * Token buckets on Redis for `rateLimit`: one script per reservation, cancel and debit, on the
 * server's clock, so a 429 seen by one worker slows the whole fleet.
 * @module
 */

import type { RateBucket, RateGrant, RateStore, WindowReservation, WindowStore } from '../../index.js';
import { storeUnavailable } from '../../src/stores.js';
import { num, runScript, text } from './call.js';
import type { StoreClient } from './client.js';
import { optionKeys } from '../../middleware/index.js';
import { newToken, requireClient, requireMs, requireOptions, requirePrefix } from './options.js';
import {
  rateAcquireScript,
  rateCancelScript,
  rateDebitScript,
  rateShiftScript,
  windowReserveScript,
  windowSettleScript,
} from './rate-scripts.js';

/** Options for `redisRateStore` and `redisWindowStore`. */
export interface RedisLimitStoreOptions {
  /**
   * The key namespace.
   * @default 'td'
   */
  prefix?: string;
  /**
   * Each store call's own deadline, in milliseconds.
   * @default 1_000
   */
  storeTimeoutMs?: number;
}

const redisLimitStoreOptionKeys = optionKeys<RedisLimitStoreOptions>({ prefix: true, storeTimeoutMs: true });

// Lua has no Infinity: a wait this long is as good as none allowed.
const longestMs = 1e12;

function settingsOf(redis: StoreClient, options: RedisLimitStoreOptions | undefined, factory: string) {
  requireClient(redis, factory);
  requireOptions(options, factory, redisLimitStoreOptionKeys);
  return {
    prefix: requirePrefix(options?.prefix ?? 'td'),
    timeoutMs: requireMs('storeTimeoutMs', options?.storeTimeoutMs ?? 1_000),
  };
}

// Which Redis life this process has seen ('' before its first answer): a different one means
// Redis came back empty.
class Epoch {
  known = '';
  readonly fresh = newToken();
}

/**
 * Makes a `RateStore` on Redis: every worker using the same `prefix` shares each key's bucket.
 * Acquire, cancel and debit are one script each, resend-safe by attempt id, timed by Redis
 * `TIME`. A bucket recreated after Redis restarted empty starts `maxWaitMs` in debt (for as long
 * again), so a restart never hands out a fresh burst. Pass it to `rateLimit({ store })`;
 * `onStoreError` decides what a call does when Redis cannot answer.
 *
 * @example
 * rateLimit({ key: (ctx) => `search:${ctx.options.tenant}`, rate: 5, store: redisRateStore(redis, { prefix: 'app' }) });
 */
export function redisRateStore(redis: StoreClient, options?: RedisLimitStoreOptions): RateStore {
  const { prefix, timeoutMs } = settingsOf(redis, options, 'redisRateStore');
  const epoch = new Epoch();
  const bucketKey = (key: string) => `${prefix}:rl:{${key}}`;
  const attemptKey = (key: string, id: string) => `${prefix}:rl:{${key}}:a:${id}`;
  const perToken = (bucket: RateBucket) => bucket.intervalMs / bucket.rate;
  return {
    async acquire(key, cost, bucket, { maxWaitMs, id }): Promise<RateGrant> {
      const burstMs = bucket.burst * perToken(bucket);
      const maxWait = Math.min(maxWaitMs, longestMs);
      const reply = await runScript(
        redis,
        rateAcquireScript,
        [bucketKey(key), `${prefix}:epoch`, `${prefix}:rl-reset`, attemptKey(key, id)],
        [
          epoch.known,
          epoch.fresh,
          id,
          String(cost),
          String(perToken(bucket)),
          String(burstMs),
          String(maxWait),
          String(burstMs + Math.min(maxWait, 60_000)),
        ],
        timeoutMs,
      );
      epoch.known = text(reply, 0);
      if (num(reply, 1) !== 1) return { granted: false, retryAfterMs: num(reply, 2) };
      const grant = { granted: true as const, waitMs: num(reply, 2), mark: num(reply, 3) };
      // A reservation answered again (the same id) says no fill: it is not a new reading.
      if (!Array.isArray(reply) || reply.length < 5) return grant;
      return { ...grant, fill: Math.min(1, Math.max(0, (burstMs - num(reply, 4)) / burstMs)) };
    },
    async cancel(key, cost, bucket, id) {
      await runScript(
        redis,
        rateCancelScript,
        [bucketKey(key), attemptKey(key, id)],
        [String(cost), String(perToken(bucket))],
        timeoutMs,
      );
    },
    async debit(key, retryAfterMs, bucket, id) {
      const burstMs = bucket.burst * perToken(bucket);
      await runScript(
        redis,
        rateDebitScript,
        [bucketKey(key), attemptKey(key, id)],
        [String(retryAfterMs), String(burstMs)],
        timeoutMs,
      );
    },
    async delayedSince(key, mark) {
      const shifted = Number(await runScript(redis, rateShiftScript, [bucketKey(key)], [], timeoutMs));
      return Math.max(0, shifted - mark);
    },
  };
}

/**
 * Makes a `WindowStore` on Redis for `windowedBudget`: every worker using the same `prefix`
 * shares each key's ledger, in fixed windows of Redis `TIME`. Reserve and settle are one script
 * each, resend-safe by attempt id; settle costs no round trip when the actual cost is the
 * reserved one. After Redis restarted empty, every reservation fails `store_unavailable` for one
 * window (the ledger it lost may have been spent): a budget fails closed.
 *
 * @example
 * windowedBudget({ key: (ctx) => ctx.options.tenant, limit: 10_000, windowMs: 86_400_000,
 *   store: redisWindowStore(redis, { prefix: 'app' }) });
 */
export function redisWindowStore(redis: StoreClient, options?: RedisLimitStoreOptions): WindowStore {
  const { prefix, timeoutMs } = settingsOf(redis, options, 'redisWindowStore');
  const epoch = new Epoch();
  const ledgerKey = (key: string) => `${prefix}:wb:{${key}}`;
  const attemptKey = (key: string, id: string) => `${prefix}:wb:{${key}}:a:${id}`;
  return {
    async reserve(key, units, { limit, windowMs, id }): Promise<WindowReservation> {
      const reply = await runScript(
        redis,
        windowReserveScript,
        [ledgerKey(key), `${prefix}:epoch`, `${prefix}:wb-reset`, attemptKey(key, id)],
        [
          epoch.known,
          epoch.fresh,
          id,
          String(units),
          String(Math.min(limit, Number.MAX_SAFE_INTEGER)),
          String(windowMs),
        ],
        timeoutMs,
      );
      epoch.known = text(reply, 0);
      const status = num(reply, 1);
      if (status === -1) {
        throw storeUnavailable(`Redis restarted empty: the budget "${key}" refuses until its window ends`, {
          retryAfterMs: num(reply, 2),
        });
      }
      return status === 1 ? { ok: true, window: num(reply, 2) } : { ok: false, retryAfterMs: num(reply, 2) };
    },
    async settle(key, window, delta, { id }) {
      await runScript(
        redis,
        windowSettleScript,
        [ledgerKey(key), attemptKey(key, id)],
        [String(window), String(delta)],
        timeoutMs,
      );
    },
  };
}
