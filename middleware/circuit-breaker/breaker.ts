/**
 * The circuit breaker's one decision loop: a call's admission is read from a `CircuitStore`, and
 * its outcome is written back to it. Without a user's store the store is a memory store; with
 * one, a memory store takes every call the user's store cannot answer for.
 * @module
 */

import { randomUUID } from 'node:crypto';
import { DispatchError, isDispatchError, toDispatchError } from '../../src/errors.js';
import type { CircuitRecord, CircuitStore, CircuitView, MaybePromise } from '../../src/stores.js';
import type { DispatchContext, Next } from '../../src/types.js';
import type { MemoryCircuitStore } from './memory-store.js';
import type { CircuitSnapshot, CircuitState } from './snapshot.js';

/** What the loop needs from `circuitBreaker`'s checked options. */
export interface BreakerConfig {
  readonly failureThreshold: number;
  readonly windowMs: number;
  readonly cooldownMs: number;
  readonly halfOpenMaxCalls: number;
  /** The lease a probe takes in a user's store; a memory store's probes hold theirs until they end. */
  readonly probeLeaseMs: number;
  readonly counts: (error: DispatchError) => boolean;
  readonly keyOf: (ctx: DispatchContext) => string;
}

/** A probe call's claim on a half-open circuit: its token in the record's `probe` list. */
interface Probe {
  readonly token: string;
  // Set once the probe's outcome was written (or found its half-open period over), so later
  // attempts of the same call are judged as any call's, and no release is needed.
  decided: boolean;
}

/** How a call was let through: the store that judges its outcome, and its claim if it probes. */
interface Pass {
  readonly store: CircuitStore;
  readonly probe: Probe | undefined;
}

type Decision = 'success' | 'failure';

