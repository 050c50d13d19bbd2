/**
 * The idempotency layer's in-memory store: held keys and recent successes in this process, answered synchronously.
 * A lead lasts until it completes or releases: a holder in this process cannot crash without the
 * store going too.
 * @module
 */

import { systemClock, type Clock } from '../../src/clock.js';
import { optionKeys, optionsObject, requireClock, requireInteger } from '../kit.js';
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
   * How long a key's receipt is kept, in milliseconds (see `receipts`, which keeps at most
   * 10 000).
   * @default 86_400_000 (24 h)
   */
  receiptTtlMs?: number;
  /**
   * The time source for TTLs, and the timers of `changed`.
   * @default systemClock
   */
  clock?: Clock;
}

const memoryIdempotencyStoreOptionKeys = optionKeys<MemoryIdempotencyStoreOptions>({
  maxEntries: true,
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

// Memory leases never lapse, so they share one signal: nothing can take them over.
const neverLost: AbortSignal = new AbortController().signal;

/** A held key's lease, with the followers waiting for it to change. */
class MemoryLease implements IdempotencyLease {
  completed = false;
  readonly signal = neverLost;
  readonly renewEveryMs = Infinity;
  // Made when a follower first waits: most leads end with nobody waiting.
  waiters: Set<() => void> | undefined;
  #token: string | undefined;

  constructor(
    readonly key: string,
    readonly fence: number,
    // What it claimed with, for a completion after its entry went (released, or taken over).
    readonly fingerprint: StoreFingerprint,
    token: string | undefined,
  ) {
    this.#token = token;
  }

  // Fences are unique in a store, so a token made from one is too; made only when asked for.
  get token(): string {
    this.#token ??= `m${this.fence}`;
    return this.#token;
  }

  holds(lease: IdempotencyLease): boolean {
    return lease === this || lease.token === this.token;
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
    receiptTtlMs,
    clock = systemClock,
  } = optionsObject('memoryIdempotencyStore', options, memoryIdempotencyStoreOptionKeys);
  requireInteger('maxEntries', maxEntries, 1);
  requireClock(clock, ['now', 'setTimeout', 'clearTimeout']);
  // Receipts keep their own bound (memoryReceiptStore's default), not the success cache's.
  const receipts = memoryReceiptStore({
    clock,
    ...(receiptTtlMs === undefined ? {} : { ttlMs: receiptTtlMs }),
  });
  const keys = new MemoryKeys(maxEntries, clock, receipts);
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
  private readonly epoch: number;
  // The first TTL asked for (the layer's) has a cache of its own, expired exactly in order; any
  // other (a call's idempotencyTtlMs, a task's end) shares one whose entries carry their TTL, so
  // the caches stay two however many TTLs calls ask for.
  private readonly caches: SuccessCache[] = [];
  private readonly held = new Map<string, MemoryLease>();
  private fences = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly clock: Clock,
    private readonly receipts: MemoryReceiptStore,
  ) {
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
    const held = this.held.get(key);
    const token = claimOptions?.token;
    if (held !== undefined) {
      if (held.fingerprint !== fingerprint) return conflict;
      if (token !== undefined && held.token === token) return { kind: 'lead', lease: held };
      return { kind: 'follow', fence: held.fence, leaseEndsInMs: Infinity };
    }
    const lease = new MemoryLease(key, ++this.fences, fingerprint, token);
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
    return this.held.get(lease.key)?.holds(lease) === true;
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
      return stored;
    }
    const hit = this.cached(lease.key, now);
    if (held === undefined && hit === undefined) {
      // The lease was released and nobody claimed the key since: the success still counts.
      this.remember(mine.key, mine.fingerprint, result, ttlMs, now);
      mine.completed = true;
      return { kind: 'late' };
    }
    return hit === undefined ? { kind: 'lost' } : { kind: 'lost', winner: { result: hit.result } };
  }

  release(lease: IdempotencyLease, receipt?: Receipt): void {
    const held = this.held.get(lease.key);
    // A key nobody holds any more still takes the receipt, as Redis does after a lapse.
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
    const held = this.held.get(key);
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
      if (timeoutMs < Infinity) {
        handle = clock.setTimeout(done, Math.max(0, timeoutMs));
        (handle as { unref?: () => void } | undefined)?.unref?.();
      }
    });
  }

  peek(key: string, fingerprint: StoreFingerprint): IdempotencyPeek {
    const now = this.clock.now();
    const found = this.storedFor(key, fingerprint, now);
    if (found !== undefined) return found;
    const held = this.held.get(key);
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
    if (this.cached(key, now) !== undefined || this.held.has(key)) return 'exists';
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
