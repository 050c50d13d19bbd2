/**
 * The idempotency layer's in-memory store: held keys and recent successes in this process, answered synchronously.
 * @module
 */

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
  const keys = new MemoryKeys(maxEntries, leaseMs, clock);
  // Own properties, not prototype methods: a store is passed around as a bag of functions.
  return {
    claim: (key, fingerprint, claimOptions) => keys.claim(key, fingerprint, claimOptions),
    renew: (lease) => keys.renew(lease),
    complete: (lease, result, ttlMs) => keys.complete(lease, result, ttlMs),
    release: (lease) => keys.release(lease),
    changed: (key, fence, waitOptions) => keys.changed(key, fence, waitOptions),
    size: () => keys.size(),
  };
}

/** The store's state: one success cache per TTL and the held keys. */
class MemoryKeys {
  private readonly renewEveryMs: number;
  private readonly epoch: number;
  // One cache per TTL the layer asks for: normally exactly one.
  private readonly caches = new Map<number, SuccessCache>();
  private readonly held = new Map<string, Held>();
  private fences = 0;
  private tokens = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly leaseMs: number,
    private readonly clock: Clock,
  ) {
    this.renewEveryMs = leaseMs < Infinity ? leaseMs / 3 : Infinity;
    this.epoch = clock.now();
  }

  claim(key: string, fingerprint: StoreFingerprint, claimOptions?: { token?: string }): IdempotencyClaim {
    const now = this.clock.now();
    const hit = this.cached(key, now);
    if (hit !== undefined) {
      if (hit.entry.fingerprint !== fingerprint) return conflict;
      return { kind: 'hit', result: hit.entry.result, expiresInMs: hit.expiresInMs };
    }
    const entry = this.live(key, now);
    const token = claimOptions?.token;
    if (entry !== undefined) {
      if (entry.lease.fingerprint !== fingerprint) return conflict;
      if (token !== undefined && entry.lease.token === token) return { kind: 'lead', lease: entry.lease };
      return { kind: 'follow', fence: entry.lease.fence, leaseEndsInMs: entry.expiresAt - now };
    }
    const lease = new MemoryLease(
      key,
      token ?? `m${++this.tokens}`,
      ++this.fences,
      this.renewEveryMs,
      fingerprint,
    );
    this.held.set(key, new Held(lease, now + this.leaseMs));
    return { kind: 'lead', lease };
  }

  renew(lease: IdempotencyLease): boolean {
    const now = this.clock.now();
    const entry = this.live(lease.key, now);
    if (entry === undefined || entry.lease.token !== lease.token) {
      (lease as MemoryLease).lose?.();
      return false;
    }
    entry.expiresAt = now + this.leaseMs;
    return true;
  }

  complete(lease: IdempotencyLease, result: unknown, ttlMs: number): IdempotencyCompletion {
    if (!(ttlMs > 0)) throw new TypeError(`ttlMs must be a number > 0, got ${String(ttlMs)}`);
    const now = this.clock.now();
    const mine = lease as MemoryLease;
    if (mine.completed) return stored;
    const entry = this.held.get(lease.key);
    if (entry !== undefined && entry.lease.token === lease.token) {
      const late = now >= entry.expiresAt;
      this.held.delete(lease.key);
      this.remember(mine, result, ttlMs, now);
      mine.completed = true;
      entry.wake();
      return late ? { kind: 'late' } : stored;
    }
    const other = entry === undefined ? undefined : this.live(lease.key, now);
    const hit = this.cached(lease.key, now);
    if (other === undefined && hit === undefined) {
      // The lease lapsed and nobody claimed the key since: the success still counts.
      this.remember(mine, result, ttlMs, now);
      mine.completed = true;
      return { kind: 'late' };
    }
    mine.lose();
    return hit === undefined ? { kind: 'lost' } : { kind: 'lost', winner: { result: hit.entry.result } };
  }

  release(lease: IdempotencyLease): void {
    const entry = this.held.get(lease.key);
    if (entry === undefined || entry.lease.token !== lease.token) return;
    this.held.delete(lease.key);
    entry.wake();
  }

  changed(
    key: string,
    fence: number,
    waitOptions: { signal: AbortSignal; timeoutMs: number },
  ): void | Promise<void> {
    const { signal, timeoutMs } = waitOptions;
    const { clock } = this;
    const entry = this.live(key, clock.now());
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
  }

  size(): { cached: number; inFlight: number } {
    let count = 0;
    for (const cache of this.caches.values()) count += cache.size;
    return { cached: count, inFlight: this.held.size };
  }

  private cached(key: string, now: number) {
    for (const [ttlMs, cache] of this.caches) {
      const entry = cache.get(key, now);
      if (entry !== undefined) return { entry, expiresInMs: ttlMs - (now - this.epoch - entry.completedMs) };
    }
    return undefined;
  }

  // A lapsed lease frees its key at the first look after it ended, as a Redis key expires.
  private live(key: string, now: number): Held | undefined {
    const entry = this.held.get(key);
    if (entry === undefined || now < entry.expiresAt) return entry;
    this.held.delete(key);
    entry.wake();
    return undefined;
  }

  private remember(lease: MemoryLease, result: unknown, ttlMs: number, now: number): void {
    let cache = this.caches.get(ttlMs);
    if (cache === undefined) {
      cache = new SuccessCache(ttlMs, this.maxEntries, this.epoch);
      this.caches.set(ttlMs, cache);
    }
    cache.set(lease.key, lease.fingerprint, result, now);
  }
}

const conflict: IdempotencyClaim = { kind: 'conflict' };
const stored: IdempotencyCompletion = { kind: 'stored' };
