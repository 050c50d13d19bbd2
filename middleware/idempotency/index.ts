/**
 * Idempotency: calls that share a key run the handler once, in flight and for a while after success.
 * @module
 */

import { systemClock, type Clock } from '../../src/clock.js';
import { DispatchError, isDispatchError, toDispatchError } from '../../src/errors.js';
import {
  isThenable,
  neverAborted,
  noop,
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

  const layer = new LocalIdempotency(new SuccessCache(ttlMs, maxEntries, clock.now()), clock);
  const middleware = trusted(function idempotency(ctx: DispatchContext, next: Next): Promise<void> {
    const key = ctx.options.idempotencyKey;
    return key === undefined ? next() : layer.keyed(ctx, next, key);
  });
  return Object.assign(middleware, {
    size: () => ({ cached: layer.cache.size, inFlight: layer.inFlight.size }),
  });
}

/** The layer without a store: successes cached and executions shared in this process. */
class LocalIdempotency {
  readonly inFlight = new Map<string, Flight>();

  constructor(
    readonly cache: SuccessCache,
    private readonly clock: Pick<Clock, 'now'>,
  ) {}

  async keyed(ctx: DispatchContext, next: Next, key: string): Promise<void> {
    const { tool } = ctx;
    if (tool === undefined) {
      throw new DispatchError('internal', 'idempotency() must sit inside toolLookup()');
    }
    const print = fingerprint(tool.name, ctx.args);
    const cached = this.cache.get(key, this.clock.now());
    if (cached !== undefined) {
      if (cached.fingerprint !== print) throw conflict(key);
      ctx.emit('idempotency.hit', { key, source: 'cache' });
      ctx.outcome = { ok: true, result: cached.result, attempts: 0 };
      return;
    }
    const flight = this.inFlight.get(key);
    if (flight === undefined) return this.lead(ctx, next, key, print);
    if (flight.fingerprint !== print) throw conflict(key);
    ctx.emit('idempotency.hit', { key, source: 'in_flight' });
    return this.follow(ctx, key, flight);
  }

  private async lead(ctx: DispatchContext, next: Next, key: string, print: Fingerprint): Promise<void> {
    const callerSignal = ctx.signal;
    // A caller that left before leading (during an async validation, say) never starts an
    // execution: with nobody to detach it later, it would run and spend a budget unit.
    if (callerSignal.aborted) throw cancelled(ctx, callerSignal);
    const flight = new Flight(print, callerSignal !== neverAborted);
    this.inFlight.set(key, flight);
    // The execution outlives its own caller while others wait on it: its signal replaces the
    // caller's, and aborts when every caller has left.
    const restore =
      flight.controller === undefined ? undefined : ctx.limit({ signal: flight.controller.signal });
    // The leader's own caller is answered by the dispatcher the moment it aborts; this layer
    // only detaches it and keeps the context for the execution that others may still wait on.
    // Subscribed before the layers inside start, so an abort while they do is not missed.
    const unsubscribe = onAbort(callerSignal, () => this.detach(key, flight, callerSignal.reason));
    next().then(
      () => {
        restore?.();
        this.forget(key, flight);
        const { outcome } = ctx;
        if (outcome?.ok === true) {
          // An execution every caller abandoned may still finish; its result is not remembered.
          if (!flight.abandoned) this.cache.set(key, print, outcome.result, this.clock.now());
          flight.settle({ ok: true, result: outcome.result });
        } else {
          flight.settle({ ok: false, error: outcome ?? noOutcome(ctx) });
        }
      },
      (error: unknown) => {
        restore?.();
        this.forget(key, flight);
        flight.settle({ ok: false, error: toDispatchError(error, ctx.attempt) });
      },
    );
    const settlement = await flight.done;
    unsubscribe();
    if (!settlement.ok) throw settlement.error;
  }

  private async follow(ctx: DispatchContext, key: string, flight: Flight): Promise<void> {
    flight.waiters += 1;
    const { signal } = ctx;
    const settlement = await raceAbort(flight.done, signal, () => {
      this.detach(key, flight, signal.reason);
      return cancelled(ctx, signal);
    });
    if (!settlement.ok) throw settlement.error;
    ctx.outcome = { ok: true, result: settlement.result, attempts: 0 };
  }

  // Once the last waiter has left, a new call with the key must start afresh, not join the
  // execution being torn down.
  private detach(key: string, flight: Flight, reason: unknown): void {
    if (!flight.detach(reason)) return;
    flight.abandoned = true;
    this.forget(key, flight);
  }

  private forget(key: string, flight: Flight): void {
    if (this.inFlight.get(key) === flight) this.inFlight.delete(key);
  }
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
  const layer = new StoreIdempotency(store, Math.min(ttlMs, 2 ** 47), timers);
  const middleware = trusted(function idempotency(ctx: DispatchContext, next: Next): Promise<void> {
    const key = ctx.options.idempotencyKey;
    return key === undefined ? next() : layer.keyed(ctx, next, key);
  });
  return Object.assign(middleware, {
    size: () => ({ cached: 0, inFlight: layer.inFlight.size }),
  });
}

