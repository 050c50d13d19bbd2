/**
 * The idempotency layer's memory of recent successes: bounded in size, expired in completion
 * order, and never paused for long, whatever the number of keys.
 * @module
 */

import type { Fingerprint } from '../kit.js';

/** One remembered success. Small integers only, so that a million entries stay compact. */
export class CachedSuccess {
  constructor(
    readonly key: string,
    readonly fingerprint: Fingerprint,
    readonly result: unknown,
    /** Whole milliseconds after the cache's epoch: a small integer for the first 12 days. */
    readonly completedMs: number,
    /** The rest of a millisecond, in units of 2^-20 ms, rounded down: a small integer too. */
    readonly completedFraction: number,
  ) {}
}

/** A success remembered for a TTL of its own (`DispatchOptions.idempotencyTtlMs`, a task's end). */
export class TimedSuccess extends CachedSuccess {
  constructor(
    key: string,
    fingerprint: Fingerprint,
    result: unknown,
    completedMs: number,
    completedFraction: number,
    /** How long this success is served, in milliseconds. */
    readonly ttlMs: number,
  ) {
    super(key, fingerprint, result, completedMs, completedFraction);
  }
}

const fractionUnits = 2 ** 20;

// How long ago `entry` completed. A fractional clock (performance.now) keeps its fraction, so an
// entry is never served at or past its TTL, and expires at most a microsecond's fraction early.
function ageOf(entry: CachedSuccess, at: number): number {
  return at - entry.completedMs - entry.completedFraction / fractionUnits;
}

// Maps are split so that none grows past this: a Map rehashes all its entries at once when it
// grows or shrinks, and one holding a million keys would stall the loop for tens of ms.
const shardCapacity = 8_192;
const chunkSize = 4_096;
// Bounds the expiry work of one call, so a burst of expiries is spread over the calls after it.
const maxEvictionsPerCall = 64;

/**
 * A TTL cache of successes, oldest first. With `ttlMs` `'each'`, every entry brings its own TTL:
 * entries then leave the queue's head in completion order once expired, and a longer-lived head
 * holds shorter-lived ones behind it (never served, dropped at `maxEntries`) until it goes.
 */
export class SuccessCache {
  readonly #shards: Array<Map<string, CachedSuccess>>;
  readonly #epoch: number;
  // Entries in completion order, in fixed-size chunks so that dropping the head never copies.
  #chunks: Array<Array<CachedSuccess | undefined>> = [[]];
  #head = 0;
  #size = 0;

  constructor(
    /** How long a success is served, in milliseconds, or `'each'`: as long as `set` says. */
    readonly ttlMs: number | 'each',
    private readonly maxEntries: number,
    now: number,
  ) {
    const shardCount = Math.ceil(maxEntries / shardCapacity);
    this.#shards = Array.from({ length: shardCount }, () => new Map());
    this.#epoch = now;
  }

  /** Successes held, expired ones not yet evicted included. */
  get size(): number {
    return this.#size;
  }

  /** The live success for `key`, or `undefined`; evicts a little of what has expired. */
  get(key: string, now: number): CachedSuccess | undefined {
    const at = now - this.#epoch;
    this.#evictExpired(at);
    const shard = this.#shardOf(key);
    const entry = shard.get(key);
    if (entry === undefined) return undefined;
    if (ageOf(entry, at) < this.#ttlOf(entry)) return entry;
    shard.delete(key);
    this.#size -= 1;
    return undefined;
  }

  /** How long `entry` is served still, in whole milliseconds of its completion. */
  expiresInMs(entry: CachedSuccess, now: number): number {
    return this.#ttlOf(entry) - (now - this.#epoch - entry.completedMs);
  }

  /** Remembers a success (for `ttlMs` in a cache of `'each'`), evicting the oldest beyond `maxEntries`. */
  set(key: string, fingerprint: Fingerprint, result: unknown, now: number, ttlMs = 0): void {
    // Kept as whole milliseconds and a fraction in `fractionUnits`, both integers: `ageOf` puts
    // them back together, keeping the fraction a fractional clock gives.
    const at = now - this.#epoch;
    const whole = Math.floor(at);
    const fraction = Math.floor((at - whole) * fractionUnits);
    const entry =
      this.ttlMs === 'each'
        ? new TimedSuccess(key, fingerprint, result, whole, fraction, ttlMs)
        : new CachedSuccess(key, fingerprint, result, whole, fraction);
    const shard = this.#shardOf(key);
    if (!shard.has(key)) this.#size += 1;
    shard.set(key, entry);
    this.#push(entry);
    while (this.#size > this.maxEntries) this.#evictOldest();
  }

  #ttlOf(entry: CachedSuccess): number {
    const { ttlMs } = this;
    return ttlMs === 'each' ? (entry as TimedSuccess).ttlMs : ttlMs;
  }

  #shardOf(key: string): Map<string, CachedSuccess> {
    const shards = this.#shards;
    if (shards.length === 1) return shards[0] as Map<string, CachedSuccess>;
    let hash = 0x811c9dc5;
    for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
    return shards[(hash >>> 0) % shards.length] as Map<string, CachedSuccess>;
  }

  #push(entry: CachedSuccess): void {
    let tail = this.#chunks[this.#chunks.length - 1] as Array<CachedSuccess | undefined>;
    if (tail.length === chunkSize) {
      tail = [];
      this.#chunks.push(tail);
    }
    tail.push(entry);
  }

  #peek(): CachedSuccess | undefined {
    return this.#chunks[0]?.[this.#head];
  }

  #shift(): void {
    const first = this.#chunks[0] as Array<CachedSuccess | undefined>;
    // Let go of the entry (and its result) now, not when the whole chunk goes.
    first[this.#head] = undefined;
    this.#head += 1;
    if (this.#head < first.length) return;
    this.#head = 0;
    if (this.#chunks.length > 1) this.#chunks.shift();
    else first.length = 0;
  }

  // Drops the queue's oldest slot; when it is still the live entry of its key, the entry goes too.
  #dropHead(entry: CachedSuccess): void {
    this.#shift();
    const shard = this.#shardOf(entry.key);
    if (shard.get(entry.key) === entry) {
      shard.delete(entry.key);
      this.#size -= 1;
    }
  }

  #evictOldest(): void {
    for (let entry = this.#peek(); entry !== undefined; entry = this.#peek()) {
      const live = this.#shardOf(entry.key).get(entry.key) === entry;
      this.#dropHead(entry);
      if (live) return;
    }
  }

  #evictExpired(at: number): void {
    for (let evictions = 0; evictions < maxEvictionsPerCall; evictions++) {
      const entry = this.#peek();
      if (entry === undefined || ageOf(entry, at) < this.#ttlOf(entry)) return;
      this.#dropHead(entry);
    }
  }
}
