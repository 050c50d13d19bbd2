// The stores contract against the in-memory stores, on a manual clock; and against the memory
// idempotency store with lapsing leases, the test fake the layer's lease tests run on.

import { createBudget } from '../../src/budget.js';
import type { Clock } from '../../src/clock.js';
import type { StoreBudget } from '../../src/stores.js';
import { memoryCircuitStore } from '../../middleware/circuit-breaker/memory-store.js';
import { memorySlotStore } from '../../middleware/concurrency-limit/memory-store.js';
import { memoryIdempotencyStore } from '../../middleware/idempotency/memory-store.js';
import { memoryApprovalStore } from '../../middleware/approval-gate/memory-store.js';
import { lapsingIdempotencyStore } from '../helpers/lapsing-idempotency-store.js';
import { storeContract, type StoreSubject } from './contract.js';

/** A clock that moves only when told, firing its timers in order, microtasks settled between. */
class ManualClock implements Clock {
  #now = 1_000_000;
  #timers = new Map<number, { at: number; callback: () => void }>();
  #ids = 0;

  now = (): number => this.#now;
  setTimeout = (callback: () => void, ms: number): unknown => {
    const id = ++this.#ids;
    this.#timers.set(id, { at: this.#now + ms, callback });
    return id;
  };
  clearTimeout = (handle: unknown): void => {
    this.#timers.delete(handle as number);
  };

  async advance(ms: number): Promise<void> {
    const end = this.#now + ms;
    for (;;) {
      await settle();
      let next: [number, { at: number; callback: () => void }] | undefined;
      for (const entry of this.#timers)
        if (entry[1].at <= end && (next === undefined || entry[1].at < next[1].at)) next = entry;
      if (next === undefined) break;
      this.#timers.delete(next[0]);
      this.#now = Math.max(this.#now, next[1].at);
      next[1].callback();
    }
    this.#now = end;
    await settle();
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

let budgets = 0;

// The memory idempotency store's leads last until they end; the fake's lapse after `leaseMs`.
function memorySubject(leases: 'never lapse' | 'lapse'): StoreSubject {
  const clock = new ManualClock();
  return {
    idempotency: ({ leaseMs }) => {
      const store =
        leases === 'lapse' ? lapsingIdempotencyStore({ leaseMs, clock }) : memoryIdempotencyStore({ clock });
      return [store, store];
    },
    slots: ({ max }) => {
      const store = memorySlotStore({ max });
      return [store, store];
    },
    circuits: () => {
      const store = memoryCircuitStore({ clock });
      return [store, store];
    },
    approvals: () => {
      const store = memoryApprovalStore({ clock });
      return [store, store];
    },
    budget: async ({ limit }) => {
      const budget = createBudget(limit);
      const id = `b${++budgets}`;
      const shared: StoreBudget & { id: string } = {
        id,
        get remaining() {
          return budget.remaining;
        },
        get limit() {
          return budget.limit;
        },
        tryConsume: (units?: number) => budget.tryConsume(units),
      };
      return shared;
    },
    wait: (ms) => clock.advance(ms),
    timers: clock,
    can: { idempotencyLeases: leases === 'lapse', slotLeases: false, resend: false },
  };
}

storeContract('memory', () => memorySubject('never lapse'));
storeContract('memory with lapsing leases (test fake)', () => memorySubject('lapse'));
