/**
 * Idempotency: calls that share a key run the handler once, in flight and for a while after success.
 * @module
 */

import { systemClock, type Clock } from '../../src/clock.js';
import { DispatchError, isDispatchError, toDispatchError } from '../../src/errors.js';
import {
  neverAborted,
  onAbort,
  raceAbort,
  cancelled,
  optionsObject,
  requireInteger,
  requireNumber,
  requireClock,
} from '../kit.js';
import { fingerprint, type Fingerprint } from './fingerprint.js';
import { SuccessCache } from './success-cache.js';
import { trusted } from '../../src/internal/trusted.js';
import type { DispatchContext, Middleware, Next } from '../../src/types.js';
import {
  keepLeaseAlive,
  storeUnavailable,
  type IdempotencyLease,
  type IdempotencyStore,
  type MaybePromise,
} from '../../src/stores.js';

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
   * @default undefined (successes cached in this process)
   * @example
   * idempotency({ ttlMs: 5 * 60_000, store: redisIdempotencyStore(redis, { prefix: 'billing' }) });
   */
  store?: IdempotencyStore;
}

/** What an idempotency layer holds right now. */
export interface IdempotencySize {
  /** Successes cached (expired ones not yet evicted included); 0 with a `store`, which keeps them. */
  cached: number;
  /** Keys whose execution is running. */
  inFlight: number;
}

/** The idempotency middleware, with a look at its cache. */
export interface IdempotencyMiddleware extends Middleware {
  /** How many successes are cached and how many keys are in flight right now. */
  size(): IdempotencySize;
}

type Settlement = { ok: true; result: unknown } | { ok: false; error: DispatchError };

/** An execution of a key and the callers in this process waiting on it. */
class Waited<S> {
  // Callers still waiting, the leader included; the execution is aborted when it reaches 0.
  waiters = 1;
  settled = false;
  readonly controller: AbortController | undefined;
  readonly done: Promise<S>;
  settle!: (settlement: S) => void;

  constructor(
    readonly fingerprint: Fingerprint,
    abortable: boolean,
  ) {
    this.controller = abortable ? new AbortController() : undefined;
    this.done = new Promise((resolve) => {
      this.settle = (settlement) => {
        this.settled = true;
        resolve(settlement);
      };
    });
  }
}

/** One shared execution and the callers waiting on it. */
class Flight extends Waited<Settlement> {
  abandoned = false;

