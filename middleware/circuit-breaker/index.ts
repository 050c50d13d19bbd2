/**
 * The circuit breaker: stops calling a failing tool for a cooldown, then lets a few probe calls
 * decide. This file holds the options and the factory; `breaker.ts` holds the decision loop.
 * @module
 */

import { systemClock, type Clock } from '../../src/clock.js';
import type { DispatchError } from '../../src/errors.js';
import { optionsObject, requireFunction, requireInteger, requireNumber, requireClock } from '../kit.js';
import type { DispatchContext, Middleware, Next } from '../../src/types.js';
import { trusted } from '../../src/internal/trusted.js';
import type { CircuitStore } from '../../src/stores.js';
import { Breaker } from './breaker.js';
import { memoryCircuitStore } from './memory-store.js';
import type { CircuitSnapshot, CircuitState } from './snapshot.js';

export type { CircuitSnapshot, CircuitState } from './snapshot.js';

/** Options for `circuitBreaker`. */
export interface CircuitBreakerOptions {
  /**
   * Consecutive counted failures, all within `windowMs` of the newest, that open a circuit.
   * @default 5
   */
  failureThreshold?: number;
  /**
   * How far apart, in milliseconds, the failures of one streak may be: a failure older than
   * `windowMs` before the newest drops out of the streak. `Infinity` for no window.
   * @default 60_000
   */
  windowMs?: number;
  /**
   * How long an open circuit turns calls away before it lets probes through, in milliseconds.
   * @default 30_000
   */
  cooldownMs?: number;
  /**
   * The most probe calls running at once while a circuit is half-open; further calls get
   * `circuit_open` until a probe has decided.
   * @default 1
   */
  halfOpenMaxCalls?: number;
  /**
   * Decides whether a failed attempt counts against the circuit. By default `timeout`,
   * `transient` and `internal` count; caller errors (`schema`, `not_found`, `budget_exceeded`,
   * `cancelled`, `idempotency_conflict`, `circuit_open`) never do.
   * @default isCircuitFailure
   */
  isFailure?: (error: DispatchError) => boolean;
  /**
   * Which circuit a call belongs to; return the same string for tools that share a backend.
   * Keep the set of keys bounded: each key with failures holds a small entry.
   * @default (ctx) => ctx.tool?.name ?? ctx.toolName
   */
  key?: (ctx: DispatchContext) => string;
  /**
   * The time source for windows and cooldowns; no timers are ever set. With a `store`, times
   * come from the store's own timebase instead, and this clock serves the local fallback only.
   * @default systemClock
   */
  clock?: Pick<Clock, 'now'>;
  /**
   * Where circuits live when processes share them (e.g. `redisCircuitStore`): a circuit opened
   * by one process turns calls away in all, failures count fleet-wide within `windowMs`, and a
   * half-open circuit lets one probe through across the fleet (so `halfOpenMaxCalls` must be 1).
   * A store that cannot answer never fails a call: the call is judged against this process's
   * own `memoryCircuitStore` instead.
   * @default undefined (circuits kept in this process, in a `memoryCircuitStore`)
   * @example
   * circuitBreaker({ failureThreshold: 5, store: redisCircuitStore(redis) });
   */
  store?: CircuitStore;
  /**
   * With a `store`: how long a half-open probe holds its lease, in milliseconds; a prober that
   * crashes or takes longer lets the next caller probe once it ends.
   * @default 10_000
   * @example
   * circuitBreaker({ store, probeLeaseMs: 30_000 });
   */
  probeLeaseMs?: number;
}

/** The circuit breaker middleware, with a look at its circuits. */
export interface CircuitBreakerMiddleware extends Middleware {
  /**
   * The state of the circuit for `key`: `closed` for a key never seen, `half_open` for an open
   * circuit whose cooldown has elapsed (the next call will probe).
   */
  state(key: string): CircuitState;
  /**
   * Every circuit that is not plainly closed (closed with no counted failures is left out),
   * by key.
   */
  snapshot(): Record<string, CircuitSnapshot>;
}

const failureKinds: ReadonlySet<string> = new Set(['timeout', 'transient', 'internal']);

