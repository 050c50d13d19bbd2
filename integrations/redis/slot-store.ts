/**
 * The fleet-wide slot store on Redis: a leased counting semaphore per pool, FIFO within the process.
 * @module
 */

import { DispatchError, isDispatchError } from '../../index.js';
import { optionKeys } from '../../middleware/index.js';
import { noop } from '../../middleware/internal-kit.js';
import type { SlotPermit, SlotStore, SlotWaiter } from '../../index.js';
import { storeUnavailable } from '../../src/stores.js';
import { num, renewableInTime, runScript } from './call.js';
import type { StoreClient } from './client.js';
import { hubFor } from './events.js';
import {
  newToken,
  requireChoice,
  requireClient,
  requireMs,
  requireOptions,
  requirePrefix,
} from './options.js';
import { acquireScript, loadSlotScript, releaseSlotScript, renewSlotScript } from './scripts.js';

/** Options for `redisSlotStore`. */
export interface RedisSlotStoreOptions {
  /** The pool's name: every process using the same prefix and pool shares its `max` permits. */
  pool: string;
  /** The most permits held at once across the fleet. */
  max: number;
  /**
   * The key namespace.
   * @default 'td'
   */
  prefix?: string;
  /**
   * How long a permit lasts without renewal, in milliseconds: how long a crashed holder keeps
   * its slot. Holders renew every third of it.
   * @default 10_000
   */
  leaseMs?: number;
  /**
   * Each store call's own deadline, in milliseconds.
   * @default 1_000
   */
  storeTimeoutMs?: number;
  /**
   * The longest the head waiter sleeps before it asks again without a pub/sub message.
   * @default 1_000
   */
  pollMs?: number;
  /**
   * When Redis cannot be reached: `'fail'` fails the call with `store_unavailable` (the fleet
   * cap holds); `'local'` grants a permit that only the process's own cap bounds (the fleet
   * cap becomes N × the local cap until Redis is back).
   * @default 'fail'
   */
  onStoreError?: 'fail' | 'local';
}

const redisSlotStoreOptionKeys = optionKeys<RedisSlotStoreOptions>({
  pool: true,
  max: true,
  prefix: true,
  leaseMs: true,
  storeTimeoutMs: true,
  pollMs: true,
  onStoreError: true,
});

class RedisPermit implements SlotPermit {
  released = false;
  readonly signal: AbortSignal;
  readonly #controller = new AbortController();

  constructor(
    readonly pool: string,
    readonly token: string,
    readonly renewEveryMs: number,
    /** performance.now() until which the permit surely holds; past it, it may be someone else's. */
    public endsAt: number,
    /** A permit granted while Redis was unreachable (`onStoreError: 'local'`): Redis never saw it. */
    readonly local: boolean,
  ) {
    this.signal = this.#controller.signal;
  }

  lose(why: string): void {
    if (this.#controller.signal.aborted) return;
    this.#controller.abort(
      new DispatchError('lease_lost', `The slot in pool "${this.pool}" was lost: ${why}`),
    );
  }
}

interface Queued {
  readonly waiter: SlotWaiter;
  settled: boolean;
}

/**
 * Makes a fleet-wide slot store on Redis: `max` permits in `pool` shared by every process,
 * each a lease on the server's clock (a killed holder's slot comes back when its lease ends).
 * Waiters queue first in, first out within the process; only the first of them asks Redis,
 * woken by pub/sub when a slot frees, or when the earliest lease ends.
 *
 * @example
 * const slots = redisSlotStore(redis, { pool: 'billing-api', max: 16 });
 * const dispatcher = createDispatcher(defaultStack({ registry, concurrency: { max: 8, store: slots } }));
 */
