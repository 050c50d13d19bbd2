/**
 * Circuit breaker: stops calling a failing tool for a cooldown, then lets a few probe calls decide.
 * @module
 */

import { systemClock, type Clock } from '../../src/clock.js';
import { DispatchError, isDispatchError, toDispatchError } from '../../src/errors.js';
import { optionsObject, requireFunction, requireInteger, requireNumber, requireClock } from '../kit.js';
import type { DispatchContext, DispatchEventOf, Middleware, Next } from '../../src/types.js';
import { trusted } from '../../src/internal/trusted.js';
import type { CircuitStore } from '../../src/stores.js';
import { sharedBreaker } from './shared.js';
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
   * A store that cannot answer never fails a call: the call is judged by this process's own
   * in-memory breaker instead.
   * @default undefined (circuits kept in this process)
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
 * caller errors never do.
 *
 * @example
 * circuitBreaker({ isFailure: (error) => error.kind === 'rate_limited' || isCircuitFailure(error) });
 */
export function isCircuitFailure(error: DispatchError): boolean {
  return failureKinds.has(error.kind);
}

/** The probes of one half-open period. */
interface Trial {
  probes: number;
}

interface Circuit {
  state: CircuitState;
  // Times of the counted failures, oldest first: the current streak while closed, the
  // failures that opened the circuit otherwise.
  failureTimes: number[];
  openedAt: number;
  // Replaced on every entry into half-open, so a probe that outlives its period can neither
  // free a slot of the next one nor decide for it.
  trial: Trial;
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

  const circuits = new Map<string, Circuit>();
  const counts = isFailure ?? isCircuitFailure;

  const open = (ctx: DispatchContext, key: string, circuit: Circuit, now: number) => {
    circuit.state = 'open';
    circuit.openedAt = now;
    ctx.emit('circuit.open', { key, failures: circuit.failureTimes.length, cooldownMs });
  };

  // Lets a call through or throws `circuit_open`; returns the trial when the call is a probe.
  const admit = (ctx: DispatchContext, key: string): Trial | undefined => {
    const circuit = circuits.get(key);
    if (circuit === undefined || circuit.state === 'closed') return undefined;
    if (circuit.state === 'open') {
      const now = clock.now();
      const remainingMs = circuit.openedAt + cooldownMs - now;
      if (remainingMs > 0) {
        // Capped, so a clock that stepped back never promises more than one cooldown.
        const retryAfterMs = Math.min(remainingMs, cooldownMs);
        throw new DispatchError(
          'circuit_open',
          `The circuit for "${key}" is open after repeated failures; try again in ${retryAfterMs} ms`,
          { attempts: ctx.attempt, retryAfterMs },
        );
      }
      circuit.state = 'half_open';
      circuit.trial = { probes: 0 };
      ctx.emit('circuit.half_open', { key });
    }
    const { trial } = circuit;
    if (trial.probes >= halfOpenMaxCalls) {
      // No cooldown is left to report: the wait is for a running probe to decide.
      throw new DispatchError(
        'circuit_open',
        `The circuit for "${key}" is half-open and its probe calls are busy; try again shortly`,
        { attempts: ctx.attempt },
      );
    }
    trial.probes += 1;
    return trial;
  };

  const recordFailure = (ctx: DispatchContext, key: string, trial: Trial | undefined) => {
    const now = clock.now();
    let circuit = circuits.get(key);
    if (circuit === undefined) {
      circuit = { state: 'closed', failureTimes: [], openedAt: 0, trial: { probes: 0 } };
      circuits.set(key, circuit);
    }
    if (circuit.state === 'closed') {
      const times = circuit.failureTimes;
      times.push(now);
      let expired = 0;
      // The newest time is `now`, so the scan stops there at the latest.
      while (now - (times[expired] as number) > windowMs) expired += 1;
      if (expired > 0) times.splice(0, expired);
      if (times.length >= failureThreshold) open(ctx, key, circuit, now);
    } else if (circuit.state === 'half_open' && trial === circuit.trial) {
      circuit.failureTimes = [now];
      open(ctx, key, circuit, now);
    }
  };