function isPromise<T>(value: MaybePromise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/** Runs `then` on a store's answer: at once when it came without a promise. */
function step<T, U>(value: MaybePromise<T>, then: (value: T) => MaybePromise<U>): MaybePromise<U> {
  return isPromise(value) ? value.then(then) : then(value);
}

/** Runs `work`; if the store throws or rejects on the way, runs `otherwise` instead. */
function orElse(work: () => MaybePromise<void>, otherwise: () => MaybePromise<void>): MaybePromise<void> {
  let result: MaybePromise<void>;
  try {
    result = work();
  } catch {
    return otherwise();
  }
  return isPromise(result) ? result.then(undefined, otherwise) : result;
}

function isClosed(record: CircuitRecord | undefined): boolean {
  return record === undefined || record.state === 'closed';
}

/** The probe tokens of a half-open record whose lease has not ended. */
function liveProbes(record: CircuitRecord, now: number): string[] {
  return record.state === 'half_open' && record.probe !== '' && record.probeUntil > now
    ? record.probe.split(' ')
    : [];
}

function holds(record: CircuitRecord | undefined, token: string): boolean {
  return record?.state === 'half_open' && record.probe.split(' ').includes(token);
}

const closedRecord: CircuitRecord = { state: 'closed', failures: 0, openedAt: 0, probe: '', probeUntil: 0 };
const maxSeen = 10_000;

/** One breaker: its circuits in `store`, and `fallback` for the calls `store` cannot answer. */
export class Breaker {
  readonly #store: CircuitStore;
  readonly #fallback: MemoryCircuitStore | undefined;
  readonly #config: BreakerConfig;
  // The passes of calls that do not probe, made once: the hot path allocates none.
  readonly #plain: Pass;
  readonly #plainLocal: Pass;
  // Failure and probe ids must be unique across a fleet sharing a store: a process prefix, then a counter.
  readonly #origin = randomUUID();
  #ids = 0;
  // The last view of each circuit of a user's store, for `state` and `snapshot` while the store
  // answers only with promises; a memory store answers at once, so it has none.
  readonly #seen: Map<string, CircuitView> | undefined;

  constructor(store: CircuitStore, fallback: MemoryCircuitStore | undefined, config: BreakerConfig) {
    this.#store = store;
    this.#fallback = fallback;
    this.#config = config;
    this.#plain = { store, probe: undefined };
    this.#plainLocal = { store: fallback ?? store, probe: undefined };
    this.#seen = fallback === undefined ? undefined : new Map();
  }

  /** The layer: admits the call, runs it, and judges every attempt it made. */
  async run(ctx: DispatchContext, next: Next): Promise<void> {
    const key = String(this.#config.keyOf(ctx));
    const admitted = this.#admit(ctx, key);
    const pass = isPromise(admitted) ? await admitted : admitted;
    const attemptsBefore = ctx.attempt;
    const { counts } = this.#config;
    // Every attempt made inside this layer reports its own envelope, whether a retry layer
    // sits inside (several attempts per pass) or outside (one attempt per pass).
    const judged: DispatchError[] = [];
    let pending: Array<Promise<void>> | undefined;
    const track = (work: MaybePromise<void>) => {
      if (isPromise(work)) (pending ??= []).push(work);
    };
    const unsubscribe = ctx.listen((event) => {
      if (event.type !== 'dispatch.attempt_failed') return;
      const { error } = event;
      if (!isDispatchError(error)) return;
      judged.push(error);
      if (counts(error)) track(this.#judge(ctx, key, pass, 'failure'));
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
    if (ctx.attempt > attemptsBefore) {
      const failure = failed
        ? toDispatchError(thrown, ctx.attempt)
        : ctx.outcome?.ok === false
          ? ctx.outcome
          : undefined;
      if (failure === undefined) track(this.#judge(ctx, key, pass, 'success'));
      // A failure made by a layer inside, after its attempts, is judged here; an attempt's own
      // failure was judged when it was reported.
      else if (!judged.includes(failure) && counts(failure)) track(this.#judge(ctx, key, pass, 'failure'));
    }
    if (pass.probe !== undefined && !pass.probe.decided) {
      // Released after the writes above, so a probe that decided keeps its decision.
      if (pending !== undefined) await Promise.all(pending);
      pending = undefined;
      track(this.#release(key, pass.store, pass.probe));
    }
    // The call waits for its own bookkeeping (each store call has a deadline), so whoever sees
    // its outcome sees the circuit it left.
    if (pending !== undefined) await Promise.all(pending);
    if (failed) throw thrown;
  }

  // ---------------------------------------------------------------------------------------------
  // Admission

  /** Lets the call through, makes it a probe, or throws `circuit_open`. */
  #admit(ctx: DispatchContext, key: string): MaybePromise<Pass> {
    let read: MaybePromise<CircuitView>;
    try {
      read = this.#store.read(key);
    } catch (error) {
      return this.#admitLocally(ctx, key, error);
    }
    if (!isPromise(read)) return this.#admitOn(ctx, key, this.#store, this.#remember(key, read), 0);
    return read.then(
      (view) => this.#admitOn(ctx, key, this.#store, this.#remember(key, view), 0),
      (error: unknown) => this.#admitLocally(ctx, key, error),
    );
  }

  /** Admits on the fallback: the user's store could not answer. */
  #admitLocally(ctx: DispatchContext, key: string, error: unknown): MaybePromise<Pass> {
    const local = this.#fallback;
    // A memory store never fails, so only a user's store leads here.
    if (local === undefined) throw error;
    return this.#admitOn(ctx, key, local, local.read(key), 0);
  }

  #admitOn(
    ctx: DispatchContext,
    key: string,
    store: CircuitStore,
    view: CircuitView,
    round: number,
  ): MaybePromise<Pass> {
    const { record, now } = view;
    if (record === undefined || record.state === 'closed') {
      const fallback = this.#fallback;
      if (store === this.#store && fallback !== undefined) {
        // Failures the user's store could not count opened the fallback's circuit: it decides
        // until it closes again.
        const local = fallback.read(key);
        if (!isClosed(local.record)) return this.#admitOn(ctx, key, fallback, local, 0);
      }
      return store === this.#store ? this.#plain : this.#plainLocal;
    }
    const { cooldownMs, halfOpenMaxCalls } = this.#config;
    if (record.state === 'open' && now < record.openedAt + cooldownMs) {
      // Capped, so a clock that stepped back never promises more than one cooldown.
      const retryAfterMs = Math.min(record.openedAt + cooldownMs - now, cooldownMs);
      throw new DispatchError(
        'circuit_open',
        `The circuit for "${key}" is open after repeated failures; try again in ${retryAfterMs} ms`,
        { attempts: ctx.attempt, retryAfterMs },
      );
    }
    const probes = liveProbes(record, now);
    if (probes.length >= halfOpenMaxCalls || round > 1) throw this.#busy(ctx, key);
    const token = this.#nextId();
    probes.push(token);
    const local = store !== this.#store || this.#fallback === undefined;
    const claim: CircuitRecord = {
      state: 'half_open',
      failures: record.failures,
      openedAt: record.openedAt,
      probe: probes.join(' '),
      // A memory store's prober is in this process: it cannot crash without ending its call.
      probeUntil: local ? Infinity : now + this.#config.probeLeaseMs,
    };
    let written: ReturnType<CircuitStore['compareAndSet']>;
    try {
      written = store.compareAndSet(key, view.version, claim);
    } catch (error) {
      return this.#admitLocally(ctx, key, error);
    }
    const claimed = (result: {
      readonly written: boolean;
      readonly view: CircuitView;
    }): MaybePromise<Pass> => {
      if (!result.written) {
        // The write lost, maybe to a close that lets the call in: look once more.
        return this.#admitOn(ctx, key, store, this.#remember(key, result.view, store), round + 1);
      }
      this.#remember(key, result.view, store);
      if (record.state === 'open') ctx.emit('circuit.half_open', { key });
      return { store, probe: { token, decided: false } };
    };
    if (!isPromise(written)) return claimed(written);
    return written.then(claimed, (error: unknown) => this.#admitLocally(ctx, key, error));
  }

  #busy(ctx: DispatchContext, key: string): DispatchError {
    // No cooldown is left to report: the wait is for a running probe to decide.
    const probes = this.#config.halfOpenMaxCalls === 1 ? 'probe call is' : 'probe calls are';
    return new DispatchError(
      'circuit_open',
      `The circuit for "${key}" is half-open and its ${probes} busy; try again shortly`,
      { attempts: ctx.attempt },
    );
  }

  // ---------------------------------------------------------------------------------------------
  // Outcomes

  /** Writes one outcome; what the user's store cannot take, the fallback does. */
  #judge(ctx: DispatchContext, key: string, pass: Pass, outcome: Decision): MaybePromise<void> {
    const fallback = this.#fallback;
    if (pass.store !== this.#store || fallback === undefined) return this.#record(ctx, key, pass, outcome);
    // Any success clears the fallback's streak too, so it never opens on failures a success
    // has since answered.
    if (outcome === 'success') this.#clearStreak(key, fallback);
    return orElse(
      () => this.#record(ctx, key, pass, outcome),
      () => this.#plainOutcome(ctx, key, fallback, outcome),
    );
  }

  #record(ctx: DispatchContext, key: string, { store, probe }: Pass, outcome: Decision): MaybePromise<void> {
    if (probe === undefined || probe.decided) return this.#plainOutcome(ctx, key, store, outcome);
    return this.#decide(ctx, key, store, probe, outcome, 0);
  }

  /** A call that is not a probe: a failure joins the streak, a success clears it. */
  #plainOutcome(
    ctx: DispatchContext,
    key: string,
    store: CircuitStore,
    outcome: Decision,
  ): MaybePromise<void> {
    if (outcome === 'success') return this.#clearStreak(key, store);
    const { failureThreshold, windowMs } = this.#config;
    return step(store.addFailure(key, this.#nextId(), windowMs), (view) => {
      this.#remember(key, view, store);
      // A failure landing on an open circuit (a call that started before it opened) changes
      // nothing: the next write clears the window.
      if (isClosed(view.record) && view.failures >= failureThreshold) {
        return this.#open(ctx, key, store, view, view.failures);
      }
    });
  }

  #clearStreak(key: string, store: CircuitStore): MaybePromise<void> {
    const read = store.read(key);
    if (isPromise(read)) return read.then((view) => this.#clearSeenStreak(key, store, view));
    return this.#clearSeenStreak(key, store, read);
  }

  #clearSeenStreak(key: string, store: CircuitStore, view: CircuitView): MaybePromise<void> {
    this.#remember(key, view, store);
    // Without a streak to clear, no write at all.
    if (!isClosed(view.record) || view.failures === 0) return;
    return step(store.compareAndSet(key, view.version, view.record ?? closedRecord), (result) => {
      this.#remember(key, result.view, store);
    });
  }

  #open(
    ctx: DispatchContext,
    key: string,
    store: CircuitStore,
    view: CircuitView,
    failures: number,
  ): MaybePromise<void> {
    const record: CircuitRecord = { state: 'open', failures, openedAt: view.now, probe: '', probeUntil: 0 };
    return step(store.compareAndSet(key, view.version, record), (result) => {
      this.#remember(key, result.view, store);
      if (result.written) ctx.emit('circuit.open', { key, failures, cooldownMs: this.#config.cooldownMs });
    });
  }

  /**
   * A probe's outcome: success closes the circuit, failure opens it for a new cooldown, while
   * its half-open period lasts. Once it is over (another probe decided, or the lease ended), the
   * call is judged as any call, so a probe of an earlier period never decides for the next one.
   */
  #decide(
    ctx: DispatchContext,
    key: string,
    store: CircuitStore,
    probe: Probe,
    outcome: Decision,
    round: number,
  ): MaybePromise<void> {
    probe.decided = true;
    return step(store.read(key), (view) => {
      this.#remember(key, view, store);
      if (!holds(view.record, probe.token)) return this.#plainOutcome(ctx, key, store, outcome);
      if (outcome === 'failure') return this.#open(ctx, key, store, view, 1);
      return step(store.compareAndSet(key, view.version, undefined), (result) => {
        this.#remember(key, result.view, store);
        if (result.written) ctx.emit('circuit.close', { key });
        // Another probe's claim moved the version: decide again on the circuit as it is now.
        else if (round === 0) return this.#decide(ctx, key, store, probe, outcome, 1);
      });
    });
  }

  /** A probe that ended undecided (cancelled, say) gives its slot back for the next caller. */
  #release(key: string, store: CircuitStore, probe: Probe): MaybePromise<void> {
    probe.decided = true;
    return orElse(
      () =>
        step(store.read(key), (view) => {
          const { record } = view;
          if (record === undefined || !holds(record, probe.token)) return;
          const rest = record.probe.split(' ').filter((token) => token !== probe.token);
          const next = {
            ...record,
            probe: rest.join(' '),
            probeUntil: rest.length === 0 ? 0 : record.probeUntil,
          };
          return step(store.compareAndSet(key, view.version, next), (result) => {
            this.#remember(key, result.view, store);
          });
        }),
      // Its lease ends on its own.
      () => {},
    );
  }

  #nextId(): string {
    return `${this.#origin}:${++this.#ids}`;
  }

  #remember(key: string, view: CircuitView, store: CircuitStore = this.#store): CircuitView {
    const seen = this.#seen;
    if (seen === undefined || store !== this.#store) return view;
    if (!seen.has(key) && seen.size >= maxSeen) seen.delete(seen.keys().next().value as string);
    seen.set(key, view);
    return view;
  }

  // ---------------------------------------------------------------------------------------------
  // A look at the circuits

  /** The state of the circuit for `key`, as `CircuitBreakerMiddleware.state` reports it. */
  state(key: string): CircuitState {
    const view = this.#viewNow(key);
    const shared = view === undefined ? undefined : this.#describe(view);
    if (shared !== undefined || this.#fallback === undefined) return shared?.state ?? 'closed';
    return this.#describe(this.#fallback.read(key))?.state ?? 'closed';
  }

  /** Every circuit that is not plainly closed, as `CircuitBreakerMiddleware.snapshot` reports them. */
  snapshot(): Record<string, CircuitSnapshot> {
    const entries = new Map<string, CircuitSnapshot>();
    for (const [key, view] of this.#fallback?.entries() ?? []) {
      const snapshot = this.#describe(view);
      if (snapshot !== undefined) entries.set(key, snapshot);
    }
    let listed: Iterable<readonly [string, CircuitView]> = this.#seen ?? [];
    try {
      const all = this.#store.entries();
      if (!isPromise(all)) listed = all;
      else all.then(undefined, ignore);
    } catch {
      // What was seen will do.
    }
    for (const [key, view] of listed) {
      const snapshot = this.#describe(view);
      if (snapshot !== undefined) entries.set(key, snapshot);
      else entries.delete(key);
    }
    // fromEntries defines own properties, so a key such as "__proto__" stays a plain key.
    return Object.fromEntries(entries);
  }

  /** What is known at once: the store's answer if it has one without a round trip, else the last seen. */
  #viewNow(key: string): CircuitView | undefined {
    try {
      const read = this.#store.read(key);
      if (!isPromise(read)) return read;
      read.then((view) => this.#remember(key, view), ignore);
    } catch {
      // Fall through to what was seen.
    }
    return this.#seen?.get(key);
  }

  #describe(view: CircuitView): CircuitSnapshot | undefined {
    const { record, now } = view;
    if (record === undefined || record.state === 'closed') {
      return view.failures === 0 ? undefined : { state: 'closed', failures: view.failures };
    }
    const { openedAt, failures } = record;
    const { cooldownMs } = this.#config;
    if (record.state === 'open' && now < openedAt + cooldownMs) {
      return {
        state: 'open',
        failures,
        openedAt,
        retryAfterMs: Math.min(openedAt + cooldownMs - now, cooldownMs),
      };
    }
    return { state: 'half_open', failures, openedAt, probes: liveProbes(record, now).length };
  }
}

function ignore(): void {}
