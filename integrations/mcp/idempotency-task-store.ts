/**
 * MCP Tasks kept in an idempotency store (memory, Redis, PostgreSQL): the store a fleet already
 * shares for dedupe holds its tasks too, so a poll reads the task on whichever process it lands.
 * @module
 */

import type { IdempotencyClaim, IdempotencyPeek, IdempotencyStore } from '../../index.js';
import type { McpTaskCreation, McpTaskRecord, McpTaskStore } from './task-store.js';

// Every task key is written and read with this one fingerprint, so no look at it is a conflict.
const fingerprint = 'mcp-task';
// A holder keeps a task key for one round trip; this many waits in a row means a stuck store.
const mostWaits = 1_000;
// The first wait's bound, in ms, doubled on each wait after it: a store that cannot tell a
// waiter the key changed (Redis without a subscriber) would otherwise be looked at only at its
// poll, a second by default, for a key held a round trip.
const firstWaitMs = 1;

/**
 * A task store on an idempotency store. A task is two keys: `mcp-task:<id>`, stored as the
 * `working` record when the task is created, and `mcp-task:<id>:end`, stored once with its final
 * record (the first settle wins). Both live until the task's `ttlMs` from its creation ends. On a
 * store with `putIfAbsent` and `peek` a create, a settle and a read are one round trip each.
 *
 * @example
 * const tasks = { store: taskStoreOn(redisIdempotencyStore(redis)) };
 */
export function taskStoreOn(store: IdempotencyStore): McpTaskStore {
  return new IdempotencyTaskStore(store);
}

/**
 * Whether `store` is an idempotency store (it claims keys) rather than a task store.
 *
 * @example
 * const tasks = isIdempotencyStore(given) ? taskStoreOn(given) : given;
 */
export function isIdempotencyStore(store: unknown): store is IdempotencyStore {
  const methods = store as Partial<Record<'claim' | 'complete' | 'release' | 'changed', unknown>> | null;
  return (
    typeof methods?.claim === 'function' &&
    typeof methods.complete === 'function' &&
    typeof methods.release === 'function' &&
    typeof methods.changed === 'function'
  );
}

const createdKey = (taskId: string) => `mcp-task:${taskId}`;
const endKey = (taskId: string) => `mcp-task:${taskId}:end`;

/** What reading a key found: its stored value, nothing, or a value the store could not share. */
type Read = { found: true; value: unknown } | { found: false } | { found: 'unshareable'; reason: string };

class IdempotencyTaskStore implements McpTaskStore {
  constructor(private readonly store: IdempotencyStore) {}

  async create(record: McpTaskRecord): Promise<McpTaskCreation> {
    const key = createdKey(record.taskId);
    const put = await this.store.putIfAbsent?.(key, fingerprint, record, record.ttlMs);
    if (put === 'stored') return { created: true, record };
    // The key exists (or the store cannot put): claim it as a store without `putIfAbsent` would.
    for (let waits = 0; waits < mostWaits; waits++) {
      const claim = await this.store.claim(key, fingerprint);
      if (claim.kind === 'lead') {
        const done = await this.store.complete(claim.lease, record, record.ttlMs);
        if (done.kind !== 'lost') return { created: true, record };
      } else if (claim.kind === 'hit') {
        const known = claim.result as McpTaskRecord;
        return { created: false, record: (await this.get(known.taskId)) ?? known };
      } else if (claim.kind === 'follow') {
        await this.wait(key, claim, waits);
      } else {
        throw new Error(`The task store cannot create task ${record.taskId}: ${describe(claim)}`);
      }
    }
    throw stuck(key);
  }

  async get(taskId: string): Promise<McpTaskRecord | undefined> {
    // A held end key has no final record yet (a settle or another poll holds it): the task is
    // working as created, and a poll does not wait for the holder. Both keys are read at once
    // (one round trip on a pipelining client); the created one is used only without an end.
    const [end, created] = await Promise.all([
      this.read(endKey(taskId), false),
      this.read(createdKey(taskId)),
    ]);
    if (end.found === true) return end.value as McpTaskRecord;
    if (created.found !== true) return undefined;
    const record = created.value as McpTaskRecord;
    if (end.found === false) return record;
    // A final record too large (or too odd) for the store to share: the task failed for polls.
    return {
      ...record,
      status: 'failed',
      error: { code: -32603, message: `The task's result cannot be shared: ${end.reason}` },
    };
  }

  async settle(taskId: string, final: McpTaskRecord): Promise<void> {
    const key = endKey(taskId);
    const ttlMs = Math.max(1, Date.parse(final.createdAt) + final.ttlMs - Date.now());
    // The first settle wins; a key that exists may be held by a poll of a process that reads by
    // claiming, so it is claimed then as a store without `putIfAbsent` would.
    if ((await this.store.putIfAbsent?.(key, fingerprint, final, ttlMs)) === 'stored') return;
    for (let waits = 0; waits < mostWaits; waits++) {
      const claim = await this.store.claim(key, fingerprint);
      if (claim.kind === 'lead') {
        await this.store.complete(claim.lease, final, ttlMs);
        return;
      }
      // A poll holds the key for a moment; anything else means it is settled already.
      if (claim.kind !== 'follow') return;
      await this.wait(key, claim, waits);
    }
    throw stuck(key);
  }

  // Reads a key with `peek` when the store has it (one round trip, no write), else by claiming
  // it; a lead (nothing stored) is given back at once, and a key held by another is waited for,
  // or (`waitIfHeld` false) read as nothing stored.
  private async read(key: string, waitIfHeld = true): Promise<Read> {
    if (this.store.peek !== undefined) return fromPeek(key, await this.store.peek(key, fingerprint));
    for (let waits = 0; waits < mostWaits; waits++) {
      const claim = await this.store.claim(key, fingerprint);
      switch (claim.kind) {
        case 'hit':
          return { found: true, value: claim.result };
        case 'lead':
          await this.store.release(claim.lease);
          return { found: false };
        case 'unshareable':
          return { found: 'unshareable', reason: claim.reason };
        case 'follow':
          if (!waitIfHeld) return { found: false };
          await this.wait(key, claim, waits);
          break;
        default:
          throw new Error(`The task store cannot read ${key}: ${describe(claim)}`);
      }
    }
    throw stuck(key);
  }

  // The `waits`-th wait for a holder of `key`: until it changes, at most a bound that doubles
  // from `firstWaitMs` up to the holder's lease.
  private async wait(
    key: string,
    claim: Extract<IdempotencyClaim, { kind: 'follow' }>,
    waits: number,
  ): Promise<void> {
    // No caller waits on this loop but the request that asked.
    await this.store.changed(key, claim.fence, {
      signal: new AbortController().signal,
      timeoutMs: Math.min(claim.leaseEndsInMs, firstWaitMs * 2 ** Math.min(waits, 20)),
    });
  }
}

// A held key reads as nothing stored: only a process that creates or reads by claiming holds one.
function fromPeek(key: string, seen: IdempotencyPeek): Read {
  if (seen.kind === 'hit') return { found: true, value: seen.result };
  if (seen.kind === 'none') return { found: false };
  if (seen.kind === 'unshareable') return { found: 'unshareable', reason: seen.reason };
  throw new Error(`The task store cannot read ${key}: ${describe(seen)}`);
}

function describe(claim: IdempotencyClaim | IdempotencyPeek): string {
  return claim.kind === 'conflict' ? 'the key is held for another use' : claim.kind;
}

function stuck(key: string): Error {
  return new Error(`The task store kept ${key} held through ${mostWaits} waits`);
}
