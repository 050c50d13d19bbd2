// The ONE place a fleet worker builds its dispatcher on the Redis stores. Once the built-in layers
// take a `store` (issue 10), replace the body of createFleetDispatcher with:
//   return createDispatcher([...defaultStack({ registry, idempotency: { store: stores.idempotency, ttlMs },
//     concurrency: { max: 8, store: stores.slots } }), ...]) plus circuitBreaker({ store: stores.circuits })
// and pass the budget as `dispatch(..., { budget })`.

import { createDispatcher, errorMapping, retry, timeout, toolLookup, type Dispatcher, type ToolRegistry } from '../../index.js';
import type { CircuitStore, IdempotencyStore, SlotStore, StoreBudget } from '../../src/stores.js';
import { storeBreaker, storeBudget, storeIdempotency, storeSlots, type IdempotencyHooks } from './interim-layers.js';

/** The stores a fleet worker shares with the others. */
export interface FleetStores {
  idempotency: IdempotencyStore;
  slots: SlotStore;
  circuits: CircuitStore;
  budget?: StoreBudget;
}

/** Builds a worker's dispatcher: idempotency, the fleet cap, retries, the breaker and the budget, all on the shared stores. */
export function createFleetDispatcher(
  registry: ToolRegistry,
  stores: FleetStores,
  options: { ttlMs: number; hooks?: IdempotencyHooks; onCircuitOpen?(key: string): void },
): Dispatcher {
  return createDispatcher([
    errorMapping(),
    toolLookup(registry),
    storeIdempotency(stores.idempotency, { ttlMs: options.ttlMs, ...(options.hooks ? { hooks: options.hooks } : {}) }),
    storeSlots(stores.slots),
    retry({ maxAttempts: 2, baseDelayMs: 10 }),
    storeBreaker(stores.circuits, {
      failureThreshold: 5,
      windowMs: 10_000,
      cooldownMs: 5_000,
      probeLeaseMs: 1_000,
      ...(options.onCircuitOpen ? { onOpen: options.onCircuitOpen } : {}),
    }),
    ...(stores.budget === undefined ? [] : [storeBudget(stores.budget)]),
    timeout({ defaultMs: 5_000 }),
  ]);
}
