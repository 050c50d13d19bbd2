// The ONE place a fleet worker builds its dispatcher on the Redis stores: the built-in layers,
// each given its store (the breaker in front of the default stack, the budget on every call).

import {
  circuitBreaker,
  createDispatcher,
  defaultStack,
  type DispatchEvent,
  type Dispatcher,
  type ToolRegistry,
} from '../../index.js';
import type { CircuitStore, IdempotencyStore, SlotStore, StoreBudget } from '../../index.js';

/** The stores a fleet worker shares with the others. */
export interface FleetStores {
  idempotency: IdempotencyStore;
  slots: SlotStore;
  circuits: CircuitStore;
  budget?: StoreBudget;
}

/** What the worker logs besides outcomes, from the layers' events. */
export interface IdempotencyHooks {
  /** The lease of `key` was lost while this process led it (the handler's signal aborted). */
  leaseLost?(key: string, token: string): void;
  /** A store call failed (the call goes on or fails closed, as the layer decides). */
  storeError?(key: string, operation: string, error: unknown): void;
  /** This process's breaker opened the circuit `key` (for every process sharing the store). */
  circuitOpened?(key: string): void;
  /** The call `callId` lost its fleet slot's lease while it ran: the pool may be over its cap by one. */
  slotLost?(callId: string, pool: string): void;
}

/** Builds a worker's dispatcher: idempotency, the fleet cap, retries, the breaker and the budget, all on the shared stores. */
export function createFleetDispatcher(
  registry: ToolRegistry,
  stores: FleetStores,
  options: { ttlMs: number; hooks?: IdempotencyHooks; onCircuitOpen?(key: string): void },
): Dispatcher {
  const { hooks, onCircuitOpen } = options;
  const onEvent = (event: DispatchEvent) => {
    if (event.type === 'idempotency.lease_lost') hooks?.leaseLost?.(event.key, String(event.fence));
    else if (event.type === 'idempotency.store_error')
      hooks?.storeError?.(event.key, event.operation, event.error);
    else if (event.type === 'concurrency.lease_lost') hooks?.slotLost?.(event.callId, event.pool);
    else if (event.type === 'circuit.open') {
      hooks?.circuitOpened?.(event.key);
      onCircuitOpen?.(event.key);
    }
  };
  const dispatcher = createDispatcher(
    [
      circuitBreaker({
        store: stores.circuits,
        failureThreshold: 5,
        windowMs: 10_000,
        cooldownMs: 5_000,
        probeLeaseMs: 1_000,
      }),
      ...defaultStack({
        registry,
        idempotency: { store: stores.idempotency, ttlMs: options.ttlMs },
        concurrency: { max: 8, store: stores.slots },
        retry: { maxAttempts: 2, baseDelayMs: 10 },
        timeout: { defaultMs: 5_000 },
      }),
    ],
    { onEvent },
  );
  const { budget } = stores;
  if (budget === undefined) return dispatcher;
  return {
    ...dispatcher,
    dispatch: (name, args, dispatchOptions) =>
      dispatcher.dispatch(name, args, { budget, ...dispatchOptions }),
    dispatchJson: (name, argsJson, dispatchOptions) =>
      dispatcher.dispatchJson(name, argsJson, { budget, ...dispatchOptions }),
  };
}