/** The layer with a store: this process's callers of a key share one walk of the store's loop. */
class StoreIdempotency {
  readonly inFlight = new Map<string, StoreFlight>();

  constructor(
    private readonly store: IdempotencyStore,
    private readonly storeTtlMs: number,
    private readonly timers: Pick<Clock, 'setTimeout' | 'clearTimeout'>,
  ) {}

  async keyed(ctx: DispatchContext, next: Next, key: string): Promise<void> {
    const { tool } = ctx;
    if (tool === undefined) {
      throw new DispatchError('internal', 'idempotency() must sit inside toolLookup()');
    }
    const print = fingerprint(tool.name, ctx.args);
    const existing = this.inFlight.get(key);
    if (existing !== undefined) {
      const settlement = await this.join(ctx, key, existing, print);
      if (!settlement.ok) throw settlement.error;
      ctx.outcome = { ok: true, result: settlement.result, attempts: 0 };
      return;
    }
    const callerSignal = ctx.signal;
    if (callerSignal.aborted) throw cancelled(ctx, callerSignal);
    const flight = new StoreFlight(print, callerSignal !== neverAborted);
    this.inFlight.set(key, flight);
    const unsubscribe = onAbort(callerSignal, () => this.detach(key, flight, callerSignal.reason));
    this.launch(ctx, next, key, flight, flight.controller?.signal ?? callerSignal);
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
  }

  // Another caller in this process runs the key: wait for its settlement.
  private join(
    ctx: DispatchContext,
    key: string,
    existing: StoreFlight,
    print: Fingerprint,
  ): Promise<StoreSettlement> {
    if (existing.fingerprint !== print) throw conflict(key);
    existing.waiters += 1;
    ctx.emit('idempotency.hit', { key, source: 'in_flight' });
    const callerSignal = ctx.signal;
    return raceAbort(existing.done, callerSignal, () => {
      this.detach(key, existing, callerSignal.reason);
      return cancelled(ctx, callerSignal);
    });
  }

  // The first caller in this process walks the store's loop for everyone who joins its flight.
  private launch(
    ctx: DispatchContext,
    next: Next,
    key: string,
    flight: StoreFlight,
    signal: AbortSignal,
  ): void {
    this.execute(ctx, next, key, flight.fingerprint, signal).then(
      (settlement) => {
        this.forget(key, flight);
        flight.settle(settlement);
      },
      (error: unknown) => {
        this.forget(key, flight);
        flight.settle({ ok: false, error: toDispatchError(error, ctx.attempt) });
      },
    );
  }

  // claim → hit / unshareable / conflict / lead / follow, until one answers.
  private async execute(
    ctx: DispatchContext,
    next: Next,
    key: string,
    print: Fingerprint,
    signal: AbortSignal,
  ): Promise<StoreSettlement> {
    let followed = false;
    for (;;) {
      if (signal.aborted) return { ok: false, error: cancelled(ctx, signal) };
      let claim: Awaited<ReturnType<IdempotencyStore['claim']>>;
      try {
        const answer = this.store.claim(key, print);
        claim = isThenable(answer) ? await answer : answer;
      } catch (error) {
        return { ok: false, error: unavailable(error) };
      }
      switch (claim.kind) {
        case 'hit':
          return { ok: true, result: claim.result, hit: true };
        case 'conflict':
          return { ok: false, error: conflict(key) };
        case 'unshareable':
          return { ok: false, error: unshareable(key, claim.reason, claim.expiresInMs) };
        case 'follow': {
          if (!followed) ctx.emit('idempotency.hit', { key, source: 'in_flight' });
          followed = true;
          try {
            const waited = this.store.changed(key, claim.fence, { signal, timeoutMs: claim.leaseEndsInMs });
            if (isThenable(waited)) await waited;
          } catch (error) {
            return { ok: false, error: unavailable(error) };
          }
          continue;
        }
        case 'lead': {
          if (signal.aborted) {
            this.release(claim.lease);
            return { ok: false, error: cancelled(ctx, signal) };
          }
          const settlement = await this.lead(ctx, next, claim.lease, signal);
          if (settlement !== 'again') return settlement;
          continue;
        }
      }
    }
  }

