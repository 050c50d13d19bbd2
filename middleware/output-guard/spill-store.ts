/**
 * Spill stores: where `outputGuard` keeps a whole result it cut, behind a handle.
 * @module
 */

import { randomBytes } from 'node:crypto';
import { systemClock, type Clock } from '../../src/clock.js';
import type { MaybePromise } from '../../src/stores.js';
import { optionKeys, optionsObject, requireClock, requireInteger, requireNumber } from '../kit.js';

/** Keeps whole results behind handles. */
export interface SpillStore {
  /** Keeps `value` and returns its handle. */
  put(value: unknown): MaybePromise<string>;
  /** The value kept under `handle`, or `undefined` once it expired or was never kept. */
  get(handle: string): MaybePromise<unknown>;
}

/** Options for `memorySpillStore`. */
export interface MemorySpillStoreOptions {
  /**
   * How long a value is kept, in milliseconds.
   * @default 600_000
   */
  ttlMs?: number;
  /**
   * The most values kept; the oldest goes first beyond it.
   * @default 100
   */
  maxEntries?: number;
  /**
   * The time source for the TTL.
   * @default systemClock
   */
  clock?: Pick<Clock, 'now'>;
}

const memorySpillStoreOptionKeys = optionKeys<MemorySpillStoreOptions>({
  ttlMs: true,
  maxEntries: true,
  clock: true,
});

/**
 * A spill store in this process's memory, answering synchronously: handles are `spill:` and 24
 * random characters, values expire after `ttlMs`.
 *
 * @example
 * const spill = memorySpillStore({ ttlMs: 600_000 });
 * defaultStack({ registry, output: outputGuard({ maxChars: 8_000, spill }) });
 * spill.get(outcome.modelCopy?.handle ?? '');
 */
export function memorySpillStore(options?: MemorySpillStoreOptions): SpillStore {
  const {
    ttlMs = 600_000,
    maxEntries = 100,
    clock = systemClock,
  } = optionsObject('memorySpillStore', options, memorySpillStoreOptionKeys);
  requireNumber('ttlMs', ttlMs, 0, { exclusive: true, allowInfinity: true });
  requireInteger('maxEntries', maxEntries, 1);
  requireClock(clock, ['now']);
  // A Map keeps insertion order: the first entry is the oldest.
  const kept = new Map<string, { value: unknown; expiresAt: number }>();
  return {
    put(value) {
      const handle = `spill:${randomBytes(18).toString('base64url')}`;
      if (kept.size >= maxEntries) kept.delete(kept.keys().next().value as string);
      kept.set(handle, { value, expiresAt: clock.now() + ttlMs });
      return handle;
    },
    get(handle) {
      const entry = kept.get(handle);
      if (entry === undefined) return undefined;
      if (entry.expiresAt > clock.now()) return entry.value;
      kept.delete(handle);
      return undefined;
    },
  };
}
