/**
 * The circuit breaker's in-memory store: versioned circuit records and failure windows, answered
 * synchronously. It is the breaker's store when none is given, and its fallback when one fails.
 * @module
 */

import { systemClock, type Clock } from '../../src/clock.js';
import type { CircuitRecord, CircuitStore, CircuitView } from './store.js';
import { optionKeys, optionsObject } from '../kit.js';

/** A `CircuitStore` that answers every method at once, without a promise. */
export interface MemoryCircuitStore extends CircuitStore {
  /** Whether it holds anything for `key`: without, the circuit is closed with no failures. */
  has(key: string): boolean;
  read(key: string): CircuitView;
  compareAndSet(
    key: string,
    version: number,
    next: CircuitRecord | undefined,
  ): {
    /** Whether the write landed. */
    readonly written: boolean;
    /** The circuit after the write, or as it is when the write did not land. */
    readonly view: CircuitView;
  };
  addFailure(key: string, failureId: string, windowMs: number): CircuitView;
  entries(): Iterable<readonly [string, CircuitView]>;
}

/** Options for `memoryCircuitStore`. */
export interface MemoryCircuitStoreOptions {
  /** The time source of the store's timebase (`CircuitView.now`). @default systemClock */
  clock?: Pick<Clock, 'now'>;
}

const memoryCircuitStoreOptionKeys = optionKeys<MemoryCircuitStoreOptions>({ clock: true });

// Bounds one circuit's failure window however long `windowMs` is: a window this full has
// long passed any sensible threshold.
const maxFailures = 10_000;

class Circuit {
  record: CircuitRecord | undefined = undefined;
  version = 0;
  windowMs = Infinity;
  // Failure ids by the time they were recorded, oldest first (insertion order).
  readonly failures = new Map<string, number>();

  trim(now: number): void {
    for (const [id, at] of this.failures) {
      if (now - at <= this.windowMs && this.failures.size <= maxFailures) return;
      this.failures.delete(id);
    }
  }
}

/**
 * Makes the in-memory circuit store, answering synchronously and holding live circuits only.
 *
 * @example
 * const circuits = memoryCircuitStore();
 * const view = circuits.read('search.web'); // { record: undefined, version: 0, failures: 0, now }
 */
export function memoryCircuitStore(options: MemoryCircuitStoreOptions = {}): MemoryCircuitStore {
  const { clock = systemClock } = optionsObject('memoryCircuitStore', options, memoryCircuitStoreOptionKeys);
  if (typeof clock?.now !== 'function') throw new TypeError('clock must have now()');
  const circuits = new Map<string, Circuit>();

  const view = (circuit: Circuit | undefined, now: number): CircuitView => {
    if (circuit === undefined) return { record: undefined, version: 0, failures: 0, now };
    circuit.trim(now);
    return { record: circuit.record, version: circuit.version, failures: circuit.failures.size, now };
  };

  return {
    has: (key: string) => circuits.has(key),
    read: (key: string) => view(circuits.get(key), clock.now()),
    compareAndSet: (key: string, version: number, next: CircuitRecord | undefined) => {
      const now = clock.now();
      const circuit = circuits.get(key);
      if ((circuit?.version ?? 0) !== version) return { written: false, view: view(circuit, now) };
      // A write is in-process and synchronous, so nobody can hold the version a dropped
      // circuit restarts from: no write can land on a stale read.
      if (next === undefined || (next.state === 'closed' && next.failures === 0)) {
        circuits.delete(key);
        return { written: true, view: { record: next, version: 0, failures: 0, now } };
      }
      const target = circuit ?? new Circuit();
      if (circuit === undefined) circuits.set(key, target);
      target.record = { ...next };
      target.version += 1;
      target.failures.clear();
      return { written: true, view: view(target, now) };
    },
    addFailure: (key: string, failureId: string, windowMs: number) => {
      const now = clock.now();
      let circuit = circuits.get(key);
      if (circuit === undefined) {
        circuit = new Circuit();
        circuits.set(key, circuit);
      }
      circuit.windowMs = windowMs;
      if (!circuit.failures.has(failureId)) circuit.failures.set(failureId, now);
      return view(circuit, now);
    },
    entries: () => {
      const now = clock.now();
      const list: Array<readonly [string, CircuitView]> = [];
      for (const [key, circuit] of circuits) {
        const seen = view(circuit, now);
        if (seen.record === undefined && seen.failures === 0) circuits.delete(key);
        else list.push([key, seen]);
      }
      return list;
    },
  };
}
