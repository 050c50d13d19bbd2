/**
 * The circuit breaker's one decision loop over a `CircuitStore`, with a memory store as fallback.
 * @module
 */

import { randomUUID } from 'node:crypto';
import { DispatchError, isDispatchError, toDispatchError } from '../../src/errors.js';
import type { MaybePromise } from '../../src/stores.js';
import type { CircuitRecord, CircuitStore, CircuitView } from './store.js';
import { isThenable, noop } from '../kit.js';
import type { DispatchContext, Next } from '../../src/types.js';
import type { MemoryCircuitStore } from './memory-store.js';
import type { CircuitSnapshot, CircuitState } from './snapshot.js';

/** What the loop needs from `circuitBreaker`'s checked options. */
export interface BreakerConfig {
  readonly failureThreshold: number;
  readonly windowMs: number;
  readonly cooldownMs: number;
  readonly halfOpenMaxCalls: number;
  readonly probeLeaseMs: number;
  readonly counts: (error: DispatchError) => boolean;
  readonly keyOf: (ctx: DispatchContext) => string;
}

/** A probe call's claim on a half-open circuit: its token in the record's `probe` list. */
interface Probe {
  readonly token: string;
  // Set once its outcome was written, or its half-open period found over: later attempts of
  // the call are then judged as any call's, and there is no slot left to give back.
  decided: boolean;
}

/** How a call was let through: the store that judges its outcome, and its claim if it probes. */
interface Pass {
  readonly store: CircuitStore;
  readonly probe: Probe | undefined;
}

type Outcome = 'success' | 'failure';

/** Runs `then` on a store's answer: at once when it came without a promise. */
function step<T, U>(value: MaybePromise<T>, then: (value: T) => MaybePromise<U>): MaybePromise<U> {
  return isThenable(value) ? value.then(then) : then(value);
}

/** Runs `work`; if it throws or rejects, runs `otherwise` instead. */
function attempt<T>(
  work: () => MaybePromise<T>,
  otherwise: (error: unknown) => MaybePromise<T>,
): MaybePromise<T> {
  let result: MaybePromise<T>;
  try {
    result = work();
  } catch (error) {
    return otherwise(error);
  }
  return isThenable(result) ? result.then(undefined, otherwise) : result;
}

function track(pending: Array<Promise<void>>, work: MaybePromise<void>): void {
  if (isThenable(work)) pending.push(work);
}

function isClosed(record: CircuitRecord | undefined): boolean {
  return record === undefined || record.state === 'closed';
}

/** The probe tokens of a half-open record whose lease has not ended. */
function liveProbes(record: CircuitRecord, now: number): string[] {
  const live = record.state === 'half_open' && record.probe !== '' && record.probeUntil > now;
  return live ? record.probe.split(' ') : [];
}

function holds(record: CircuitRecord | undefined, token: string): boolean {
  return record?.state === 'half_open' && record.probe.split(' ').includes(token);
}

const closedRecord: CircuitRecord = { state: 'closed', failures: 0, openedAt: 0, probe: '', probeUntil: 0 };
const maxSeen = 10_000;

/** One breaker: its circuits in a store, with a memory store as the default and the fallback. */
export class Breaker {
  readonly #store: CircuitStore;
  readonly #local: MemoryCircuitStore;
  readonly #config: BreakerConfig;
  // The passes of calls that do not probe hold nothing of their own: one of each serves every call.
  readonly #plain: Pass;
  readonly #plainLocal: Pass;
  // Failure and probe ids must be unique across a fleet sharing a store: a process prefix, then a counter.
  readonly #origin = randomUUID();
  #ids = 0;
  // The last view of each circuit in a user's store, for `state` and `snapshot` while it answers
  // only with promises; a memory store answers at once, so it needs none.
  readonly #seen: Map<string, CircuitView> | undefined;

  constructor(store: CircuitStore | undefined, local: MemoryCircuitStore, config: BreakerConfig) {
    this.#store = store ?? local;
    this.#local = local;
    this.#config = config;
    this.#plain = { store: this.#store, probe: undefined };
    this.#plainLocal = { store: local, probe: undefined };
    this.#seen = store === undefined ? undefined : new Map();
  }

