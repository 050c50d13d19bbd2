/**
 * The idempotency store on Redis: one execution per key across the fleet, leases on the server's clock.
 * @module
 */

import { DispatchError } from '../../index.js';
import { optionKeys } from '../../middleware/index.js';
import { noop } from '../../middleware/internal-kit.js';
import type {
  IdempotencyClaim,
  IdempotencyCompletion,
  IdempotencyLease,
  IdempotencyPeek,
  IdempotencyStore,
  Receipt,
  ReceiptQuery,
  ReceiptStore,
  StoreFingerprint,
} from '../../index.js';
import { storeUnavailable } from '../../src/stores.js';
import { num, renewableInTime, runScript, text } from './call.js';
import type { StoreClient } from './client.js';
import { hubFor } from './events.js';
import {
  newToken,
  requireChoice,
  requireClient,
  requireMs,
  requireOptions,
  requirePrefix,
} from './options.js';
import {
  claimScript,
  completeScript,
  peekScript,
  putIfAbsentScript,
  receiptGetScript,
  receiptListScript,
  receiptRecordScript,
  releaseScript,
  renewScript,
} from './scripts.js';

/** Options for `redisIdempotencyStore`. */
export interface RedisIdempotencyStoreOptions {
  /**
   * The key namespace: every key this store writes starts with `<prefix>:`. Processes that
   * should deduplicate together use the same prefix.
   * @default 'td'
   */
  prefix?: string;
  /**
   * How long a lead lasts without renewal, in milliseconds: how long a crashed leader can keep
   * a key. The leader renews every third of it while its handler runs, so handlers may run
   * longer.
   * @default 10_000
   */
  leaseMs?: number;
  /**
   * Each store call's own deadline, in milliseconds; past it the call fails with
   * `store_unavailable` (an unknown outcome: it may have been applied).
   * @default 1_000
   */
  storeTimeoutMs?: number;
  /**
   * The longest a follower waits before it looks again without a pub/sub message (the safety
   * net for lost messages), in milliseconds.
   * @default 1_000
   */
  pollMs?: number;
  /**
   * What to do when Redis is found restarted empty (its epoch key changed): `'fail'` refuses
   * keyed calls with `store_unavailable` for `resetWindowMs` after the restart, so no key that
   * succeeded before it runs again inside its TTL, except calls of a tool with `reconcile`: those
   * wait one `leaseMs` from the restart (older leaders have finished or lost their lease), then
   * ask `reconcile` (window `store_reset`) before running; `'continue'` carries on (duplicates
   * possible).
   * @default 'fail'
   */
  onStoreReset?: 'fail' | 'continue';
  /**
   * How long keyed calls fail closed after a restart, in milliseconds: the idempotency TTL.
   * @default 60_000
   */
  resetWindowMs?: number;
  /**
   * The largest serialised result shared across processes, in bytes. A larger one is
   * returned to its own caller but stored as "done, unshareable": later callers fail with
   * `idempotency_result_unavailable` and never run the handler again.
   * @default 1_048_576
   */
  maxResultBytes?: number;
  /**
   * How long a key's receipt is kept, in milliseconds: longer than a success is served, so
   * that an unknown outcome or a crashed leader stays visible (see `receipts`).
   * @default 86_400_000 (24 h)
   */
  receiptTtlMs?: number;
  /**
   * Turns a result into text for other processes. The default is JSON: `undefined` survives,
   * Dates become strings, Maps/Sets/class instances lose their type, and a BigInt or a cycle
   * makes the result unshareable.
   * @default JSON.stringify
   */
  serialize?: (result: unknown) => string;
  /**
   * Reads back what `serialize` wrote.
   * @default JSON.parse
   */
  deserialize?: (text: string) => unknown;
}

const redisIdempotencyStoreOptionKeys = optionKeys<RedisIdempotencyStoreOptions>({
  prefix: true,
  leaseMs: true,
  storeTimeoutMs: true,
  pollMs: true,
  onStoreReset: true,
  resetWindowMs: true,
  maxResultBytes: true,
  receiptTtlMs: true,
  serialize: true,
  deserialize: true,
});

/** The Redis idempotency store, with a way to stop its listeners. */
export interface RedisIdempotencyStore extends IdempotencyStore {
  /** Stops listening for pub/sub messages and wakes every waiter; leases are left to expire. */
  close(): void;
  /**
   * The receipts of this store's keys, written in the same round trips as the claim (`running`)
   * and the completion or release; `list` scans the namespace (an operator's query).
   */
  readonly receipts: ReceiptStore;
}

