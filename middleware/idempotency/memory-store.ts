// The idempotency layer's in-memory store: held keys and recent successes in this process, answered synchronously.

import { systemClock, type Clock } from '../../src/clock.js';
import { DispatchError } from '../../src/errors.js';
import { SuccessCache } from './success-cache.js';
import type {
  IdempotencyClaim,
  IdempotencyCompletion,
  IdempotencyLease,
  IdempotencyStore,
  StoreFingerprint,
} from '../../src/stores.js';

/** Options for `memoryIdempotencyStore`. */
export interface MemoryIdempotencyStoreOptions {
  /**
   * The most successes kept per TTL; the oldest is evicted first beyond it.
   * @default 10_000
   */
  maxEntries?: number;
  /**
   * How long a lead lasts without renewal, in milliseconds. A holder in this process cannot
   * crash without the store going too, so by default a lead lasts until it completes or
   * releases; a finite lease is for tests of lease handling.
   * @default Infinity
   */
  leaseMs?: number;
  /**
   * The time source for TTLs and leases, and the timers of `changed`.
   * @default systemClock
   */
  clock?: Clock;
}

/** The memory idempotency store, with a look at its size. */
export interface MemoryIdempotencyStore extends IdempotencyStore {
  /** Successes cached (expired ones not yet evicted included) and keys held right now. */
  size(): {
    /** Successes stored. */
    cached: number;
    /** Keys held by a leader. */
    inFlight: number;
  };
}

// Memory leases that never lapse share one signal: nothing can take them over.
const neverLost: AbortSignal = new AbortController().signal;

class MemoryLease implements IdempotencyLease {
  completed = false;
  readonly signal: AbortSignal;
  readonly #controller: AbortController | undefined;

  constructor(
    readonly key: string,
    readonly token: string,
    readonly fence: number,
    readonly renewEveryMs: number,
    // What it claimed with, for a completion after its lease lapsed and its entry went.
    readonly fingerprint: StoreFingerprint,
  ) {
    this.#controller = renewEveryMs < Infinity ? new AbortController() : undefined;
    this.signal = this.#controller?.signal ?? neverLost;
  }

  lose(): void {
    if (this.#controller === undefined || this.#controller.signal.aborted) return;
    this.#controller.abort(
      new DispatchError(
        'lease_lost',
        `The lease on idempotency key "${this.key}" was lost to another holder`,
      ),
    );
  }
}

/** A held key: its lease, its fingerprint, and the followers waiting for it to change. */
class Held {
  readonly waiters = new Set<() => void>();

  constructor(
    readonly lease: MemoryLease,
    public expiresAt: number,
  ) {}

  wake(): void {
    for (const waiter of this.waiters) waiter();
    this.waiters.clear();
  }
}

/**
 * Makes the in-memory idempotency store: today's success cache (bounded, expired in completion
 * order) and held keys, answering every method synchronously. Results are kept by reference,
 * never copied or serialised (a store shared across processes needs JSON; see docs/scale-out.md).
 *
 * @example
 * const store = memoryIdempotencyStore({ maxEntries: 50_000 });
 * const claim = store.claim('order-1', 'v1:1a:2b'); // { kind: 'lead', lease }
 */
