/**
 * The circuit breaker: stops calling a failing tool for a cooldown, then lets probe calls decide.
 * @module
 */

import { systemClock, type Clock } from '../../src/clock.js';
import type { DispatchError } from '../../src/errors.js';
import {
  optionKeys,
  optionsObject,
  requireFunction,
  requireInteger,
  requireNumber,
  requireClock,
} from '../kit.js';
import type { DispatchContext, Middleware, Next } from '../../src/types.js';
import { trusted } from '../../src/internal/trusted.js';
import type { CircuitStore } from './store.js';
import { Breaker } from './breaker.js';
import { memoryCircuitStore } from './memory-store.js';
import type { CircuitSnapshot, CircuitState } from './snapshot.js';

// The layer's events, merged into the core's DispatchEventDetails (kept in its declaration files).
export type {} from './events.js';

export type { CircuitSnapshot, CircuitState } from './snapshot.js';

/** Options for `circuitBreaker`. */
export interface CircuitBreakerOptions {
  /** Consecutive counted failures, all within `windowMs` of the newest, that open a circuit. @default 5 */
  failureThreshold?: number;
  /** How far apart, in ms, the failures of one streak may be; `Infinity` for no window. @default 60_000 */
  windowMs?: number;
  /** How long an open circuit turns calls away before it lets probes through, in ms. @default 30_000 */
  cooldownMs?: number;
  /** The most probe calls running at once while a circuit is half-open. @default 1 */
  halfOpenMaxCalls?: number;
  /** Decides whether a failed attempt counts against the circuit. @default isCircuitFailure */
  isFailure?: (error: DispatchError) => boolean;
  /**
   * Which circuit a call belongs to (a bounded set of keys; one per backend, say).
   * @default (ctx) => ctx.tool?.name ?? ctx.toolName
   */
  key?: (ctx: DispatchContext) => string;
  /** The time source for windows and cooldowns (of the fallback, with a `store`). @default systemClock */
  clock?: Pick<Clock, 'now'>;
  /**
   * Where circuits live when processes share them (`halfOpenMaxCalls` must be 1); a store that
   * cannot answer never fails a call, which this process's memory store judges instead.
   * @default a `memoryCircuitStore`
   * @example
   * circuitBreaker({ failureThreshold: 5, store: redisCircuitStore(redis) });
   */
  store?: CircuitStore;
  /** With a `store`: how long a half-open probe holds its lease, in ms. @default 10_000 */
  probeLeaseMs?: number;
}

const circuitBreakerOptionKeys = optionKeys<CircuitBreakerOptions>({
  failureThreshold: true,
  windowMs: true,
  cooldownMs: true,
  halfOpenMaxCalls: true,
  isFailure: true,
  key: true,
  clock: true,
  store: true,
  probeLeaseMs: true,
});

/** The circuit breaker middleware, with a look at its circuits. */
export interface CircuitBreakerLayer extends Middleware {
  /** The state of the circuit for `key` (`closed` for a key never seen). */
  state(key: string): CircuitState;
  /** Every circuit that is not plainly closed (closed with no counted failures is left out), by key. */
  snapshot(): Record<string, CircuitSnapshot>;
}

/** @deprecated Use `CircuitBreakerLayer`. */
export type CircuitBreakerMiddleware = CircuitBreakerLayer;

const failureKinds: ReadonlySet<string> = new Set(['timeout', 'transient', 'internal']);

/**
 * The default failure test of `circuitBreaker`: `timeout`, `transient` and `internal` count,
 * except a backend's rate-limit answer (the backend is up, only busy).
 *
 * @example
 * circuitBreaker({ isFailure: (error) => error.kind === 'rate_limited' || isCircuitFailure(error) });
 */
export function isCircuitFailure(error: DispatchError): boolean {
  if (!failureKinds.has(error.kind)) return false;
  return (error.cause as { rateLimited?: unknown } | undefined)?.rateLimited !== true;
}

/**
 * Opens a circuit after `failureThreshold` consecutive counted failed attempts within `windowMs`,
 * failing calls at once with `circuit_open` until `cooldownMs` has passed; then probe calls
 * close it or open it again. Emits `circuit.open`, `circuit.half_open` and `circuit.close`.
 *
 * @example
 * const breaker = circuitBreaker({ failureThreshold: 3, cooldownMs: 10_000 });
 * const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), breaker,
 *   retry(), timeout()]);
 * breaker.state('search.web'); // 'closed'
 */
export function circuitBreaker(options?: CircuitBreakerOptions): CircuitBreakerLayer {
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
  } = optionsObject('circuitBreaker', options, circuitBreakerOptionKeys);
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
    const fleet = 'with a store (one probe across the fleet)';
    if (halfOpenMaxCalls !== 1)
      throw new TypeError(`halfOpenMaxCalls must be 1 ${fleet}, got ${halfOpenMaxCalls}`);
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
  const breaker = new Breaker(store, memoryCircuitStore({ clock }), config);
  const layer = trusted(function circuitBreaker(ctx: DispatchContext, next: Next): Promise<void> {
    return breaker.run(ctx, next);
  });
  return Object.assign(layer, {
    state: (key: string) => breaker.views.state(key),
    snapshot: () => breaker.views.snapshot(),
  });
}

function defaultKey(ctx: DispatchContext): string {
  return ctx.tool?.name ?? ctx.toolName;
}