class RedisLease implements IdempotencyLease {
  // Made on first look: most leases end without anyone listening for their loss.
  #controller: AbortController | undefined;

  constructor(
    readonly key: string,
    readonly token: string,
    readonly fence: number,
    readonly renewEveryMs: number,
    readonly fingerprint: string,
    /** performance.now() until which the lease surely holds; past it, it may be someone else's. */
    public endsAt: number,
    /** The key's receipt before this claim wrote its running one (JSON, '' for none). */
    readonly receiptBefore = '',
  ) {}

  get signal(): AbortSignal {
    this.#controller ??= new AbortController();
    return this.#controller.signal;
  }

  lose(why: string): void {
    const controller = (this.#controller ??= new AbortController());
    if (controller.signal.aborted) return;
    controller.abort(
      new DispatchError('lease_lost', `The lease on idempotency key "${this.key}" was lost: ${why}`),
    );
  }
}

interface Waiter {
  readonly fence: number;
  readonly done: () => void;
}

// The wake-ups heard lately, so that one that arrives before its follower starts waiting is
// not missed (the claim reply and the message travel on different connections).
const recentLimit = 4_096;

// Claims answered too late to hold their lease, in a row, before the claim fails as unavailable.
const staleClaimTries = 3;

/**
 * Makes an idempotency store on Redis: claims, completions and releases are one Lua script
 * each (atomic, resend-safe by owner token), leases are key expiry on the server's clock,
 * followers wake on pub/sub with a poll as the safety net, and an epoch key detects a Redis
 * that came back empty.
 *
 * @example
 * const store = redisIdempotencyStore(fromNodeRedis(client, { subscriber }), { prefix: 'billing' });
 * const dispatcher = createDispatcher(defaultStack({ registry, idempotency: { store } }));
 */
export function redisIdempotencyStore(
  redis: StoreClient,
  options: RedisIdempotencyStoreOptions = {},
): RedisIdempotencyStore {
  requireClient(redis, 'redisIdempotencyStore');
  requireOptions(options, 'redisIdempotencyStore', redisIdempotencyStoreOptionKeys);
  const prefix = requirePrefix(options.prefix ?? 'td');
  const leaseMs = requireMs('leaseMs', options.leaseMs ?? 10_000);
  const timeoutMs = requireMs('storeTimeoutMs', options.storeTimeoutMs ?? 1_000);
  const pollMs = requireMs('pollMs', options.pollMs ?? 1_000);
  const onStoreReset = requireChoice('onStoreReset', options.onStoreReset ?? 'fail', ['fail', 'continue']);
  const resetWindowMs = requireMs('resetWindowMs', options.resetWindowMs ?? 60_000);
  const maxResultBytes = requireMs('maxResultBytes', options.maxResultBytes ?? 1_048_576);
  const receiptTtl = String(requireMs('receiptTtlMs', options.receiptTtlMs ?? 86_400_000));
  const { serialize, deserialize } = options;
  if (serialize !== undefined && typeof serialize !== 'function')
    throw new TypeError('serialize must be a function');
  if (deserialize !== undefined && typeof deserialize !== 'function')
    throw new TypeError('deserialize must be a function');

  const channel = `${prefix}:ev`;
  const epochKey = `${prefix}:epoch`;
  const resetKey = `${prefix}:reset`;
  const recordKey = (key: string) => `${prefix}:i:${key}`;
  const receiptKey = (key: string) => `${prefix}:r:${key}`;
  const window = String(onStoreReset === 'fail' ? resetWindowMs : 0);
  const epochId = newToken();
  let knownEpoch = '';

  const waiters = new Map<string, Set<Waiter>>();
  const recent = new Map<string, number>();
  const hub = hubFor(redis, channel);

  const heard = (message: string) => {
    if (!message.startsWith('i|')) return;
    const bar = message.indexOf('|', 2);
    const fence = Number(message.slice(2, bar));
    const key = message.slice(bar + 1);
    recent.delete(key);
    recent.set(key, Math.max(fence, recent.get(key) ?? 0));
    if (recent.size > recentLimit) recent.delete(recent.keys().next().value as string);
    const set = waiters.get(key);
    if (set === undefined) return;
    for (const waiter of set) if (waiter.fence <= fence) waiter.done();
  };
  const wakeAll = () => {
    for (const set of waiters.values()) for (const waiter of set) waiter.done();
  };
  const unlisten = hub.listen(heard, wakeAll);

  const encode = (result: unknown): { status: 'D' | 'U'; payload: string } => {
    let payload: string;
    try {
      if (serialize !== undefined) payload = `c${serialize(result)}`;
      else if (result === undefined) payload = 'u';
      else {
        const json = JSON.stringify(result) as string | undefined;
        if (json === undefined) return { status: 'U', payload: `a ${typeof result} is not JSON` };
        payload = `j${json}`;
      }
    } catch (error) {
      return { status: 'U', payload: `not serialisable (${(error as Error)?.message ?? String(error)})` };
    }
    if (payload.length > maxResultBytes / 3 && Buffer.byteLength(payload) > maxResultBytes) {
      return { status: 'U', payload: `over maxResultBytes (${maxResultBytes})` };
    }
    return { status: 'D', payload };
  };

  const decode = (payload: string): { ok: true; result: unknown } | { ok: false; reason: string } => {
    try {
      if (payload === 'u') return { ok: true, result: undefined };
      if (payload.startsWith('c') && deserialize !== undefined)
        return { ok: true, result: deserialize(payload.slice(1)) };
      if (payload.startsWith('j')) return { ok: true, result: JSON.parse(payload.slice(1)) };
      return { ok: false, reason: 'stored in a form this process cannot read' };
    } catch (error) {
      return { ok: false, reason: `unreadable (${(error as Error)?.message ?? String(error)})` };
    }
  };

  const claimOnce = async (
    key: string,
    fingerprint: StoreFingerprint,
    token: string,
    tool: string,
    reconcilable: boolean,
  ): Promise<IdempotencyClaim> => {
    const sentAt = performance.now();
    const reply = await runScript(
      redis,
      claimScript,
      [recordKey(key), epochKey, resetKey, receiptKey(key)],
      [
        token,
        fingerprint,
        String(leaseMs),
        knownEpoch,
        epochId,
        window,
        tool,
        receiptTtl,
        key,
        reconcilable ? '1' : '',
      ],
      timeoutMs,
    );
    const kind = text(reply, 0);
    knownEpoch = text(reply, 1);
    switch (kind) {
      case 'lead': {
        const before = text(reply, 4);
        const earlier = readReceipt(before);
        const past = text(reply, 5);
        // A key with no receipt in a store that lost its past may have run before the restart.
        const lostPast = past === '1' && earlier === undefined;
        const receipt = lostPast ? resetReceipt(key, tool) : unsettled(earlier);
        const endsAt = sentAt + num(reply, 3);
        const lease = new RedisLease(key, token, num(reply, 2), leaseMs / 3, fingerprint, endsAt, before);
        // A young epoch nobody marked may be a restart this process cannot see: a receipt store
        // that outlives Redis is the one left to say whether the key ran.
        return past === '?' && receipt === undefined
          ? { kind: 'lead', lease, receipt, pastUnknown: true }
          : { kind: 'lead', lease, receipt };
      }
      case 'follow':
        return { kind: 'follow', fence: num(reply, 2), leaseEndsInMs: Math.max(0, num(reply, 3)) };
      case 'hit': {
        const decoded = decode(text(reply, 2));
        const expiresInMs = Math.max(0, num(reply, 3));
        return decoded.ok
          ? { kind: 'hit', result: decoded.result, expiresInMs }
          : { kind: 'unshareable', reason: decoded.reason, expiresInMs };
      }
      case 'unshareable':
        return { kind: 'unshareable', reason: text(reply, 2), expiresInMs: Math.max(0, num(reply, 3)) };
      case 'conflict':
        return { kind: 'conflict' };
      case 'settling':
        // Leaders of the store's earlier life may still be finishing: wait as a follower would.
        return { kind: 'follow', fence: Number.MAX_SAFE_INTEGER, leaseEndsInMs: num(reply, 2) };
      case 'reset': {
        const leftMs = num(reply, 2);
        throw storeUnavailable(
          `Redis restarted empty; keyed calls are refused for ${leftMs} ms more so that no key runs twice`,
          { retryAfterMs: leftMs },
        );
      }
      default:
        throw storeUnavailable(`Redis answered idempotency claim with ${JSON.stringify(kind)}`);
    }
  };

  const claim = async (
    key: string,
    fingerprint: StoreFingerprint,
    claimOptions?: { token?: string; tool?: string; reconcilable?: boolean },
  ): Promise<IdempotencyClaim> => {
    let token = claimOptions?.token ?? newToken();
    const reconcilable = claimOptions?.reconcilable === true;
    for (let tries = 1; ; tries++) {
      const answer = await claimOnce(key, fingerprint, token, claimOptions?.tool ?? '', reconcilable);
      if (answer.kind !== 'lead') return answer;
      const lease = answer.lease as RedisLease;
      // Running the handler on a lead heard too late could run the key twice. The key's receipt
      // goes back to what it was: a running one nobody settles would look like a crashed leader.
      // Only while the key is still this claim's: once its lease has lapsed, another leader may
      // have left a newer receipt (in doubt) that the older one must not hide.
      if (renewableInTime(lease)) return answer;
      const before = lease.receiptBefore === '' ? forgetReceipt : lease.receiptBefore;
      await releaseWith(lease, before, true).catch(noop);
      if (tries >= staleClaimTries)
        throw storeUnavailable(
          `Redis answered ${tries} claims of idempotency key "${key}" too late to keep their lease (leaseMs ${leaseMs})`,
          { retryAfterMs: leaseMs / 3 },
        );
      token = newToken();
    }
  };

  const renew = async (lease: IdempotencyLease): Promise<boolean> => {
    const mine = lease as RedisLease;
    const sentAt = performance.now();
    let reply: unknown;
    try {
      reply = await runScript(
        redis,
        renewScript,
        [recordKey(lease.key)],
        [lease.token, String(leaseMs)],
        timeoutMs,
      );
    } catch (error) {
      // Unreachable for as long as the lease surely held: it may be someone else's by now.
      if (performance.now() >= mine.endsAt) {
        mine.lose?.('it could not be renewed before it ended');
        return false;
      }
      throw error;
    }
    if (Number(reply) === 1) {
      mine.endsAt = sentAt + leaseMs;
      return true;
    }
    mine.lose?.('another holder has the key, or it ended');
    return false;
  };

  const complete = async (
    lease: IdempotencyLease,
    result: unknown,
    ttlMs: number,
    receipt?: Receipt,
  ): Promise<IdempotencyCompletion> => {
    if (typeof ttlMs !== 'number' || !(ttlMs > 0))
      throw new TypeError(`ttlMs must be a number > 0, got ${String(ttlMs)}`);
    const { status, payload } = encode(result);
    const ttl = String(Math.ceil(Math.min(ttlMs, 2 ** 47)));
    const print = (lease as RedisLease).fingerprint ?? '';
    let reply: unknown;
    try {
      reply = await runScript(
        redis,
        completeScript,
        [recordKey(lease.key), receiptKey(lease.key)],
        [
          lease.token,
          status,
          payload,
          ttl,
          channel,
          String(lease.fence),
          lease.key,
          print,
          writeReceipt(receipt),
          receiptTtl,
        ],
        timeoutMs,
      );
    } catch (error) {
      // Past the lease's end the key may be someone else's: the holder must know it lost.
      const mine = lease as RedisLease;
      if (performance.now() >= mine.endsAt) mine.lose?.('it ended before the success could be stored');
      throw error;
    }
    const kind = text(reply, 0);
    if (kind === 'stored') return { kind: 'stored' };
    if (kind === 'late') return { kind: 'late' };
    (lease as RedisLease).lose?.('another leader took the key over');
    if (text(reply, 1) === 'D') {
      const decoded = decode(text(reply, 2));
      if (decoded.ok) return { kind: 'lost', winner: { result: decoded.result } };
    }
    return { kind: 'lost' };
  };

  // Neither looks at the epoch: they run no handler, so a Redis restarted empty cannot make
  // them run a key twice.
  const peek = async (key: string, fingerprint: StoreFingerprint): Promise<IdempotencyPeek> => {
    const reply = await runScript(redis, peekScript, [recordKey(key)], [fingerprint], timeoutMs);
    const kind = text(reply, 0);
    if (kind === 'none' || kind === 'conflict') return { kind };
    const expiresInMs = Math.max(0, num(reply, 2));
    if (kind === 'U') return { kind: 'unshareable', reason: text(reply, 1), expiresInMs };
    const decoded = decode(text(reply, 1));
    return decoded.ok
      ? { kind: 'hit', result: decoded.result, expiresInMs }
      : { kind: 'unshareable', reason: decoded.reason, expiresInMs };
  };

  const putIfAbsent = async (
    key: string,
    fingerprint: StoreFingerprint,
    result: unknown,
    ttlMs: number,
  ): Promise<'stored' | 'exists'> => {
    if (typeof ttlMs !== 'number' || !(ttlMs > 0))
      throw new TypeError(`ttlMs must be a number > 0, got ${String(ttlMs)}`);
    const { status, payload } = encode(result);
    const ttl = String(Math.ceil(Math.min(ttlMs, 2 ** 47)));
    const reply = await runScript(
      redis,
      putIfAbsentScript,
      [recordKey(key)],
      [status, payload, ttl, fingerprint],
      timeoutMs,
    );
    return Number(reply) === 1 ? 'stored' : 'exists';
  };

  const releaseWith = async (
    lease: IdempotencyLease,
    receiptJson: string,
    holderOnly = false,
  ): Promise<void> => {
    await runScript(
      redis,
      releaseScript,
      [recordKey(lease.key), receiptKey(lease.key)],
      [lease.token, channel, String(lease.fence), lease.key, receiptJson, receiptTtl, holderOnly ? '1' : ''],
      timeoutMs,
    );
  };
  const release = (lease: IdempotencyLease, receipt?: Receipt): Promise<void> =>
    releaseWith(lease, writeReceipt(receipt));

  const receipts: ReceiptStore = {
    get: async (key) =>
      readReceipt(text([await runScript(redis, receiptGetScript, [receiptKey(key)], [], timeoutMs)], 0)),
    record: async (receipt) => {
      await runScript(
        redis,
        receiptRecordScript,
        [receiptKey(receipt.key)],
        [writeReceipt(receipt), receiptTtl],
        timeoutMs,
      );
    },
    list: async (query: ReceiptQuery = {}) => {
      const { limit = 100 } = query;
      const found = (await runScript(
        redis,
        receiptListScript,
        [],
        [`${prefix}:r:*`, String(maxListedReceipts)],
        timeoutMs * 10,
      )) as unknown[];
      return found
        .map((json) => readReceipt(String(json)))
        .filter((receipt): receipt is Receipt => receipt !== undefined && matches(receipt, query))
        .sort((a, b) => (b.endedAt ?? b.startedAt) - (a.endedAt ?? a.startedAt))
        .slice(0, limit);
    },
  };

  const changed = (
    key: string,
    fence: number,
    waitOptions: { signal: AbortSignal; timeoutMs: number },
  ): void | Promise<void> => {
    const { signal } = waitOptions;
    if (signal.aborted || (recent.get(key) ?? 0) >= fence) return;
    // Past the lease's end (plus a little for the server to expire it) the key may be free:
    // a crashed leader publishes nothing.
    const waitMs = Math.max(1, Math.min(waitOptions.timeoutMs + 5, pollMs));
    return new Promise<void>((resolve) => {
      let set = waiters.get(key);
      if (set === undefined) {
        set = new Set();
        waiters.set(key, set);
      }
      const own = set;
      const waiter: Waiter = {
        fence,
        done: () => {
          if (!own.delete(waiter)) return;
          if (own.size === 0 && waiters.get(key) === own) waiters.delete(key);
          clearTimeout(timer);
          signal.removeEventListener('abort', waiter.done);
          resolve();
        },
      };
      own.add(waiter);
      const timer = setTimeout(waiter.done, waitMs);
      timer.unref();
      signal.addEventListener('abort', waiter.done, { once: true });
    });
  };

  return {
    claim,
    renew,
    complete,
    release,
    changed,
    peek,
    putIfAbsent,
    receipts,
    close: () => {
      unlisten();
      wakeAll();
    },
  };
}

// What a release sends to delete the key's receipt rather than write one (see releaseScript).
const forgetReceipt = '-';

// The most receipt keys one `list` looks at.
const maxListedReceipts = 100_000;

function readReceipt(json: string): Receipt | undefined {
  if (json === '') return undefined;
  try {
    const receipt = JSON.parse(json) as Receipt;
    return typeof receipt === 'object' && receipt !== null && typeof receipt.key === 'string'
      ? receipt
      : undefined;
  } catch {
    return undefined;
  }
}

// A receipt whose evidence is not JSON is kept without it.
function writeReceipt(receipt: Receipt | undefined): string {
  if (receipt === undefined) return '';
  try {
    return JSON.stringify(receipt);
  } catch {
    const { evidence: _dropped, ...rest } = receipt;
    return JSON.stringify(rest);
  }
}

function unsettled(receipt: Receipt | undefined): Receipt | undefined {
  return receipt?.status === 'running' || receipt?.status === 'in_doubt' ? receipt : undefined;
}

// What a reset left of a key: nothing, so whatever ran before it is in doubt.
function resetReceipt(key: string, tool: string): Receipt {
  return { key, tool, status: 'in_doubt', attempts: 0, startedAt: Date.now(), window: 'store_reset' };
}

function matches(receipt: Receipt, query: ReceiptQuery): boolean {
  if (query.inDoubt === true && receipt.status !== 'in_doubt') return false;
  if (query.status !== undefined && receipt.status !== query.status) return false;
  return query.tool === undefined || receipt.tool === query.tool;
}