  /** The layer: admits the call, runs it, and judges every attempt it made. */
  async run(ctx: DispatchContext, next: Next): Promise<void> {
    const key = String(this.#config.keyOf(ctx));
    const admitted = this.#admit(ctx, key);
    const pass = isThenable(admitted) ? await admitted : admitted;
    const attemptsBefore = ctx.attempt;
    const { counts } = this.#config;
    // Every attempt made inside this layer reports its own envelope, whether a retry layer
    // sits inside (several attempts per pass) or outside (one attempt per pass).
    const judged: DispatchError[] = [];
    // Bookkeeping a user's store answers with promises; a memory store leaves this empty.
    const pending: Array<Promise<void>> = [];
    const unsubscribe = ctx.listen((event) => {
      if (event.type !== 'dispatch.attempt_failed') return;
      const { error } = event;
      if (!isDispatchError(error)) return;
      judged.push(error);
      if (counts(error)) track(pending, this.#judge(ctx, key, pass, 'failure'));
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
      const outcome = ctx.outcome?.ok === false ? ctx.outcome : undefined;
      const failure = failed ? toDispatchError(thrown, ctx.attempt) : outcome;
      if (failure === undefined) track(pending, this.#judge(ctx, key, pass, 'success'));
      // A failure made by a layer inside, after its attempts, is judged here; an attempt's own
      // failure was judged when it was reported.
      else if (!judged.includes(failure) && counts(failure))
        track(pending, this.#judge(ctx, key, pass, 'failure'));
    }
    if (pass.probe !== undefined && !pass.probe.decided)
      track(pending, this.#release(key, pass.store, pass.probe));
    // The call waits for its own bookkeeping (each store call has a deadline), so whoever sees
    // its outcome sees the circuit it left.
    if (pending.length > 0) await Promise.all(pending);
    if (failed) throw thrown;
  }

  /** Lets the call through, makes it a probe, or throws `circuit_open`. */
  #admit(ctx: DispatchContext, key: string): MaybePromise<Pass> {
    const store = this.#store;
    const local = this.#local;
    // A memory store holding nothing for the key is a closed circuit: no read, no clock.
    if (store === local && !local.has(key)) return this.#plain;
    return attempt(
      () =>
        step(store.read(key), (view) => this.#admitOn(ctx, key, store, this.#remember(key, view, store), 0)),
      (error) => {
        // A refusal is the store's answer; any other error is a user's store that could not
        // answer, so the local store admits the call.
        if (isDispatchError(error) && error.kind === 'circuit_open') throw error;
        return this.#admitOn(ctx, key, local, local.read(key), 0);
      },
    );
  }

  #admitOn(
    ctx: DispatchContext,
    key: string,
    store: CircuitStore,
    view: CircuitView,
    round: number,
  ): MaybePromise<Pass> {
    const { record, now } = view;
    const local = this.#local;
    if (record === undefined || record.state === 'closed') {
      // Failures the user's store could not count opened the local circuit: it decides until
      // it closes again.
      if (store !== local && local.has(key)) {
        const seen = local.read(key);
        if (!isClosed(seen.record)) return this.#admitOn(ctx, key, local, seen, 0);
      }
      return store === this.#store ? this.#plain : this.#plainLocal;
    }
    const { cooldownMs, halfOpenMaxCalls, probeLeaseMs } = this.#config;
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
    if (probes.length >= halfOpenMaxCalls || round > 1) {
      // No cooldown is left to report: the wait is for a running probe to decide.
      const busy = halfOpenMaxCalls === 1 ? 'probe call is' : 'probe calls are';
      throw new DispatchError(
        'circuit_open',
        `The circuit for "${key}" is half-open and its ${busy} busy; try again shortly`,
        { attempts: ctx.attempt },
      );
    }
    const token = this.#nextId();
    const claim: CircuitRecord = {
      ...record,
      state: 'half_open',
      probe: [...probes, token].join(' '),
      // A prober in this process cannot crash without ending its call, so a local claim needs no lease.
      probeUntil: store === local ? Infinity : now + probeLeaseMs,
    };
    return step(store.compareAndSet(key, view.version, claim), (result) => {
      this.#remember(key, result.view, store);
      // The write lost, maybe to a close that lets the call in: look again.
      if (!result.written) return this.#admitOn(ctx, key, store, result.view, round + 1);
      if (record.state === 'open') ctx.emit('circuit.half_open', { key });
      return { store, probe: { token, decided: false } };
    });
  }

  /** Writes one outcome; what the user's store cannot take, the local store counts. */
  #judge(ctx: DispatchContext, key: string, pass: Pass, outcome: Outcome): MaybePromise<void> {
    const local = this.#local;
    if (pass.store === local) return this.#record(ctx, key, pass, outcome);
    // Any success clears the local streak too, so it never opens on failures since answered.
    if (outcome === 'success') this.#clearStreak(key, local);
    return attempt(
      () => this.#record(ctx, key, pass, outcome),
      () => this.#record(ctx, key, this.#plainLocal, outcome),
    );
  }

  /** A probe's outcome decides its circuit; any other failure joins the streak, a success clears it. */
  #record(ctx: DispatchContext, key: string, { store, probe }: Pass, outcome: Outcome): MaybePromise<void> {
    if (probe !== undefined && !probe.decided) return this.#decide(ctx, key, store, probe, outcome, 0);
    if (outcome === 'success') return this.#clearStreak(key, store);
    return step(store.addFailure(key, this.#nextId(), this.#config.windowMs), (view) => {
      this.#remember(key, view, store);
      // A failure of a call that started before its circuit opened changes nothing: the next
      // write clears the window.
      if (isClosed(view.record) && view.failures >= this.#config.failureThreshold) {
        return this.#open(ctx, key, store, view, view.failures);
      }
    });
  }

  #clearStreak(key: string, store: CircuitStore): MaybePromise<void> {
    if (store === this.#local && !this.#local.has(key)) return;
    return step(store.read(key), (view) => {
      this.#remember(key, view, store);
      // Without a streak to clear, a user's store gets no write; the local store drops the
      // spent circuit, so it holds live ones only and an idle key reads no clock.
      if (!isClosed(view.record) || (view.failures === 0 && store !== this.#local)) return;
      const cleared = store.compareAndSet(key, view.version, view.record ?? closedRecord);
      return step(cleared, (result) => void this.#remember(key, result.view, store));
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

  // A probe decides only while its half-open period lasts; after it, it is judged as any call.
  #decide(
    ctx: DispatchContext,
    key: string,
    store: CircuitStore,
    probe: Probe,
    outcome: Outcome,
    round: number,
  ): MaybePromise<void> {
    probe.decided = true;
    return step(store.read(key), (view) => {
      this.#remember(key, view, store);
      if (!holds(view.record, probe.token)) return this.#record(ctx, key, { store, probe }, outcome);
      if (outcome === 'failure') return this.#open(ctx, key, store, view, 1);
      return step(store.compareAndSet(key, view.version, undefined), (result) => {
        this.#remember(key, result.view, store);
        if (result.written) ctx.emit('circuit.close', { key });
        // Another probe's claim moved the version: decide on the circuit as it is now.
        else if (round === 0) return this.#decide(ctx, key, store, probe, outcome, 1);
      });
    });
  }

  /** A probe that ended undecided (cancelled, say) gives its slot back for the next caller. */
  #release(key: string, store: CircuitStore, probe: Probe): MaybePromise<void> {
    probe.decided = true;
    const release = () =>
      step(store.read(key), (view) => {
        const { record } = view;
        if (record === undefined || !holds(record, probe.token)) return;
        const rest = record.probe.split(' ').filter((token) => token !== probe.token);
        const freed = {
          ...record,
          probe: rest.join(' '),
          probeUntil: rest.length === 0 ? 0 : record.probeUntil,
        };
        return step(
          store.compareAndSet(key, view.version, freed),
          (result) => void this.#remember(key, result.view, store),
        );
      });
    // A user's store that cannot answer frees the slot when the lease ends.
    return attempt(release, noop);
  }

  #nextId(): string {
    return `${this.#origin}:${++this.#ids}`;
  }

  #remember(key: string, view: CircuitView, store: CircuitStore): CircuitView {
    const seen = this.#seen;
    if (seen === undefined || store !== this.#store) return view;
    if (!seen.has(key) && seen.size >= maxSeen) seen.delete(seen.keys().next().value as string);
    seen.set(key, view);
    return view;
  }

  /** The state of the circuit for `key`, as `CircuitBreakerMiddleware.state` reports it. */
  state(key: string): CircuitState {
    const view = this.#viewNow(key);
    const shared = view === undefined ? undefined : this.#describe(view);
    if (shared !== undefined || this.#store === this.#local) return shared?.state ?? 'closed';
    return this.#describe(this.#local.read(key))?.state ?? 'closed';
  }

  /** Every circuit that is not plainly closed, as `CircuitBreakerMiddleware.snapshot` reports them. */
  snapshot(): Record<string, CircuitSnapshot> {
    const entries = new Map<string, CircuitSnapshot>();
    if (this.#store !== this.#local) {
      for (const [key, view] of this.#local.entries()) {
        const snapshot = this.#describe(view);
        if (snapshot !== undefined) entries.set(key, snapshot);
      }
    }
    let listed: Iterable<readonly [string, CircuitView]> = this.#seen ?? [];
    try {
      const all = this.#store.entries();
      if (!isThenable(all)) listed = all;
      else all.then(undefined, noop);
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
      if (!isThenable(read)) return read;
      read.then((view) => this.#remember(key, view, this.#store), noop);
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
      const retryAfterMs = Math.min(openedAt + cooldownMs - now, cooldownMs);
      return { state: 'open', failures, openedAt, retryAfterMs };
    }
    return { state: 'half_open', failures, openedAt, probes: liveProbes(record, now).length };
  }
}