  /** Says whether that was the last waiter, in which case the execution is abandoned. */
  detach(reason: unknown): boolean {
    this.waiters -= 1;
    if (this.waiters > 0 || this.settled) return false;
    this.controller?.abort(reason);
    return true;
  }
}

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
export function idempotency(options?: IdempotencyOptions): IdempotencyMiddleware {
  const {
    ttlMs = 60_000,
    maxEntries = 10_000,
    clock = systemClock,
    store,
  } = optionsObject('idempotency', options);
  requireNumber('ttlMs', ttlMs, 0, { exclusive: true, allowInfinity: true });
  requireInteger('maxEntries', maxEntries, 1);
  requireClock(clock, ['now']);
  if (store !== undefined) return storeBacked(store, ttlMs, clock);

  const cache = new SuccessCache(ttlMs, maxEntries, clock.now());
  const inFlight = new Map<string, Flight>();

  const lead = async (ctx: DispatchContext, next: Next, key: string, print: Fingerprint) => {
    const callerSignal = ctx.signal;
    // A caller that left before leading (during an async validation, say) never starts an
    // execution: with nobody to detach it later, it would run and spend a budget unit.
    if (callerSignal.aborted) throw cancelled(ctx, callerSignal);
    const flight = new Flight(print, callerSignal !== neverAborted);
    inFlight.set(key, flight);
    // The execution outlives its own caller while others wait on it: its signal replaces the
    // caller's, and aborts when every caller has left.
    const restore =
      flight.controller === undefined ? undefined : ctx.limit({ signal: flight.controller.signal });
    const forget = () => {
      if (inFlight.get(key) === flight) inFlight.delete(key);
    };
    // The leader's own caller is answered by the dispatcher the moment it aborts; this layer
    // only detaches it and keeps the context for the execution that others may still wait on.
    // Subscribed before the layers inside start, so an abort while they do is not missed.
    const unsubscribe = onAbort(callerSignal, () => detach(key, flight, callerSignal.reason));
    next().then(
      () => {
        restore?.();
        forget();
        const { outcome } = ctx;
        if (outcome?.ok === true) {
          // An execution every caller abandoned may still finish; its result is not remembered.
          if (!flight.abandoned) remember(key, print, outcome.result);
          flight.settle({ ok: true, result: outcome.result });
        } else {
          flight.settle({ ok: false, error: outcome ?? noOutcome(ctx) });
        }
      },
      (error: unknown) => {
        restore?.();
        forget();
        flight.settle({ ok: false, error: toDispatchError(error, ctx.attempt) });
      },
    );
    const settlement = await flight.done;
    unsubscribe();
    if (!settlement.ok) throw settlement.error;
  };

  // Once the last waiter has left, a new call with the key must start afresh, not join the
  // execution being torn down.
  const detach = (key: string, flight: Flight, reason: unknown) => {
    if (!flight.detach(reason)) return;
    flight.abandoned = true;
    if (inFlight.get(key) === flight) inFlight.delete(key);
  };

  const remember = (key: string, print: Fingerprint, result: unknown) => {
    cache.set(key, print, result, clock.now());
  };

  const follow = async (ctx: DispatchContext, key: string, flight: Flight) => {
    flight.waiters += 1;
    const { signal } = ctx;
    const settlement = await raceAbort(flight.done, signal, () => {
      detach(key, flight, signal.reason);
      return cancelled(ctx, signal);
    });
    if (!settlement.ok) throw settlement.error;
    ctx.outcome = { ok: true, result: settlement.result, attempts: 0 };
  };

  const keyed = async (ctx: DispatchContext, next: Next, key: string): Promise<void> => {
    const { tool } = ctx;
    if (tool === undefined) {
      throw new DispatchError('internal', 'idempotency() must sit inside toolLookup()');
    }
    const print = fingerprint(tool.name, ctx.args);
    const cached = cache.get(key, clock.now());
    if (cached !== undefined) {
      if (cached.fingerprint !== print) throw conflict(key);
      ctx.emit('idempotency.hit', { key, source: 'cache' });
      ctx.outcome = { ok: true, result: cached.result, attempts: 0 };
      return;
    }
    const flight = inFlight.get(key);
    if (flight === undefined) return lead(ctx, next, key, print);
    if (flight.fingerprint !== print) throw conflict(key);
    ctx.emit('idempotency.hit', { key, source: 'in_flight' });
    return follow(ctx, key, flight);
  };

  const middleware = trusted(function idempotency(ctx: DispatchContext, next: Next): Promise<void> {
    const key = ctx.options.idempotencyKey;
    return key === undefined ? next() : keyed(ctx, next, key);
  });
  return Object.assign(middleware, {
    size: () => ({ cached: cache.size, inFlight: inFlight.size }),
  });
}

function conflict(key: string): DispatchError {
  const shown = key.length > 64 ? `${key.slice(0, 61)}...` : key;
  return new DispatchError(
    'idempotency_conflict',
    `Idempotency key "${shown}" was already used for a different tool or different args`,
  );
}

function noOutcome(ctx: DispatchContext): DispatchError {
  return new DispatchError('internal', 'The layers inside idempotency() produced no outcome', {
    attempts: ctx.attempt,
  });
}

// ---------------------------------------------------------------------------------------------
// With a store: the loop of IdempotencyStore's TSDoc, behind the same in-process coalescing.

type StoreSettlement = { ok: true; result: unknown; hit: boolean } | { ok: false; error: DispatchError };

/** One process's execution of a key (as leader or follower of the store) and its local waiters. */
class StoreFlight extends Waited<StoreSettlement> {}

// A completion that failed is sent again (it is resend-safe) this often at first, doubling.
const completeRetryMs = 50;
// Retries of a completion whose lease never lapses on its own (a memory store's).
const maxCompleteRetries = 8;

