/**
 * The circuit breaker's one decision loop over a `CircuitStore`, with a memory store as fallback.
 * @module
 */

import { randomUUID } from 'node:crypto';
import { DispatchError, isDispatchError, toDispatchError } from '../../src/errors.js';
import type { CircuitRecord, CircuitStore, CircuitView } from './store.js';
import type { DispatchContext, Next } from '../../src/types.js';
import type { MemoryCircuitStore } from './memory-store.js';
import { CircuitViews, liveProbes, stateAt } from './snapshot.js';

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

function isClosed(record: CircuitRecord | undefined): boolean {
  return record === undefined || record.state === 'closed';
}

function holds(record: CircuitRecord | undefined, token: string): boolean {
  return record?.state === 'half_open' && record.probe.split(' ').includes(token);
}

const closedRecord: CircuitRecord = { state: 'closed', failures: 0, openedAt: 0, probe: '', probeUntil: 0 };

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
  /** What the breaker last saw of its circuits, for `state()` and `snapshot()`. */
  readonly views: CircuitViews;

  constructor(store: CircuitStore | undefined, local: MemoryCircuitStore, config: BreakerConfig) {
    this.#store = store ?? local;
    this.#local = local;
    this.#config = config;
    this.#plain = { store: this.#store, probe: undefined };
    this.#plainLocal = { store: local, probe: undefined };
    this.views = new CircuitViews(store, local, config.cooldownMs);
  }

  /** The layer: admits the call, runs it, and judges every attempt it made. */
  async run(ctx: DispatchContext, next: Next): Promise<void> {
    const key = String(this.#config.keyOf(ctx));
    // A circuit the memory store does not hold is closed: the call goes in with no store call to wait on.
    const pass = this.#idle(key) ? this.#plain : await this.#admit(ctx, key);
    const attemptsBefore = ctx.attempt;
    const { counts } = this.#config;
    // Every attempt made inside this layer reports its own envelope, whether a retry layer
    // sits inside (several attempts per pass) or outside (one attempt per pass).
    const judged: DispatchError[] = [];
    // The judgements under way: the call waits for them before it ends.
    const pending: Array<Promise<void>> = [];
    const unsubscribe = ctx.listen((event) => {
      if (event.type !== 'dispatch.attempt_failed') return;
      const { error } = event;
      if (!isDispatchError(error)) return;
      judged.push(error);
      if (counts(error)) pending.push(this.#judge(ctx, key, pass, 'failure'));
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
      // A success on a circuit nobody holds has no streak to clear.
      if (failure === undefined) {
        if (pass.probe !== undefined || !this.#idle(key))
          pending.push(this.#judge(ctx, key, pass, 'success'));
      }
      // A failure made by a layer inside, after its attempts, is judged here; an attempt's own
      // failure was judged when it was reported.
      else if (!judged.includes(failure) && counts(failure))
        pending.push(this.#judge(ctx, key, pass, 'failure'));
    }
    if (pass.probe !== undefined && !pass.probe.decided)
      pending.push(this.#release(key, pass.store, pass.probe));
    // The call waits for its own bookkeeping (each store call has a deadline), so whoever sees
    // its outcome sees the circuit it left.
    if (pending.length > 0) await Promise.all(pending);
    if (failed) throw thrown;
  }

  /** Lets the call through, makes it a probe, or throws `circuit_open`. */
  async #admit(ctx: DispatchContext, key: string): Promise<Pass> {
    const store = this.#store;
    const local = this.#local;
    try {
      const view = this.views.remember(key, await store.read(key), store);
      return await this.#admitOn(ctx, key, store, view);
    } catch (error) {
      // A refusal is the store's answer; any other error is a user's store that could not
      // answer, so the local store admits the call.
      if (isDispatchError(error) && error.kind === 'circuit_open') throw error;
      return this.#admitOn(ctx, key, local, local.read(key));
    }
  }

  async #admitOn(ctx: DispatchContext, key: string, store: CircuitStore, view: CircuitView): Promise<Pass> {
    const local = this.#local;
    const { cooldownMs, halfOpenMaxCalls, probeLeaseMs } = this.#config;
    for (let round = 0; ; round += 1) {
      const { now } = view;
      const record = view.record ?? closedRecord;
      switch (stateAt(record, now, cooldownMs)) {
        case 'closed': {
          // Failures the user's store could not count opened the local circuit: it decides until
          // it closes again.
          if (store !== local && local.has(key)) {
            const seen = local.read(key);
            if (!isClosed(seen.record)) return this.#admitOn(ctx, key, local, seen);
          }
          return store === this.#store ? this.#plain : this.#plainLocal;
        }
        case 'open': {
          const { openedAt } = record;
          // Capped, so a clock that stepped back never promises more than one cooldown.
          const retryAfterMs = Math.min(openedAt + cooldownMs - now, cooldownMs);
          throw new DispatchError(
            'circuit_open',
            `The circuit for "${key}" is open after repeated failures; try again in ${retryAfterMs} ms`,
            { attempts: ctx.attempt, retryAfterMs },
          );
        }
        case 'half_open': {
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
          const result = await store.compareAndSet(key, view.version, claim);
          this.views.remember(key, result.view, store);
          if (result.written) {
            if (record.state === 'open') ctx.emit('circuit.half_open', { key });
            return { store, probe: { token, decided: false } };
          }
          // The write lost, maybe to a close that lets the call in: look again.
          view = result.view;
        }
      }
    }
  }

  /** Writes one outcome; what the user's store cannot take, the local store counts. */
  async #judge(ctx: DispatchContext, key: string, pass: Pass, outcome: Outcome): Promise<void> {
    const local = this.#local;
    if (pass.store === local) return this.#record(ctx, key, pass, outcome);
    // Any success clears the local streak too, so it never opens on failures since answered.
    const cleared = outcome === 'success' ? this.#clearStreak(key, local) : undefined;
    // Started before any await: a probe is marked decided at once, so `run` gives back no slot.
    try {
      await this.#record(ctx, key, pass, outcome);
    } catch {
      await this.#record(ctx, key, this.#plainLocal, outcome);
    }
    await cleared;
  }

  /** A probe's outcome decides its circuit; any other failure joins the streak, a success clears it. */
  async #record(ctx: DispatchContext, key: string, { store, probe }: Pass, outcome: Outcome): Promise<void> {
    if (probe !== undefined && !probe.decided) return this.#decide(ctx, key, store, probe, outcome);
    if (outcome === 'success') return this.#clearStreak(key, store);
    const view = await store.addFailure(key, this.#nextId(), this.#config.windowMs);
    this.views.remember(key, view, store);
    // A failure of a call that started before its circuit opened changes nothing: the next
    // write clears the window.
    if (isClosed(view.record) && view.failures >= this.#config.failureThreshold) {
      await this.#open(ctx, key, store, view, view.failures);
    }
  }

  async #clearStreak(key: string, store: CircuitStore): Promise<void> {
    if (store === this.#local && !this.#local.has(key)) return;
    const view = this.views.remember(key, await store.read(key), store);
    // Without a streak to clear, a user's store gets no write; the local store drops the
    // spent circuit, so it holds live ones only and an idle key reads no clock.
    if (!isClosed(view.record) || (view.failures === 0 && store !== this.#local)) return;
    const result = await store.compareAndSet(key, view.version, view.record ?? closedRecord);
    this.views.remember(key, result.view, store);
  }

  async #open(
    ctx: DispatchContext,
    key: string,
    store: CircuitStore,
    view: CircuitView,
    failures: number,
  ): Promise<void> {
    const record: CircuitRecord = { state: 'open', failures, openedAt: view.now, probe: '', probeUntil: 0 };
    const result = await store.compareAndSet(key, view.version, record);
    this.views.remember(key, result.view, store);
    if (result.written) ctx.emit('circuit.open', { key, failures, cooldownMs: this.#config.cooldownMs });
  }

  // A probe decides only while its half-open period lasts; after it, it is judged as any call.
  async #decide(
    ctx: DispatchContext,
    key: string,
    store: CircuitStore,
    probe: Probe,
    outcome: Outcome,
  ): Promise<void> {
    probe.decided = true;
    // Two looks at most: a write that lost to another probe's claim decides on the circuit as it is now.
    for (let round = 0; round < 2; round += 1) {
      const view = this.views.remember(key, await store.read(key), store);
      if (!holds(view.record, probe.token)) return this.#record(ctx, key, { store, probe }, outcome);
      if (outcome === 'failure') return this.#open(ctx, key, store, view, 1);
      const result = await store.compareAndSet(key, view.version, undefined);
      this.views.remember(key, result.view, store);
      if (result.written) {
        ctx.emit('circuit.close', { key });
        return;
      }
    }
  }

  /** A probe that ended undecided (cancelled, say) gives its slot back for the next caller. */
  async #release(key: string, store: CircuitStore, probe: Probe): Promise<void> {
    probe.decided = true;
    try {
      const { record, version } = await store.read(key);
      if (record === undefined || !holds(record, probe.token)) return;
      const rest = record.probe.split(' ').filter((token) => token !== probe.token);
      const freed = {
        ...record,
        probe: rest.join(' '),
        probeUntil: rest.length === 0 ? 0 : record.probeUntil,
      };
      const result = await store.compareAndSet(key, version, freed);
      this.views.remember(key, result.view, store);
    } catch {
      // A user's store that cannot answer frees the slot when the lease ends.
    }
  }

  // A memory store holding nothing for the key holds a closed circuit with no streak.
  #idle(key: string): boolean {
    return this.#store === this.#local && !this.#local.has(key);
  }

  #nextId(): string {
    return `${this.#origin}:${++this.#ids}`;
  }
}