  const recordSuccess = (ctx: DispatchContext, key: string, trial: Trial | undefined) => {
    const circuit = circuits.get(key);
    if (circuit === undefined) return;
    // A closed circuit without failures is the same as none, so the map only holds live ones.
    if (circuit.state === 'closed') {
      circuits.delete(key);
    } else if (circuit.state === 'half_open' && trial === circuit.trial) {
      circuits.delete(key);
      ctx.emit('circuit.close', { key });
    }
  };

  const middleware = trusted(async function circuitBreaker(ctx: DispatchContext, next: Next): Promise<void> {
    const key = String(keyOf(ctx));
    const trial = admit(ctx, key);
    const attemptsBefore = ctx.attempt;
    // Every attempt made inside this layer reports its own envelope, whether a retry layer
    // sits inside (several attempts per pass) or outside (one attempt per pass).
    const judged: DispatchError[] = [];
    const unsubscribe = ctx.listen((event) => {
      if (event.type !== 'dispatch.attempt_failed') return;
      const { error } = event as DispatchEventOf<'dispatch.attempt_failed'>;
      if (!isDispatchError(error)) return;
      judged.push(error);
      if (counts(error)) recordFailure(ctx, key, trial);
    });
    let thrown: unknown;
    let failed = false;
    try {
      await next();
    } catch (error) {
      failed = true;
      thrown = error;
    } finally {
      unsubscribe();
    }
    if (trial !== undefined) trial.probes -= 1;
    if (ctx.attempt > attemptsBefore) {
      const failure = failed
        ? toDispatchError(thrown, ctx.attempt)
        : ctx.outcome?.ok === false
          ? ctx.outcome
          : undefined;
      if (failure === undefined) recordSuccess(ctx, key, trial);
      // A failure made by a layer inside, after its attempts, is judged here; an attempt's own
      // failure was judged when it was reported.
      else if (!judged.includes(failure) && counts(failure)) recordFailure(ctx, key, trial);
    }
    if (failed) throw thrown;
  });

  const describe = (circuit: Circuit, now: number): CircuitSnapshot | undefined => {
    const failures = circuit.failureTimes.length;
    if (circuit.state === 'closed') {
      const live = circuit.failureTimes.filter((time) => now - time <= windowMs).length;
      return live === 0 ? undefined : { state: 'closed', failures: live };
    }
    const { openedAt } = circuit;
    if (circuit.state === 'open' && now - openedAt < cooldownMs) {
      return {
        state: 'open',
        failures,
        openedAt,
        retryAfterMs: Math.min(openedAt + cooldownMs - now, cooldownMs),
      };
    }
    const probes = circuit.state === 'half_open' ? circuit.trial.probes : 0;
    return { state: 'half_open', failures, openedAt, probes };
  };

  const localState = (key: string): CircuitState => {
    const circuit = circuits.get(key);
    if (circuit === undefined) return 'closed';
    return describe(circuit, clock.now())?.state ?? 'closed';
  };

  const localSnapshot = (): Record<string, CircuitSnapshot> => {
    const now = clock.now();
    const entries: Array<[string, CircuitSnapshot]> = [];
    for (const [key, circuit] of circuits) {
      const snapshot = describe(circuit, now);
      if (snapshot === undefined) circuits.delete(key);
      else entries.push([key, snapshot]);
    }
    // fromEntries defines own properties, so a key such as "__proto__" stays a plain key.
    return Object.fromEntries(entries);
  };

  if (store !== undefined) {
    const shared = sharedBreaker(store, {
      failureThreshold,
      windowMs,
      cooldownMs,
      probeLeaseMs,
      counts,
      keyOf,
      local: { admit, recordFailure, recordSuccess, snapshot: localSnapshot, state: localState },
    });
    return Object.assign(shared.layer, { state: shared.state, snapshot: shared.snapshot });
  }

  return Object.assign(middleware, { state: localState, snapshot: localSnapshot });
}

function defaultKey(ctx: DispatchContext): string {
  return ctx.tool?.name ?? ctx.toolName;
}