/**
 * The default failure test of `circuitBreaker`: `timeout`, `transient` and `internal` count,
 * caller errors never do, nor a backend's rate-limit answer (a `TransientError` with
 * `rateLimited`, as `classifyRateLimit` makes): the backend is up, only busy.
 *
 * @example
 * circuitBreaker({ isFailure: (error) => error.kind === 'rate_limited' || isCircuitFailure(error) });
 */
export function isCircuitFailure(error: DispatchError): boolean {
  if (!failureKinds.has(error.kind)) return false;
  return (error.cause as { rateLimited?: unknown } | undefined)?.rateLimited !== true;
}

/**
 * Opens a circuit after `failureThreshold` consecutive counted failures within `windowMs`, so
 * that calls fail at once with `circuit_open` (with `retryAfterMs`, the cooldown left) without
 * touching the handler. Once `cooldownMs` has passed, checked lazily on the next call, the
 * circuit is half-open: up to `halfOpenMaxCalls` probes run, a probe success closes it, a probe
 * failure opens it again for a new cooldown, and a probe that ends otherwise (say `cancelled`)
 * only frees its slot. A success while closed resets the streak.
 *
 * It counts every handler attempt by its own envelope (the `dispatch.attempt_failed` event each
 * failed attempt emits), so it works the same outside `retry` as inside it, and `isFailure`
 * always judges an attempt's real `DispatchError`. Outcomes that ran no attempt, such as an
 * idempotency cache hit or a call sharing another's in-flight execution, are not counted.
 * Outcomes of calls that started before the circuit opened are ignored while it is open, and
 * while half-open only probes count. One circuit per `key` (the tool's name by default). It
 * emits `circuit.open` (`key`, `failures`, `cooldownMs`), `circuit.half_open` and
 * `circuit.close` (`key`) from the call that makes the transition.
 *
 * @example
 * const breaker = circuitBreaker({ failureThreshold: 3, cooldownMs: 10_000 });
 * const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), breaker,
 *   retry(), timeout()]);
 * breaker.state('search.web'); // 'closed'
 */
export function circuitBreaker(options?: CircuitBreakerOptions): CircuitBreakerMiddleware {
  const {
    failureThreshold = 5,
    windowMs = 60_000,
    cooldownMs = 30_000,
    halfOpenMaxCalls = 1,
    isFailure,
    key: keyOf = defaultKey,
    clock = systemClock,
    store,
    probeLeaseMs = 10_000,
  } = optionsObject('circuitBreaker', options);
  requireInteger('failureThreshold', failureThreshold, 1);
  requireNumber('windowMs', windowMs, 0, { exclusive: true, allowInfinity: true });
  requireNumber('cooldownMs', cooldownMs, 0, { exclusive: true });
  requireInteger('halfOpenMaxCalls', halfOpenMaxCalls, 1);
  if (isFailure !== undefined) requireFunction('isFailure', isFailure);
  requireFunction('key', keyOf);
  requireClock(clock, ['now']);
  requireNumber('probeLeaseMs', probeLeaseMs, 0, { exclusive: true });
  if (store !== undefined) {
    for (const method of ['read', 'compareAndSet', 'addFailure', 'entries'] as const) {
      if (typeof (store as unknown as Record<string, unknown>)[method] !== 'function') {
        throw new TypeError(`store must be a CircuitStore (missing ${method})`);
      }
    }
    if (halfOpenMaxCalls !== 1) {
      throw new TypeError(
        `halfOpenMaxCalls must be 1 with a store (one probe across the fleet), got ${halfOpenMaxCalls}`,
      );
    }
  }

  const config = {
    failureThreshold,
    windowMs,
    cooldownMs,
    halfOpenMaxCalls,
    probeLeaseMs,
    counts: isFailure ?? isCircuitFailure,
    keyOf,
  };
  // Without a store the circuits live in a memory store; with one, a memory store judges the
  // calls the user's store cannot answer for.
  const breaker = new Breaker(store, memoryCircuitStore({ clock }), config);
  const layer = trusted(function circuitBreaker(ctx: DispatchContext, next: Next): Promise<void> {
    return breaker.run(ctx, next);
  });
  return Object.assign(layer, {
    state: (key: string) => breaker.state(key),
    snapshot: () => breaker.snapshot(),
  });
}

function defaultKey(ctx: DispatchContext): string {
  return ctx.tool?.name ?? ctx.toolName;
}
