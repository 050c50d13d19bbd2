/**
 * Idempotency: calls that share a key run the handler once, in flight and for a while after success.
 * This file holds the options and the factory; `keyed-calls.ts` shares each key's walk among
 * this process's callers, and `key-walk.ts` holds the claim loop, over the user's store or a
 * memory store of the layer's own.
 * @module
 */

import { systemClock, type Clock } from '../../src/clock.js';
import { optionKeys, optionsObject, requireInteger, requireNumber, requireClock } from '../kit.js';
import { trusted } from '../../src/internal/trusted.js';
import type { DispatchContext, Middleware, Next } from '../../src/types.js';
import type { IdempotencyStore, ReceiptStore } from './store.js';
import { memoryReceiptStore } from './receipts.js';
import { KeyedCalls } from './keyed-calls.js';
import { memoryIdempotencyStore, type MemoryIdempotencyStore } from './memory-store.js';

// The layer's events, merged into the core's DispatchEventDetails (kept in its declaration files).
export type {} from './events.js';

/** Options for `idempotency`. */
export interface IdempotencyOptions {
  /**
   * How long a success is served again after it completed, in milliseconds.
   * @default 60_000
   */
  ttlMs?: number;
  /**
   * The most successes kept; the oldest is evicted first beyond it.
   * @default 10_000
   */
  maxEntries?: number;
  /**
   * The time source for the TTL, and the timers that renew a store lease and pace the retries
   * of a completion (when it has `setTimeout` and `clearTimeout`).
   * @default systemClock
   */
  clock?: Pick<Clock, 'now'> & Partial<Pick<Clock, 'setTimeout' | 'clearTimeout'>>;
  /**
   * Where keys and successes live when they must be shared with other processes (e.g.
   * `redisIdempotencyStore`). Same-process callers of a key still share one execution in
   * memory, and only their leader talks to the store; `maxEntries` then does not apply (the
   * store bounds itself). A store that cannot answer before the handler runs fails the call
   * closed with `store_unavailable`.
   * @default a `memoryIdempotencyStore({ maxEntries })` of this layer's own
   * @example
   * idempotency({ ttlMs: 5 * 60_000, store: redisIdempotencyStore(redis, { prefix: 'billing' }) });
   */
  store?: IdempotencyStore;
  /**
   * Where each keyed execution leaves its receipt (`running`, then `succeeded`, `failed` or
   * `in_doubt`), e.g. a database an operator can query after a crash. A receipt in doubt keeps
   * the key from running again: the same key is `outcome_unknown` (or reconciled, for a tool
   * with `reconcile`).
   * @default the store's own `receipts`, else a `memoryReceiptStore()`
   * @example
   * idempotency({ store: redisIdempotencyStore(redis), receipts: memoryReceiptStore() });
   */
  receipts?: ReceiptStore;
}

const idempotencyOptionKeys = optionKeys<IdempotencyOptions>({
  ttlMs: true,
  maxEntries: true,
  clock: true,
  store: true,
  receipts: true,
});

/** What an idempotency layer holds right now. */
export interface IdempotencySize {
  /** Successes cached (expired ones not yet evicted included); 0 with a `store`, which keeps them. */
  cached: number;
  /** Keys whose execution is running. */
  inFlight: number;
}

/** The idempotency middleware, with a look at its cache. */
export interface IdempotencyLayer extends Middleware {
  /** How many successes are cached and how many keys are in flight right now. */
  size(): IdempotencySize;
}

/** @deprecated Use `IdempotencyLayer`. */
export type IdempotencyMiddleware = IdempotencyLayer;

/**
 * Deduplicates calls that carry the same `idempotencyKey` (the dispatcher never invents one).
 * A success is served again, without running the handler and with `attempts: 0`, until `ttlMs`
 * after it completed. A call whose key is in flight waits for that execution instead of taking a
 * concurrency slot, and gets its outcome. The in-flight entry exists from the moment the first
 * call enters this layer, so same-key calls never both run. Failures are not cached. The same
 * key with another tool or other args is an `idempotency_conflict`. A waiting caller that aborts
 * only detaches; the execution is aborted when every caller waiting on it has aborted.
 *
 * @example
 * createDispatcher([errorMapping(), toolLookup(registry), schemaValidation(),
 *   idempotency({ ttlMs: 5 * 60_000 }), concurrencyLimit(), retry(), timeout()]);
 */
export function idempotency(options?: IdempotencyOptions): IdempotencyLayer {
  const {
    ttlMs = 60_000,
    maxEntries = 10_000,
    clock = systemClock,
    store,
    receipts,
  } = optionsObject('idempotency', options, idempotencyOptionKeys);
  requireNumber('ttlMs', ttlMs, 0, { exclusive: true, allowInfinity: true });
  requireInteger('maxEntries', maxEntries, 1);
  requireClock(clock, ['now']);
  if (receipts !== undefined) {
    for (const method of ['get', 'record', 'list'] as const) {
      if (typeof (receipts as unknown as Record<string, unknown>)[method] !== 'function') {
        throw new TypeError(`receipts must be a ReceiptStore (missing ${method})`);
      }
    }
  }
  if (store !== undefined) {
    for (const method of ['claim', 'renew', 'complete', 'release', 'changed'] as const) {
      if (typeof (store as unknown as Record<string, unknown>)[method] !== 'function') {
        throw new TypeError(`store must be an IdempotencyStore (missing ${method})`);
      }
    }
  }
  const timers = hasTimers(clock) ? clock : systemClock;
  // Without a user's store, keys and successes live in a memory store, which answers at once.
  const local: MemoryIdempotencyStore | undefined =
    store === undefined
      ? memoryIdempotencyStore({ maxEntries, clock: hasTimers(clock) ? clock : withTimers(clock) })
      : undefined;
  // A store's TTL is finite: "for ever" is as long as a timer can count.
  const shared = store ?? (local as MemoryIdempotencyStore);
  const calls = new KeyedCalls(
    shared,
    receipts ?? shared.receipts ?? memoryReceiptStore(),
    Math.min(ttlMs, 2 ** 47),
    timers,
    () => clock.now(),
    store !== undefined,
  );
  const middleware = trusted(function idempotency(ctx: DispatchContext, next: Next): Promise<void> {
    const key = ctx.options.idempotencyKey;
    return key === undefined ? next() : calls.run(ctx, next, key);
  });
  return Object.assign(middleware, {
    size: () => ({ cached: local?.size().cached ?? 0, inFlight: calls.inFlight.size }),
  });
}

type LayerClock = NonNullable<IdempotencyOptions['clock']>;

function hasTimers(clock: LayerClock): clock is Clock {
  return typeof clock.setTimeout === 'function' && typeof clock.clearTimeout === 'function';
}

// The layer's clock, with the system's timers where it brings none.
function withTimers(clock: LayerClock): Clock {
  return {
    now: () => clock.now(),
    setTimeout: systemClock.setTimeout,
    clearTimeout: systemClock.clearTimeout,
  };
}