export function redisSlotStore(redis: StoreClient, options: RedisSlotStoreOptions): SlotStore {
  requireClient(redis, 'redisSlotStore');
  if (typeof options !== 'object' || options === null)
    throw new TypeError('redisSlotStore: options must be an object');
  requireOptions(options, 'redisSlotStore', redisSlotStoreOptionKeys);
  const { pool } = options;
  if (typeof pool !== 'string' || pool === '') throw new TypeError('pool must be a non-empty string');
  const max = requireMs('max', options.max, 1);
  const prefix = requirePrefix(options.prefix ?? 'td');
  const leaseMs = requireMs('leaseMs', options.leaseMs ?? 10_000);
  const timeoutMs = requireMs('storeTimeoutMs', options.storeTimeoutMs ?? 1_000);
  const pollMs = requireMs('pollMs', options.pollMs ?? 1_000);
  const onStoreError = requireChoice('onStoreError', options.onStoreError ?? 'fail', ['fail', 'local']);

  const channel = `${prefix}:ev`;
  const poolKey = `${prefix}:c:${pool}`;
  const queue: Queued[] = [];
  let pumping = false;
  let wake: (() => void) | undefined;
  // Counts wake-ups, so that one heard while an acquire was in flight (the reply and the
  // message travel on different connections) sends the pump straight back to Redis.
  let wakeups = 0;
  const hub = hubFor(redis, channel);
  const heard = () => {
    wakeups += 1;
    wake?.();
  };
  hub.listen((message) => {
    if (message === `c|${pool}`) heard();
  }, heard);

  const acquire = async (token: string): Promise<{ permit?: RedisPermit; retryInMs: number }> => {
    const sentAt = performance.now();
    try {
      const reply = await runScript(
        redis,
        acquireScript,
        [poolKey],
        [token, String(max), String(leaseMs)],
        timeoutMs,
      );
      if (num(reply, 0) !== 1) return { retryInMs: Math.max(1, num(reply, 1)) };
      const permit = new RedisPermit(pool, token, leaseMs / 3, sentAt + leaseMs, false);
      // Holding a permit heard too late could run more than max at once.
      if (renewableInTime(permit)) return { permit, retryInMs: 0 };
      void release(permit).catch(noop);
      return { retryInMs: 0 };
    } catch (error) {
      if (onStoreError === 'local')
        return { permit: new RedisPermit(pool, token, Infinity, Infinity, true), retryInMs: 0 };
      throw error;
    }
  };

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      timer.unref();
      function done() {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      }
      wake = done;
    });

  // Only the first waiter asks Redis; the others wait behind it in order.
  const pump = async () => {
    if (pumping) return;
    pumping = true;
    try {
      while (queue.length > 0) {
        const head = queue[0] as Queued;
        if (head.settled) {
          queue.shift();
          continue;
        }
        let answer: { permit?: RedisPermit; retryInMs: number };
        const seen = wakeups;
        try {
          answer = await acquire(newToken());
        } catch (error) {
          queue.shift();
          if (!head.settled) {
            head.settled = true;
            head.waiter.fail(
              isDispatchError(error) ? error : storeUnavailable(String(error), { cause: error }),
            );
          }
          continue;
        }
        const { permit } = answer;
        if (permit === undefined) {
          if (wakeups === seen) await sleep(Math.min(answer.retryInMs + 2, pollMs));
          continue;
        }
        // The waiter may have left while the script ran: the permit goes to the next one.
        const taker = queue.find((entry) => !entry.settled);
        if (taker === undefined) {
          void release(permit).catch(noop);
          continue;
        }
        taker.settled = true;
        queue.splice(queue.indexOf(taker), 1);
        taker.waiter.grant(permit);
      }
    } finally {
      pumping = false;
    }
  };

  const release = async (held: SlotPermit): Promise<void> => {
    const mine = held as RedisPermit;
    if (mine.released) return;
    mine.released = true;
    if (queue.length > 0) queueMicrotask(heard);
    if (mine.local) return;
    await runScript(redis, releaseSlotScript, [poolKey], [held.token, channel, pool], timeoutMs);
  };

  return {
    pool,
    max,
    tryAcquire: async (acquireOptions?: { token?: string }) => {
      if (queue.some((entry) => !entry.settled)) return undefined;
      return (await acquire(acquireOptions?.token ?? newToken())).permit;
    },
    enqueue: (waiter: SlotWaiter) => {
      const entry: Queued = { waiter, settled: false };
      queue.push(entry);
      void pump();
      return () => {
        if (entry.settled) return;
        entry.settled = true;
        const at = queue.indexOf(entry);
        if (at > 0) queue.splice(at, 1);
        // The head left: the pump stops sleeping on its behalf.
        else if (at === 0) wake?.();
      };
    },
    renew: async (held: SlotPermit) => {
      const mine = held as RedisPermit;
      if (mine.released) return false;
      if (mine.local) return true;
      const sentAt = performance.now();
      let reply: unknown;
      try {
        reply = await runScript(redis, renewSlotScript, [poolKey], [held.token, String(leaseMs)], timeoutMs);
      } catch (error) {
        if (performance.now() >= mine.endsAt) {
          mine.lose('it could not be renewed before it ended');
          return false;
        }
        throw error;
      }
      if (Number(reply) === 1) {
        mine.endsAt = sentAt + leaseMs;
        return true;
      }
      mine.lose('its lease ended before it was renewed');
      return false;
    },
    release,
    load: async () => {
      const running = Number(await runScript(redis, loadSlotScript, [poolKey], [], timeoutMs));
      return { running, queued: queue.filter((entry) => !entry.settled).length };
    },
  };
}
