/**
 * A tool-call budget on Redis: one atomic take per attempt, shared by every worker, never below zero.
 * @module
 */

import { storeUnavailable, type StoreBudget } from '../../src/stores.js';
import { num, runScript } from './call.js';
import type { StoreClient } from './client.js';
import { optionKeys } from '../../middleware/index.js';
import { newToken, requireClient, requireMs, requireOptions, requirePrefix } from './options.js';
import { createBudgetScript, takeBudgetScript } from './scripts.js';

/** Options for `redisBudget`. */
export interface RedisBudgetOptions {
  /** The budget's id (a run id, a conversation id): every worker passing it shares one budget. */
  id: string;
  /** Attempts allowed in all, across every worker. The first worker to create the budget sets it. */
  limit: number;
  /**
   * The key namespace.
   * @default 'td'
   */
  prefix?: string;
  /**
   * How long the budget lives in Redis after it was created, in milliseconds.
   * @default 86_400_000
   */
  ttlMs?: number;
  /**
   * Each store call's own deadline, in milliseconds.
   * @default 1_000
   */
  storeTimeoutMs?: number;
}

const redisBudgetOptionKeys = optionKeys<RedisBudgetOptions>({
  id: true,
  limit: true,
  prefix: true,
  ttlMs: true,
  storeTimeoutMs: true,
});

/**
 * Creates (or joins) a tool-call budget in Redis and resolves to a `Budget` whose `tryConsume`
 * is one resend-safe script per attempt: atomic across workers, never overspent. When Redis
 * cannot answer, or the budget is gone (Redis restarted empty, or `ttlMs` passed), a take
 * fails with `store_unavailable`: a budget fails closed. `remaining` is the last count Redis
 * reported, a hint.
 *
 * @example
 * const budget = await redisBudget(redis, { id: runId, limit: 50 });
 * await dispatcher.dispatch('search.web', { query: 'x' }, { budget });
 */
export async function redisBudget(redis: StoreClient, options: RedisBudgetOptions): Promise<StoreBudget> {
  requireClient(redis, 'redisBudget');
  if (typeof options !== 'object' || options === null)
    throw new TypeError('redisBudget: options must be an object');
  requireOptions(options, 'redisBudget', redisBudgetOptionKeys);
  const { id } = options;
  if (typeof id !== 'string' || id === '') throw new TypeError('id must be a non-empty string');
  const requested = requireMs('limit', options.limit, 0);
  const prefix = requirePrefix(options.prefix ?? 'td');
  const ttlMs = requireMs('ttlMs', options.ttlMs ?? 86_400_000);
  const timeoutMs = requireMs('storeTimeoutMs', options.storeTimeoutMs ?? 1_000);
  const key = `${prefix}:u:${id}`;

  const created = await runScript(
    redis,
    createBudgetScript,
    [key],
    [String(requested), String(ttlMs)],
    timeoutMs,
  );
  let remaining = num(created, 0);
  const limit = num(created, 1);

  return {
    get remaining() {
      return remaining;
    },
    get limit() {
      return limit;
    },
    async tryConsume(units = 1, attemptId?: string) {
      if (typeof units !== 'number' || !Number.isInteger(units) || units < 1) {
        throw new TypeError(`units must be an integer >= 1, got ${String(units)}`);
      }
      const reply = await runScript(
        redis,
        takeBudgetScript,
        [key],
        [attemptId ?? newToken(), String(units)],
        timeoutMs,
      );
      const status = num(reply, 0);
      if (status === -1) {
        remaining = 0;
        throw storeUnavailable(`The budget "${id}" is gone from Redis (restarted empty, or past its ttlMs)`);
      }
      remaining = num(reply, 1);
      return status === 1;
    },
  };
}
