/**
 * The idempotency layer's in-memory store: held keys and recent successes in this process, answered synchronously.
 * @module
 */

import { systemClock, type Clock } from '../../src/clock.js';
import { DispatchError } from '../../src/errors.js';
import { optionKeys, optionsObject, requireClock, requireInteger, requireNumber } from '../kit.js';
import { memoryReceiptStore, type MemoryReceiptStore } from './receipts.js';
import { SuccessCache, type CachedSuccess } from './success-cache.js';
import type {
  IdempotencyClaim,
  IdempotencyCompletion,
  IdempotencyLease,
  IdempotencyPeek,
  IdempotencyStore,
  Receipt,
  StoreFingerprint,
} from './store.js';

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
   * How long a key's receipt is kept, in milliseconds (see `receipts`, which keeps at most
   * 10 000).
   * @default 86_400_000 (24 h)
   */
  receiptTtlMs?: number;
  /**
   * The time source for TTLs and leases, and the timers of `changed`.
   * @default systemClock
   */
  clock?: Clock;
}

const memoryIdempotencyStoreOptionKeys = optionKeys<MemoryIdempotencyStoreOptions>({
  maxEntries: true,
  leaseMs: true,
  receiptTtlMs: true,
  clock: true,
});

/** The memory idempotency store, with a look at its size. */
export interface MemoryIdempotencyStore extends IdempotencyStore {
  /** Successes cached (expired ones not yet evicted included) and keys held right now. */
  size(): {
    /** Successes stored. */
    cached: number;
    /** Keys held by a leader. */
    inFlight: number;
  };
  /** The receipts of this store's keys: `running` from a lead's claim, then how it settled. */
  readonly receipts: MemoryReceiptStore;
}

// Memory leases that never lapse share one signal: nothing can take them over.
const neverLost: AbortSignal = new AbortController().signal;

/** A held key's lease, with when it ends and the followers waiting for it to change. */
class MemoryLease implements IdempotencyLease {
  completed = false;
  readonly signal: AbortSignal;
  // Made when a follower first waits: most leads end with nobody waiting.
  waiters: Set<() => void> | undefined;
  readonly #controller: AbortController | undefined;
  #token: string | undefined;

  constructor(
    readonly key: string,
    readonly fence: number,
    readonly renewEveryMs: number,
    // What it claimed with, for a completion after its lease lapsed and its entry went.
    readonly fingerprint: StoreFingerprint,
    public expiresAt: number,
    token: string | undefined,
  ) {
    this.#token = token;
    this.#controller = renewEveryMs < Infinity ? new AbortController() : undefined;
    this.signal = this.#controller?.signal ?? neverLost;
  }

  // Fences are unique in a store, so a token made from one is too; made only when asked for.
  get token(): string {
    this.#token ??= `m${this.fence}`;
    return this.#token;
  }

