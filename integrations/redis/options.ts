/**
 * Option checks shared by the Redis stores: each factory throws a TypeError naming the option.
 * @module
 */

import { rejectUnknownKeys } from '../../middleware/index.js';
import type { StoreClient } from './client.js';

export function requireClient(redis: unknown, factory: string): asserts redis is StoreClient {
  if (typeof (redis as StoreClient | null)?.evalScript !== 'function') {
    throw new TypeError(`${factory}: redis must be a StoreClient (use fromNodeRedis or fromIoredis)`);
  }
}

export function requireOptions(options: unknown, factory: string, known: readonly string[]): void {
  if (options === undefined) return;
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`${factory}: options must be an object`);
  }
  rejectUnknownKeys(factory, options, known);
}

export function requirePrefix(prefix: unknown): string {
  if (typeof prefix !== 'string' || prefix === '') throw new TypeError('prefix must be a non-empty string');
  return prefix;
}

export function requireMs(name: string, value: unknown, min = 1): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw new TypeError(`${name} must be an integer >= ${min}, got ${String(value)}`);
  }
  return value;
}

export function requireChoice<T extends string>(name: string, value: unknown, choices: readonly T[]): T {
  if (!choices.includes(value as T)) {
    throw new TypeError(
      `${name} must be one of ${choices.map((c) => `'${c}'`).join(', ')}, got ${String(value)}`,
    );
  }
  return value as T;
}

/** A random owner token: unguessable, so no two holders ever share one. */
export { randomUUID as newToken } from 'node:crypto';
