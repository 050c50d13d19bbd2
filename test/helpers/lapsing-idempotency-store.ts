// A test fake: the memory idempotency store with leases that lapse `leaseMs` after their last
// renewal, as a store shared across processes has them (a crashed holder's key comes back), for
// tests of the idempotency layer's lease handling. It passes the stores contract beside the real
// stores (test/stores/memory.test.ts), lapse tests included, so what it shows holds for them.

import { systemClock, type Clock } from '../../src/clock.js';
import { DispatchError } from '../../src/errors.js';
import type { IdempotencyClaim, IdempotencyCompletion, IdempotencyLease } from '../../index.js';
import {
  memoryIdempotencyStore,
  type MemoryIdempotencyStore,
} from '../../middleware/idempotency/memory-store.js';

/** A lease of the fake: the memory store's, with an end and a signal that says when it was lost. */
class LapsingLease implements IdempotencyLease {
  readonly #controller = new AbortController();

  constructor(
    readonly inner: IdempotencyLease,
    readonly renewEveryMs: number,
    public endsAt: number,
  ) {}

  get key(): string {
    return this.inner.key;
  }
  get fence(): number {
    return this.inner.fence;
  }
  get token(): string {
    return this.inner.token;
  }
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  lose(): void {
    if (this.#controller.signal.aborted) return;
    this.#controller.abort(
      new DispatchError(
        'lease_lost',
        `The lease on idempotency key "${this.key}" was lost to another holder`,
      ),
    );
  }
}

/**
 * The memory idempotency store with finite leases: a lead lasts `leaseMs` unless renewed
 * (renew every third of it), and a lapsed key is free at the first look after it ended, as a
 * Redis key expires. A renewal or completion that finds its lease gone aborts the lease's signal.
 */
export function lapsingIdempotencyStore(options: { leaseMs: number; clock?: Clock }): MemoryIdempotencyStore {
  const { leaseMs, clock = systemClock } = options;
  const inner = memoryIdempotencyStore({ clock });
  const held = new Map<string, LapsingLease>();
  // The store's leases never lapse on their own: the fake releases a lapsed one when it looks.
  const lapse = (key: string) => {
    const lease = held.get(key);
    if (lease === undefined || clock.now() < lease.endsAt) return;
    held.delete(key);
    inner.release(lease.inner);
  };
  const leaseOf = (lease: IdempotencyLease) => lease as LapsingLease;
  return {
    claim: (key, fingerprint, claimOptions) => {
      lapse(key);
      const answer = inner.claim(key, fingerprint, claimOptions) as IdempotencyClaim;
      const now = clock.now();
      if (answer.kind === 'follow') {
        return { ...answer, leaseEndsInMs: (held.get(key)?.endsAt ?? now) - now };
      }
      if (answer.kind !== 'lead') return answer;
      let lease = held.get(key);
      if (lease?.inner !== answer.lease) {
        lease = new LapsingLease(answer.lease, leaseMs / 3, now + leaseMs);
        held.set(key, lease);
      }
      return { ...answer, lease };
    },
    renew: (lease) => {
      lapse(lease.key);
      const current = held.get(lease.key);
      if (current === undefined || current.token !== lease.token) {
        leaseOf(lease).lose();
        return false;
      }
      current.endsAt = clock.now() + leaseMs;
      return true;
    },
    complete: (lease, result, ttlMs, receipt) => {
      const mine = leaseOf(lease);
      if (held.get(lease.key) === mine) {
        // A completion past the lease's end, before anyone looked, still counts: it is late.
        held.delete(lease.key);
        const answer = inner.complete(mine.inner, result, ttlMs, receipt) as IdempotencyCompletion;
        return clock.now() >= mine.endsAt ? { kind: 'late' } : answer;
      }
      lapse(lease.key);
      const answer = inner.complete(mine.inner, result, ttlMs, receipt) as IdempotencyCompletion;
      if (answer.kind === 'lost') mine.lose();
      return answer;
    },
    release: (lease, receipt) => {
      lapse(lease.key);
      if (held.get(lease.key) === lease) held.delete(lease.key);
      return inner.release(leaseOf(lease).inner, receipt);
    },
    changed: (key, fence, waitOptions) => {
      lapse(key);
      const lease = held.get(key);
      const endsInMs = lease === undefined ? Infinity : Math.max(0, lease.endsAt - clock.now());
      return inner.changed(key, fence, {
        ...waitOptions,
        timeoutMs: Math.min(waitOptions.timeoutMs, endsInMs),
      });
    },
    peek: (key, fingerprint) => {
      lapse(key);
      return inner.peek?.(key, fingerprint) ?? { kind: 'none' };
    },
    putIfAbsent: (key, fingerprint, result, ttlMs) => {
      lapse(key);
      return inner.putIfAbsent?.(key, fingerprint, result, ttlMs) ?? 'exists';
    },
    size: () => inner.size(),
    receipts: inner.receipts,
  };
}
