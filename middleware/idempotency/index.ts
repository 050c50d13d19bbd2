// Idempotency: calls that share a key run the handler once, in flight and for a while after success.

import { systemClock, type Clock } from '../../src/clock.js';
import { DispatchError, toDispatchError } from '../../src/errors.js';
import { neverAborted, onAbort, raceAbort } from '../../src/internal/abort.js';
import { cancelled } from '../../src/internal/failures.js';
import { fingerprint, type Fingerprint } from './fingerprint.js';
import { SuccessCache } from './success-cache.js';
import { trusted } from '../../src/internal/trusted.js';
import { optionsObject, requireInteger, requireNumber, requireClock } from '../../src/internal/options.js';
import type { DispatchContext, Middleware, Next } from '../../src/types.js';

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
   * The time source for the TTL.
   * @default systemClock
   */
  clock?: Pick<Clock, 'now'>;
}

/** What an idempotency layer holds right now. */
export interface IdempotencySize {
  /** Successes cached (expired ones not yet evicted included). */
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

/** One shared execution and the callers waiting on it. */
class Flight {
  // Callers still waiting, the leader included; the execution is aborted when it reaches 0.
  waiters = 1;
  settled = false;
  abandoned = false;
  readonly controller: AbortController | undefined;
  readonly done: Promise<Settlement>;
  settle!: (settlement: Settlement) => void;

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
  } = optionsObject('idempotency', options);
  requireNumber('ttlMs', ttlMs, 0, { exclusive: true, allowInfinity: true });
  requireInteger('maxEntries', maxEntries, 1);
  requireClock(clock, ['now']);

  const cache = new SuccessCache(ttlMs, maxEntries, clock.now());
  const inFlight = new Map<string, Flight>();

  const lead = async (ctx: DispatchContext, next: Next, key: string, print: Fingerprint) => {
    const callerSignal = ctx.signal;
    // A caller that left before leading (during an async validation, say) never starts an
    // execution: with nobody to detach it later, it would run and spend a budget unit.
    if (callerSignal.aborted) throw cancelled(ctx, callerSignal);
    const flight = new Flight(print, callerSignal !== neverAborted);
    inFlight.set(key, flight);
    if (flight.controller !== undefined) ctx.signal = flight.controller.signal;
    const forget = () => {
      if (inFlight.get(key) === flight) inFlight.delete(key);
    };
    // The leader's own caller is answered by the dispatcher the moment it aborts; this layer
    // only detaches it and keeps the context for the execution that others may still wait on.
    // Subscribed before the layers inside start, so an abort while they do is not missed.
    const unsubscribe = onAbort(callerSignal, () => detach(key, flight, callerSignal.reason));
    next().then(
      () => {
        ctx.signal = callerSignal;
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
        ctx.signal = callerSignal;
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