  holds(lease: IdempotencyLease): boolean {
    return lease === this || lease.token === this.token;
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

  wake(): void {
    if (this.waiters === undefined) return;
    for (const waiter of this.waiters) waiter();
    this.waiters = undefined;
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
  const {
    maxEntries = 10_000,
    leaseMs = Infinity,
    receiptTtlMs,
    clock = systemClock,
  } = optionsObject('memoryIdempotencyStore', options, memoryIdempotencyStoreOptionKeys);
  requireInteger('maxEntries', maxEntries, 1);
  requireNumber('leaseMs', leaseMs, 0, { exclusive: true, allowInfinity: true });
  requireClock(clock, ['now', 'setTimeout', 'clearTimeout']);
  // Receipts keep their own bound (memoryReceiptStore's default), not the success cache's.
  const receipts = memoryReceiptStore({
    clock,
    ...(receiptTtlMs === undefined ? {} : { ttlMs: receiptTtlMs }),
  });
  const keys = new MemoryKeys(maxEntries, leaseMs, clock, receipts);
  // Own properties, not prototype methods: a store is passed around as a bag of functions.
  return {
    claim: (key, fingerprint, claimOptions) => keys.claim(key, fingerprint, claimOptions),
    renew: (lease) => keys.renew(lease),
    complete: (lease, result, ttlMs, receipt) => keys.complete(lease, result, ttlMs, receipt),
    release: (lease, receipt) => keys.release(lease, receipt),
    changed: (key, fence, waitOptions) => keys.changed(key, fence, waitOptions),
    peek: (key, fingerprint) => keys.peek(key, fingerprint),
    putIfAbsent: (key, fingerprint, result, ttlMs) => keys.putIfAbsent(key, fingerprint, result, ttlMs),
    size: () => keys.size(),
    receipts,
  };
}

/** The store's state: one success cache per TTL and the held keys. */
class MemoryKeys {
  private readonly renewEveryMs: number;
  private readonly epoch: number;
  // The first TTL asked for (the layer's) has a cache of its own, expired exactly in order; any
  // other (a call's idempotencyTtlMs, a task's end) shares one whose entries carry their TTL, so
  // the caches stay two however many TTLs calls ask for.
  private readonly caches: SuccessCache[] = [];
  private readonly held = new Map<string, MemoryLease>();
  private fences = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly leaseMs: number,
    private readonly clock: Clock,
    private readonly receipts: MemoryReceiptStore,
  ) {
    this.renewEveryMs = leaseMs < Infinity ? leaseMs / 3 : Infinity;
    this.epoch = clock.now();
  }

  claim(
    key: string,
    fingerprint: StoreFingerprint,
    claimOptions?: { token?: string; tool?: string },
  ): IdempotencyClaim {
    const now = this.clock.now();
    const found = this.storedFor(key, fingerprint, now);
    if (found !== undefined) return found;
    const held = this.live(key, now);
    const token = claimOptions?.token;
    if (held !== undefined) {
      if (held.fingerprint !== fingerprint) return conflict;
      if (token !== undefined && held.token === token) return { kind: 'lead', lease: held };
      return { kind: 'follow', fence: held.fence, leaseEndsInMs: held.expiresAt - now };
    }
    const lease = new MemoryLease(
      key,
      ++this.fences,
      this.renewEveryMs,
      fingerprint,
      now + this.leaseMs,
      token,
    );
    this.held.set(key, lease);
    // A lead comes back with the earlier leader's unsettled receipt, and leaves its own.
    const earlier = this.receipts.get(key);
    const tool = claimOptions?.tool;
    if (tool !== undefined)
      this.receipts.record({ key, tool, status: 'running', attempts: 0, startedAt: now });
    const unsettled = earlier?.status === 'running' || earlier?.status === 'in_doubt';
    return { kind: 'lead', lease, receipt: unsettled ? earlier : undefined };
  }

  renew(lease: IdempotencyLease): boolean {
    const now = this.clock.now();
    const held = this.live(lease.key, now);
    if (held === undefined || !held.holds(lease)) {
      (lease as MemoryLease).lose?.();
      return false;
    }
    held.expiresAt = now + this.leaseMs;
    return true;
  }

  complete(
    lease: IdempotencyLease,
    result: unknown,
    ttlMs: number,
    receipt?: Receipt,
  ): IdempotencyCompletion {
    if (!(ttlMs > 0)) throw new TypeError(`ttlMs must be a number > 0, got ${String(ttlMs)}`);
    if (receipt !== undefined) this.receipts.record(receipt);
    const now = this.clock.now();
    const mine = lease as MemoryLease;
    if (mine.completed) return stored;
    const held = this.held.get(lease.key);
    if (held?.holds(lease)) {
      this.held.delete(lease.key);
      this.remember(held.key, held.fingerprint, result, ttlMs, now);
      held.completed = mine.completed = true;
      held.wake();
      return now >= held.expiresAt ? { kind: 'late' } : stored;
    }
    const other = held === undefined ? undefined : this.live(lease.key, now);
    const hit = this.cached(lease.key, now);
    if (other === undefined && hit === undefined) {
      // The lease lapsed and nobody claimed the key since: the success still counts.
      this.remember(mine.key, mine.fingerprint, result, ttlMs, now);
      mine.completed = true;
      return { kind: 'late' };
    }
    mine.lose();
    return hit === undefined ? { kind: 'lost' } : { kind: 'lost', winner: { result: hit.result } };
  }

  release(lease: IdempotencyLease, receipt?: Receipt): void {
    const held = this.live(lease.key, this.clock.now());
    // A lease that lapsed with nobody taking the key over still leaves its receipt, as Redis does.
    if (held === undefined && receipt !== undefined) this.receipts.record(receipt);
    if (held === undefined || !held.holds(lease)) return;
    if (receipt !== undefined) this.receipts.record(receipt);
    this.held.delete(lease.key);
    held.wake();
  }

  changed(
    key: string,
    fence: number,
    waitOptions: { signal: AbortSignal; timeoutMs: number },
  ): void | Promise<void> {
    const { signal, timeoutMs } = waitOptions;
    const { clock } = this;
    const held = this.live(key, clock.now());
    if (held === undefined || held.fence !== fence || signal.aborted) return;
    return new Promise<void>((resolve) => {
      let handle: unknown;
      const done = () => {
        held.waiters?.delete(done);
        signal.removeEventListener('abort', done);
        if (handle !== undefined) clock.clearTimeout(handle);
        resolve();
      };
      held.waiters ??= new Set();
      held.waiters.add(done);
      signal.addEventListener('abort', done, { once: true });
      const waitMs = Math.min(timeoutMs, held.expiresAt - clock.now());
      if (waitMs < Infinity) {
        handle = clock.setTimeout(done, Math.max(0, waitMs));
        (handle as { unref?: () => void } | undefined)?.unref?.();
      }
    });
  }

  peek(key: string, fingerprint: StoreFingerprint): IdempotencyPeek {
    const now = this.clock.now();
    const found = this.storedFor(key, fingerprint, now);
    if (found !== undefined) return found;
    const held = this.live(key, now);
    return held !== undefined && held.fingerprint !== fingerprint ? conflict : none;
  }

  putIfAbsent(
    key: string,
    fingerprint: StoreFingerprint,
    result: unknown,
    ttlMs: number,
  ): 'stored' | 'exists' {
    if (!(ttlMs > 0)) throw new TypeError(`ttlMs must be a number > 0, got ${String(ttlMs)}`);
    const now = this.clock.now();
    if (this.cached(key, now) !== undefined || this.live(key, now) !== undefined) return 'exists';
    this.remember(key, fingerprint, result, ttlMs, now);
    return 'stored';
  }

  size(): { cached: number; inFlight: number } {
    let count = 0;
    for (const cache of this.caches) count += cache.size;
    return { cached: count, inFlight: this.held.size };
  }

  // What a claim or a peek finds stored for `key`: a hit, a conflict, or nothing.
  private storedFor(
    key: string,
    fingerprint: StoreFingerprint,
    now: number,
  ): Extract<IdempotencyPeek, { kind: 'hit' | 'conflict' }> | undefined {
    for (const cache of this.caches) {
      const hit = cache.get(key, now);
      if (hit === undefined) continue;
      if (hit.fingerprint !== fingerprint) return conflict;
      return { kind: 'hit', result: hit.result, expiresInMs: cache.expiresInMs(hit, now) };
    }
    return undefined;
  }

  private cached(key: string, now: number): CachedSuccess | undefined {
    for (const cache of this.caches) {
      const entry = cache.get(key, now);
      if (entry !== undefined) return entry;
    }
    return undefined;
  }

  // A lapsed lease frees its key at the first look after it ended, as a Redis key expires.
  private live(key: string, now: number): MemoryLease | undefined {
    const held = this.held.get(key);
    if (held === undefined || now < held.expiresAt) return held;
    this.held.delete(key);
    held.wake();
    return undefined;
  }

  private remember(
    key: string,
    fingerprint: StoreFingerprint,
    result: unknown,
    ttlMs: number,
    now: number,
  ): void {
    const [first, other] = this.caches;
    if (first === undefined || first.ttlMs === ttlMs) {
      const cache = first ?? new SuccessCache(ttlMs, this.maxEntries, this.epoch);
      if (first === undefined) this.caches.push(cache);
      return cache.set(key, fingerprint, result, now);
    }
    const cache = other ?? new SuccessCache('each', this.maxEntries, this.epoch);
    if (other === undefined) this.caches.push(cache);
    cache.set(key, fingerprint, result, now, ttlMs);
  }
}

const conflict = { kind: 'conflict' } as const;
const stored: IdempotencyCompletion = { kind: 'stored' };
const none: IdempotencyPeek = { kind: 'none' };
