// Store wrappers for the layers' store tests: every method answers with a promise (as a store
// across the network does), and a test can make any method fail or hold it.

import { DispatchError } from '../../index.js';
import type { CircuitStore, IdempotencyStore, SlotStore } from '../../index.js';

/** How a wrapped store misbehaves; tests flip these as they go. */
export interface Faults {
  /** Methods that reject with `store_unavailable`. */
  failing: Set<string>;
  /** Methods that answer `true` without reaching the store (a renewal lost on the way). */
  faked: Set<string>;
  /** Calls per method. */
  calls: Record<string, number>;
}

function wrap<T extends object>(
  store: T,
  methods: readonly (keyof T & string)[],
  sync: readonly string[] = [],
): T & { faults: Faults } {
  const faults: Faults = { failing: new Set(), faked: new Set(), calls: {} };
  const wrapped: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(store)) wrapped[name] = value;
  for (const method of methods) {
    const original = (store[method] as (...args: unknown[]) => unknown).bind(store);
    wrapped[method] = (...args: unknown[]) => {
      faults.calls[method] = (faults.calls[method] ?? 0) + 1;
      if (sync.includes(method)) return original(...args);
      if (faults.faked.has(method)) return Promise.resolve(true);
      if (faults.failing.has(method)) {
        return Promise.reject(new DispatchError('store_unavailable', `the store is down (${method})`));
      }
      return Promise.resolve().then(() => original(...args));
    };
  }
  return Object.assign(wrapped as T, { faults });
}

/** An idempotency store whose every method answers with a promise. */
export function asyncIdempotencyStore(store: IdempotencyStore) {
  return wrap(store, ['claim', 'renew', 'complete', 'release', 'changed']);
}

/** A slot store whose acquire, renew, release and load answer with promises (enqueue stays as is). */
export function asyncSlotStore(store: SlotStore) {
  return wrap(store, ['tryAcquire', 'renew', 'release', 'load', 'enqueue'], ['enqueue']);
}

/** A circuit store whose every method answers with a promise. */
export function asyncCircuitStore(store: CircuitStore) {
  return wrap(store, ['read', 'compareAndSet', 'addFailure', 'entries']);
}
