/**
 * One store call: a script run under its own deadline, any failure turned into `store_unavailable`.
 * @module
 */

import { storeUnavailable } from '../../src/stores.js';
import type { RedisScript, StoreClient } from './client.js';

/**
 * Runs `script` and settles within `timeoutMs`: clients' own timeouts do not cover a command
 * already written to a socket, so the deadline is ours. A call that times out is an unknown
 * outcome (the script may have run); every script is safe to send again.
 */
export function runScript(
  client: StoreClient,
  script: RedisScript,
  keys: readonly string[],
  args: readonly string[],
  timeoutMs: number,
): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      try {
        client.stalled?.();
      } catch {
        // A watchdog's trouble is not the caller's.
      }
      reject(
        storeUnavailable(
          `Redis did not answer ${script.name} within ${timeoutMs} ms (its outcome is unknown)`,
          { retryAfterMs: Math.min(timeoutMs, 1_000) },
        ),
      );
    }, timeoutMs);
    timer.unref();
    const fail = (error: unknown) => {
      clearTimeout(timer);
      reject(storeUnavailable(`Redis failed ${script.name}: ${messageOf(error)}`, { cause: error }));
    };
    let sent: Promise<unknown>;
    try {
      sent = client.evalScript(script, keys, args);
    } catch (error) {
      fail(error);
      return;
    }
    sent.then((reply) => {
      clearTimeout(timer);
      resolve(reply);
    }, fail);
  });
}

function messageOf(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' && message !== '' ? message : String(error);
}

/** A reply array's item as a string ('' for nil). */
export function text(reply: unknown, index: number): string {
  const item = (reply as unknown[])[index];
  if (item === null || item === undefined || item === false) return '';
  return typeof item === 'string' ? item : String(item);
}

/** A reply array's item as a number (0 for nil). */
export function num(reply: unknown, index: number): number {
  const item = (reply as unknown[])[index];
  if (item === null || item === undefined || item === false || item === '') return 0;
  return Number(item);
}

/**
 * Whether a lease heard of just now can still be renewed before it ends (`endsAt` on
 * `performance.now()`, a renewal due every `renewEveryMs`). One heard later, because this process
 * was paused or Redis was slow, may already be someone else's.
 */
export function renewableInTime(lease: { readonly renewEveryMs: number; readonly endsAt: number }): boolean {
  return performance.now() + lease.renewEveryMs < lease.endsAt;
}
