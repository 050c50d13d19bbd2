/**
 * What a circuit breaker reports of its circuits: their states and snapshots, read at once from
 * the store that answers synchronously, else from the views it last saw.
 * @module
 */

import type { MaybePromise } from '../../src/stores.js';
import type { CircuitRecord, CircuitStore, CircuitView } from './store.js';
import { isThenable, noop } from '../internal-kit.js';
import type { MemoryCircuitStore } from './memory-store.js';

/** Where a circuit stands: `closed` lets calls through, `open` turns them away, `half_open` lets probes through. */
export type CircuitState = 'closed' | 'open' | 'half_open';

/** One circuit as `snapshot()` reports it. */
export interface CircuitSnapshot {
  /** The state `state(key)` reports: an open circuit whose cooldown has elapsed is `half_open`. */
  state: CircuitState;
  /**
   * Counted failures: while closed, those of the current streak still within `windowMs` of
   * now; while open or half-open, those that opened it (1 when a probe failed).
   */
  failures: number;
  /** When the circuit last opened, in milliseconds since the epoch; absent while closed. */
  openedAt?: number;
  /** Milliseconds left in the cooldown; present only while open. */
  retryAfterMs?: number;
  /** Probe calls running right now; present only while half-open. */
  probes?: number;
}

/** Where a circuit stands at `now`: an open circuit whose cooldown has passed lets probes in. */
export function stateAt(record: CircuitRecord, now: number, cooldownMs: number): CircuitState {
  if (record.state === 'closed') return 'closed';
  return record.state === 'open' && now < record.openedAt + cooldownMs ? 'open' : 'half_open';
}

/** The probe tokens of a half-open record whose lease has not ended. */
export function liveProbes(record: CircuitRecord, now: number): string[] {
  const live = record.state === 'half_open' && record.probe !== '' && record.probeUntil > now;
  return live ? record.probe.split(' ') : [];
}

// `state()` and `snapshot()` answer at once: a promised answer only updates what was seen.
function answerNow<T>(answer: MaybePromise<T>, later: (value: T) => unknown): T | undefined {
  if (!isThenable(answer)) return answer;
  answer.then(later, noop);
  return undefined;
}

const maxSeen = 10_000;

/** A breaker's look at its circuits, for `CircuitBreakerLayer.state` and `.snapshot`. */
export class CircuitViews {
  readonly #store: CircuitStore;
  readonly #local: MemoryCircuitStore;
  readonly #cooldownMs: number;
  // The last view of each circuit in a user's store, while it answers only with promises; a
  // memory store answers at once, so it needs none.
  readonly #seen: Map<string, CircuitView> | undefined;

  constructor(store: CircuitStore | undefined, local: MemoryCircuitStore, cooldownMs: number) {
    this.#store = store ?? local;
    this.#local = local;
    this.#cooldownMs = cooldownMs;
    this.#seen = store === undefined ? undefined : new Map();
  }

  /** Keeps `view` of the circuit for `key`, if it came from the user's store; returns it. */
  remember(key: string, view: CircuitView, store: CircuitStore): CircuitView {
    const seen = this.#seen;
    if (seen === undefined || store !== this.#store) return view;
    if (!seen.has(key) && seen.size >= maxSeen) seen.delete(seen.keys().next().value as string);
    seen.set(key, view);
    return view;
  }

  /** The state of the circuit for `key` (`closed` for a key never seen). */
  state(key: string): CircuitState {
    const view = this.#viewNow(key);
    const shared = view === undefined ? undefined : this.#describe(view);
    if (shared !== undefined || this.#store === this.#local) return shared?.state ?? 'closed';
    return this.#describe(this.#local.read(key))?.state ?? 'closed';
  }

  /** Every circuit that is not plainly closed, by key. */
  snapshot(): Record<string, CircuitSnapshot> {
    const entries = new Map<string, CircuitSnapshot>();
    if (this.#store !== this.#local) {
      for (const [key, view] of this.#local.entries()) {
        const snapshot = this.#describe(view);
        if (snapshot !== undefined) entries.set(key, snapshot);
      }
    }
    let listed: Iterable<readonly [string, CircuitView]> | undefined;
    try {
      listed = answerNow(this.#store.entries(), noop);
    } catch {
      // What was seen will do.
    }
    for (const [key, view] of listed ?? this.#seen ?? []) {
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
      const read = answerNow(this.#store.read(key), (view) => this.remember(key, view, this.#store));
      if (read !== undefined) return read;
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
    const cooldownMs = this.#cooldownMs;
    if (stateAt(record, now, cooldownMs) === 'open') {
      const retryAfterMs = Math.min(openedAt + cooldownMs - now, cooldownMs);
      return { state: 'open', failures, openedAt, retryAfterMs };
    }
    return { state: 'half_open', failures, openedAt, probes: liveProbes(record, now).length };
  }
}