  // Runs the key once under its lease; answers what this process's callers get.
  private async lead(
    ctx: DispatchContext,
    next: Next,
    lease: IdempotencyLease,
    signal: AbortSignal,
  ): Promise<StoreSettlement | 'again'> {
    // The execution's signal aborts when every local caller has left or the lease is lost.
    const execution = new AbortController();
    const restore = ctx.limit({ signal: execution.signal });
    const offCaller = onAbort(signal, () => execution.abort(signal.reason));
    const watch = new LeaseWatch(ctx, lease, execution);
    const stop = keepLeaseAlive(lease, () => watch.renew(this.store), this.timers);
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
      watch.stop();
      restore();
    }
    const { outcome } = ctx;
    if (failed || outcome?.ok !== true) {
      this.release(lease);
      // Another leader took the key over: its outcome is this call's too.
      if (watch.watching && lease.signal.aborted && !signal.aborted) return 'again';
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
      completion = this.store.complete(lease, result, this.storeTtlMs);
      if (isThenable(completion)) completion = await completion;
    } catch (error) {
      ctx.emit('idempotency.store_error', { key: lease.key, operation: 'complete', error });
      // A completion that failed past the lease's end finds it lost: that is said too.
      watch.reportLost();
      this.completeLater(ctx, lease, result, 1, completeRetryMs, watch.reportLost);
      return { ok: true, result, hit: false };
    }
    // Only a renewal or this completion can have found the lease gone.
    if (watch.watching || completion.kind === 'lost') watch.reportLost();
    if (completion.kind === 'lost' && completion.winner !== undefined) {
      return { ok: true, result: completion.winner.result, hit: false };
    }
    return { ok: true, result, hit: false };
  }

  // The side effect happened and the caller has its result; the store learns of it as soon as
  // it can. Until the lease ends, other processes wait for the key rather than run it again.
  private completeLater(
    ctx: DispatchContext,
    lease: IdempotencyLease,
    result: unknown,
    tries: number,
    delayMs: number,
    reportLost: () => void,
  ): void {
    // The lease ended before the success could be stored: another process may run the key.
    if (lease.signal.aborted) return reportLost();
    // Past about a lease (three renewal periods) the lease has ended, even if its store never said so.
    const giveUpAfter =
      lease.renewEveryMs < Infinity
        ? Math.log2((3 * lease.renewEveryMs) / completeRetryMs) + 1
        : maxCompleteRetries;
    if (tries >= Math.max(giveUpAfter, 1)) return;
    const again = (error: unknown) => {
      ctx.emit('idempotency.store_error', { key: lease.key, operation: 'complete', error });
      this.completeLater(
        ctx,
        lease,
        result,
        tries + 1,
        Math.min(delayMs * 2, lease.renewEveryMs),
        reportLost,
      );
    };
    const handle = this.timers.setTimeout(() => {
      let answer: MaybePromise<unknown>;
      try {
        answer = this.store.complete(lease, result, this.storeTtlMs);
      } catch (error) {
        return again(error);
      }
      if (isThenable(answer)) answer.then(reportLost, again);
    }, delayMs);
    (handle as { unref?: () => void } | undefined)?.unref?.();
  }

  private release(lease: IdempotencyLease): void {
    try {
      const released = this.store.release(lease);
      if (isThenable(released)) released.catch(noop);
    } catch {
      // The lease frees the key when it ends.
    }
  }

  private detach(key: string, flight: StoreFlight, reason: unknown): void {
    flight.waiters -= 1;
    if (flight.waiters > 0 || flight.settled) return;
    flight.controller?.abort(reason);
    this.forget(key, flight);
  }

  private forget(key: string, flight: StoreFlight): void {
    if (this.inFlight.get(key) === flight) this.inFlight.delete(key);
  }
}

/** A leader's watch on its lease: reports the lease lost once, and aborts the execution with it. */
class LeaseWatch {
  // A store aborts a lease's signal only when a renewal or the completion finds it gone, so it
  // is watched from the first renewal on: a call shorter than a renewal period never makes the
  // store build that signal.
  watching = false;
  private lostReported = false;
  private offLease: () => void = noop;

  constructor(
    private readonly ctx: DispatchContext,
    private readonly lease: IdempotencyLease,
    private readonly execution: AbortController,
  ) {}

  renew(store: IdempotencyStore): ReturnType<IdempotencyStore['renew']> {
    if (!this.watching) {
      this.watching = true;
      this.offLease = onAbort(this.lease.signal, () => {
        this.reportLost();
        this.execution.abort(this.lease.signal.reason);
      });
    }
    return store.renew(this.lease);
  }

  stop(): void {
    this.offLease();
  }

  readonly reportLost = (): void => {
    if (this.lostReported || !this.lease.signal.aborted) return;
    this.lostReported = true;
    this.ctx.emit('idempotency.lease_lost', { key: this.lease.key, fence: this.lease.fence });
  };
}

function unavailable(error: unknown): DispatchError {
  if (isDispatchError(error)) return error;
  return storeUnavailable(
    `The idempotency store could not be reached: ${String((error as Error)?.message ?? error)}`,
    { cause: error },
  );
}

function unshareable(key: string, reason: string, expiresInMs: number): DispatchError {
  return new DispatchError(
    'idempotency_result_unavailable',
    `Idempotency key "${shorten(key)}" already succeeded, but its result could not be shared (${reason}); it is not run again`,
    { retryAfterMs: expiresInMs },
  );
}

function shorten(key: string): string {
  return key.length > 64 ? `${key.slice(0, 61)}...` : key;
}