function isPromise<T>(value: MaybePromise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

function storeBacked(
  store: IdempotencyStore,
  ttlMs: number,
  clock: NonNullable<IdempotencyOptions['clock']>,
): IdempotencyMiddleware {
  for (const method of ['claim', 'renew', 'complete', 'release', 'changed'] as const) {
    if (typeof (store as unknown as Record<string, unknown>)[method] !== 'function') {
      throw new TypeError(`store must be an IdempotencyStore (missing ${method})`);
    }
  }
  const timers =
    typeof clock.setTimeout === 'function' && typeof clock.clearTimeout === 'function'
      ? (clock as Pick<Clock, 'setTimeout' | 'clearTimeout'>)
      : systemClock;
  // A store's TTL is finite: "for ever" is as long as a timer can count.
  const storeTtlMs = Math.min(ttlMs, 2 ** 47);
  const inFlight = new Map<string, StoreFlight>();

  const unavailable = (error: unknown): DispatchError => {
    if (isDispatchError(error)) return error;
    return storeUnavailable(
      `The idempotency store could not be reached: ${String((error as Error)?.message ?? error)}`,
      {
        cause: error,
      },
    );
  };

  const detach = (key: string, flight: StoreFlight, reason: unknown) => {
    flight.waiters -= 1;
    if (flight.waiters > 0 || flight.settled) return;
    flight.controller?.abort(reason);
    if (inFlight.get(key) === flight) inFlight.delete(key);
  };

  const release = (lease: IdempotencyLease) => {
    try {
      const released = store.release(lease);
      if (isPromise(released)) released.catch(ignore);
    } catch {
      // The lease frees the key when it ends.
    }
  };

  // The side effect happened and the caller has its result; the store learns of it as soon as
  // it can. Until the lease ends, other processes wait for the key rather than run it again.
  const completeLater = (
    ctx: DispatchContext,
    lease: IdempotencyLease,
    result: unknown,
    tries: number,
    delayMs: number,
    reportLost: () => void,
  ): void => {
    // The lease ended before the success could be stored: another process may run the key.
    if (lease.signal.aborted) return reportLost();
    // Past about a lease (three renewal periods) the lease has ended, even if its store never said so.
    const giveUpAfter =
      lease.renewEveryMs < Infinity
        ? Math.log2((3 * lease.renewEveryMs) / completeRetryMs) + 1
        : maxCompleteRetries;
    if (tries >= Math.max(giveUpAfter, 1)) return;
    const handle = timers.setTimeout(() => {
      let answer: MaybePromise<unknown>;
      try {
        answer = store.complete(lease, result, storeTtlMs);
      } catch (error) {
        ctx.emit('idempotency.store_error', { key: lease.key, operation: 'complete', error });
        return completeLater(
          ctx,
          lease,
          result,
          tries + 1,
          Math.min(delayMs * 2, lease.renewEveryMs),
          reportLost,
        );
      }
      if (isPromise(answer)) {
        answer.then(reportLost, (error: unknown) => {
          ctx.emit('idempotency.store_error', { key: lease.key, operation: 'complete', error });
          completeLater(ctx, lease, result, tries + 1, Math.min(delayMs * 2, lease.renewEveryMs), reportLost);
        });
      }
    }, delayMs);
    (handle as { unref?: () => void } | undefined)?.unref?.();
  };

  // Runs the key once under its lease; answers what this process's callers get.
  const lead = async (
    ctx: DispatchContext,
    next: Next,
    lease: IdempotencyLease,
    signal: AbortSignal,
  ): Promise<StoreSettlement | 'again'> => {
    const { key } = lease;
    // The execution's signal aborts when every local caller has left or the lease is lost.
    const execution = new AbortController();
    const restore = ctx.limit({ signal: execution.signal });
    const offCaller = onAbort(signal, () => execution.abort(signal.reason));
    let lostReported = false;
    const reportLost = () => {
      if (lostReported || !lease.signal.aborted) return;
      lostReported = true;
      ctx.emit('idempotency.lease_lost', { key, fence: lease.fence });
    };
    // A store aborts a lease's signal only when a renewal or the completion finds it gone, so
    // it is watched from the first renewal on: a call shorter than a renewal period never
    // makes the store build that signal.
    let offLease: () => void = ignore;
    let watching = false;
    const renew = () => {
      if (!watching) {
        watching = true;
        offLease = onAbort(lease.signal, () => {
          reportLost();
          execution.abort(lease.signal.reason);
        });
      }
      return store.renew(lease);
    };
    const stop = keepLeaseAlive(lease, renew, timers);
    let failure: unknown;
    let failed = false;
    try {
      await next();
    } catch (error) {
      failed = true;
      failure = error;
    } finally {
      stop();
      offCaller();
      offLease();
      restore();
    }
    const { outcome } = ctx;
    if (failed || outcome?.ok !== true) {
      release(lease);
      // Another leader took the key over: its outcome is this call's too.
      if (watching && lease.signal.aborted && !signal.aborted) return 'again';
      return {
        ok: false,
        error: failed
          ? toDispatchError(failure, ctx.attempt)
          : ((outcome as DispatchError | undefined) ?? noOutcome(ctx)),
      };
    }
    // A success counts even when every local caller left: its side effect happened, so it is
    // stored, and the key does not run again elsewhere.
    const result = outcome.result;
    let completion: MaybePromise<Awaited<ReturnType<IdempotencyStore['complete']>>>;
    try {
      completion = store.complete(lease, result, storeTtlMs);
      if (isPromise(completion)) completion = await completion;
    } catch (error) {
      ctx.emit('idempotency.store_error', { key, operation: 'complete', error });
      // A completion that failed past the lease's end finds it lost: that is said too.
      reportLost();
      completeLater(ctx, lease, result, 1, completeRetryMs, reportLost);
      return { ok: true, result, hit: false };
    }
    // Only a renewal or this completion can have found the lease gone.
    if (watching || completion.kind === 'lost') reportLost();
    if (completion.kind === 'lost' && completion.winner !== undefined) {
      return { ok: true, result: completion.winner.result, hit: false };
    }
    return { ok: true, result, hit: false };
  };

  // claim → hit / unshareable / conflict / lead / follow, until one answers.
  const execute = async (
    ctx: DispatchContext,
    next: Next,
    key: string,
    print: Fingerprint,
    signal: AbortSignal,
  ): Promise<StoreSettlement> => {
    let followed = false;
    for (;;) {
      if (signal.aborted) return { ok: false, error: cancelled(ctx, signal) };
      let claim: Awaited<ReturnType<IdempotencyStore['claim']>>;
      try {
        const answer = store.claim(key, print);
        claim = isPromise(answer) ? await answer : answer;
      } catch (error) {
        return { ok: false, error: unavailable(error) };
      }
      switch (claim.kind) {
        case 'hit':
          return { ok: true, result: claim.result, hit: true };
        case 'conflict':
          return { ok: false, error: conflict(key) };
        case 'unshareable':
          return {
            ok: false,
            error: new DispatchError(
              'idempotency_result_unavailable',
              `Idempotency key "${shorten(key)}" already succeeded, but its result could not be shared (${claim.reason}); it is not run again`,
              { retryAfterMs: claim.expiresInMs },
            ),
          };
        case 'follow': {
          if (!followed) ctx.emit('idempotency.hit', { key, source: 'in_flight' });
          followed = true;
          try {
            const waited = store.changed(key, claim.fence, { signal, timeoutMs: claim.leaseEndsInMs });
            if (isPromise(waited)) await waited;
          } catch (error) {
            return { ok: false, error: unavailable(error) };
          }
          continue;
        }
        case 'lead': {
          if (signal.aborted) {
            release(claim.lease);
            return { ok: false, error: cancelled(ctx, signal) };
          }
          const settlement = await lead(ctx, next, claim.lease, signal);
          if (settlement !== 'again') return settlement;
          continue;
        }
      }
    }
  };

  const keyed = async (ctx: DispatchContext, next: Next, key: string): Promise<void> => {
    const { tool } = ctx;
    if (tool === undefined) {
      throw new DispatchError('internal', 'idempotency() must sit inside toolLookup()');
    }
    const print = fingerprint(tool.name, ctx.args);
    const callerSignal = ctx.signal;
    const existing = inFlight.get(key);
    if (existing !== undefined) {
      if (existing.fingerprint !== print) throw conflict(key);
      existing.waiters += 1;
      ctx.emit('idempotency.hit', { key, source: 'in_flight' });
      const settlement = await raceAbort(existing.done, callerSignal, () => {
        detach(key, existing, callerSignal.reason);
        return cancelled(ctx, callerSignal);
      });
      if (!settlement.ok) throw settlement.error;
      ctx.outcome = { ok: true, result: settlement.result, attempts: 0 };
      return;
    }
    if (callerSignal.aborted) throw cancelled(ctx, callerSignal);
    const flight = new StoreFlight(print, callerSignal !== neverAborted);
    inFlight.set(key, flight);
    const unsubscribe = onAbort(callerSignal, () => detach(key, flight, callerSignal.reason));
    const signal = flight.controller?.signal ?? callerSignal;
    execute(ctx, next, key, print, signal).then(
      (settlement) => {
        if (inFlight.get(key) === flight) inFlight.delete(key);
        flight.settle(settlement);
      },
      (error: unknown) => {
        if (inFlight.get(key) === flight) inFlight.delete(key);
        flight.settle({ ok: false, error: toDispatchError(error, ctx.attempt) });
      },
    );
    const settlement = await flight.done;
    unsubscribe();
    if (!settlement.ok) throw settlement.error;
    if (settlement.hit) {
      ctx.emit('idempotency.hit', { key, source: 'cache' });
      ctx.outcome = { ok: true, result: settlement.result, attempts: 0 };
    } else if (ctx.outcome?.ok !== true || ctx.outcome.result !== settlement.result) {
      // The result of another leader's execution of the key, after this one lost its lease.
      ctx.outcome = { ok: true, result: settlement.result, attempts: ctx.attempt };
    }
  };

  const middleware = trusted(function idempotency(ctx: DispatchContext, next: Next): Promise<void> {
    const key = ctx.options.idempotencyKey;
    return key === undefined ? next() : keyed(ctx, next, key);
  });
  return Object.assign(middleware, {
    size: () => ({ cached: 0, inFlight: inFlight.size }),
  });
}

function shorten(key: string): string {
  return key.length > 64 ? `${key.slice(0, 61)}...` : key;
}

function ignore(): void {}