export function memoryIdempotencyStore(options: MemoryIdempotencyStoreOptions = {}): MemoryIdempotencyStore {
  const { maxEntries = 10_000, leaseMs = Infinity, clock = systemClock } = options;
  if (!Number.isInteger(maxEntries) || maxEntries < 1) {
    throw new TypeError(`maxEntries must be an integer >= 1, got ${String(maxEntries)}`);
  }
  if (typeof leaseMs !== 'number' || !(leaseMs > 0)) {
    throw new TypeError(`leaseMs must be a number > 0 or Infinity, got ${String(leaseMs)}`);
  }
  if (typeof clock?.now !== 'function' || typeof clock.setTimeout !== 'function') {
    throw new TypeError('clock must have now, setTimeout and clearTimeout');
  }
  const renewEveryMs = leaseMs < Infinity ? leaseMs / 3 : Infinity;
  const epoch = clock.now();
  // One cache per TTL the layer asks for: normally exactly one.
  const caches = new Map<number, SuccessCache>();
  const held = new Map<string, Held>();
  let fences = 0;
  let tokens = 0;

  const cached = (key: string, now: number) => {
    for (const [ttlMs, cache] of caches) {
      const entry = cache.get(key, now);
      if (entry !== undefined) return { entry, expiresInMs: ttlMs - (now - epoch - entry.completedMs) };
    }
    return undefined;
  };

  // A lapsed lease frees its key at the first look after it ended, as a Redis key expires.
  const live = (key: string, now: number): Held | undefined => {
    const entry = held.get(key);
    if (entry === undefined || now < entry.expiresAt) return entry;
    held.delete(key);
    entry.wake();
    return undefined;
  };

  const remember = (lease: MemoryLease, result: unknown, ttlMs: number, now: number) => {
    let cache = caches.get(ttlMs);
    if (cache === undefined) {
      cache = new SuccessCache(ttlMs, maxEntries, epoch);
      caches.set(ttlMs, cache);
    }
    cache.set(lease.key, lease.fingerprint, result, now);
  };

  const claim = (
    key: string,
    fingerprint: StoreFingerprint,
    claimOptions?: { token?: string },
  ): IdempotencyClaim => {
    const now = clock.now();
    const hit = cached(key, now);
    if (hit !== undefined) {
      if (hit.entry.fingerprint !== fingerprint) return conflict;
      return { kind: 'hit', result: hit.entry.result, expiresInMs: hit.expiresInMs };
    }
    const entry = live(key, now);
    const token = claimOptions?.token;
    if (entry !== undefined) {
      if (entry.lease.fingerprint !== fingerprint) return conflict;
      if (token !== undefined && entry.lease.token === token) return { kind: 'lead', lease: entry.lease };
      return { kind: 'follow', fence: entry.lease.fence, leaseEndsInMs: entry.expiresAt - now };
    }
    const lease = new MemoryLease(key, token ?? `m${++tokens}`, ++fences, renewEveryMs, fingerprint);
    held.set(key, new Held(lease, now + leaseMs));
    return { kind: 'lead', lease };
  };

  const renew = (lease: IdempotencyLease): boolean => {
    const now = clock.now();
    const entry = live(lease.key, now);
    if (entry === undefined || entry.lease.token !== lease.token) {
      (lease as MemoryLease).lose?.();
      return false;
    }
    entry.expiresAt = now + leaseMs;
    return true;
  };

  const complete = (lease: IdempotencyLease, result: unknown, ttlMs: number): IdempotencyCompletion => {
    if (!(ttlMs > 0)) throw new TypeError(`ttlMs must be a number > 0, got ${String(ttlMs)}`);
    const now = clock.now();
    const mine = lease as MemoryLease;
    if (mine.completed) return stored;
    const entry = held.get(lease.key);
    if (entry !== undefined && entry.lease.token === lease.token) {
      const late = now >= entry.expiresAt;
      held.delete(lease.key);
      remember(mine, result, ttlMs, now);
      mine.completed = true;
      entry.wake();
      return late ? { kind: 'late' } : stored;
    }
    const other = entry === undefined ? undefined : live(lease.key, now);
    const hit = cached(lease.key, now);
    if (other === undefined && hit === undefined) {
      // The lease lapsed and nobody claimed the key since: the success still counts.
      remember(mine, result, ttlMs, now);
      mine.completed = true;
      return { kind: 'late' };
    }
    mine.lose();
    return hit === undefined ? { kind: 'lost' } : { kind: 'lost', winner: { result: hit.entry.result } };
  };

  const release = (lease: IdempotencyLease): void => {
    const entry = held.get(lease.key);
    if (entry === undefined || entry.lease.token !== lease.token) return;
    held.delete(lease.key);
    entry.wake();
  };

  const changed = (
    key: string,
    fence: number,
    waitOptions: { signal: AbortSignal; timeoutMs: number },
  ): void | Promise<void> => {
    const { signal, timeoutMs } = waitOptions;
    const entry = live(key, clock.now());
    if (entry === undefined || entry.lease.fence !== fence || signal.aborted) return;
    return new Promise<void>((resolve) => {
      let handle: unknown;
      const done = () => {
        entry.waiters.delete(done);
        signal.removeEventListener('abort', done);
        if (handle !== undefined) clock.clearTimeout(handle);
        resolve();
      };
      entry.waiters.add(done);
      signal.addEventListener('abort', done, { once: true });
      const waitMs = Math.min(timeoutMs, entry.expiresAt - clock.now());
      if (waitMs < Infinity) {
        handle = clock.setTimeout(done, Math.max(0, waitMs));
        (handle as { unref?: () => void } | undefined)?.unref?.();
      }
    });
  };

  return {
    claim,
    renew,
    complete,
    release,
    changed,
    size: () => {
      let count = 0;
      for (const cache of caches.values()) count += cache.size;
      return { cached: count, inFlight: held.size };
    },
  };
}

const conflict: IdempotencyClaim = { kind: 'conflict' };
const stored: IdempotencyCompletion = { kind: 'stored' };
