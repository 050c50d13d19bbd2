// tool-dispatcher/redis against a real redis-server: adapters, option checks, results across processes, the mirror, round trips.

import { randomUUID } from 'node:crypto';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  defineScript,
  fromIoredis,
  fromNodeRedis,
  redisBudget,
  redisCircuitStore,
  redisIdempotencyStore,
  redisSlotStore,
  type StoreClient,
} from '../../../integrations/redis/index.js';
import type { CircuitView, IdempotencyLease, IdempotencyStore } from '../../../index.js';
import { redisSuitesEnabled, startRedisServer, type RedisServer } from '../../helpers/redis-server.js';
import { connectIoredis, connectNodeRedis, type Connected } from './clients.js';
import { countingClient } from './counting.js';

const enabled = redisSuitesEnabled('redis integration');
const fp = 'print';

// Holds the first reply to the script `name` until resume(), as if this process were paused.
function pausedReplies(
  inner: StoreClient,
  name: string,
): StoreClient & { held: Promise<void>; resume(): void } {
  let resume = () => {};
  let heldOne = () => {};
  const gate = new Promise<void>((resolve) => {
    resume = resolve;
  });
  const held = new Promise<void>((resolve) => {
    heldOne = resolve;
  });
  let holding = true;
  const client: StoreClient & { held: Promise<void>; resume(): void } = {
    held,
    resume,
    evalScript: async (script, keys, args) => {
      const reply = await inner.evalScript(script, keys, args);
      if (holding && script.name === name) {
        holding = false;
        heldOne();
        await gate;
      }
      return reply;
    },
  };
  if (inner.subscribe !== undefined) client.subscribe = inner.subscribe.bind(inner);
  return client;
}

async function lead(store: IdempotencyStore, key: string): Promise<IdempotencyLease> {
  const claim = await store.claim(key, fp);
  if (claim.kind !== 'lead') throw new Error(`expected lead, got ${claim.kind}`);
  return claim.lease;
}

describe('redis adapters and option checks', () => {
  it('refuses an object that is not a client, naming what it needs', () => {
    expect(() => fromNodeRedis({} as never)).toThrow(/evalSha/);
    expect(() => fromIoredis({} as never)).toThrow(/evalsha/);
    expect(() => redisIdempotencyStore({} as never)).toThrow(/StoreClient/);
  });

  it('names the option that is wrong', async () => {
    const client = fromIoredis({ evalsha: async () => 0, eval: async () => 0 });
    expect(() => redisIdempotencyStore(client, { leaseMs: 0 })).toThrow(/leaseMs/);
    expect(() => redisIdempotencyStore(client, { onStoreReset: 'maybe' as never })).toThrow(/onStoreReset/);
    expect(() => redisIdempotencyStore(client, { prefix: '' })).toThrow(/prefix/);
    expect(() => redisSlotStore(client, { pool: '', max: 1 })).toThrow(/pool/);
    expect(() => redisSlotStore(client, { pool: 'p', max: 0 })).toThrow(/max/);
    expect(() => redisCircuitStore(client, { mirrorTtlMs: -1 })).toThrow(/mirrorTtlMs/);
    await expect(redisBudget(client, { id: '', limit: 1 })).rejects.toThrow(/id/);
  });
});

describe.runIf(enabled)('redis stores on a real server', () => {
  let server: RedisServer;
  const open: Connected[] = [];
  const node = async () => {
    const connected = await connectNodeRedis(server.url);
    open.push(connected);
    return connected;
  };
  const io = async () => {
    const connected = await connectIoredis(server.url);
    open.push(connected);
    return connected;
  };

  beforeAll(async () => {
    server = await startRedisServer();
    console.info(`redis-server ${server.version} on ${server.url}`);
  });
  afterAll(async () => {
    await Promise.all(open.map((each) => each.close()));
    await server?.stop();
  });

  it("arms none of node-redis's per-command timers for the stores' scripts (each call has its own deadline)", async () => {
    const client = createClient({ url: server.url });
    client.on('error', () => {});
    await client.connect();
    // node-redis 6 makes an AbortSignal.timeout for each command, dropped once it is written.
    const timers = vi.spyOn(AbortSignal, 'timeout');
    try {
      await client.get(`plain-${randomUUID()}`);
      expect(timers).toHaveBeenCalledTimes(1);
      timers.mockClear();
      const script = defineScript(`echo ${randomUUID()}`, 'return ARGV[1]');
      const store = fromNodeRedis(client);
      expect(await store.evalScript(script, [], ['first'])).toBe('first'); // NOSCRIPT, then EVAL
      expect(await store.evalScript(script, [], ['again'])).toBe('again');
      expect(timers).not.toHaveBeenCalled();
    } finally {
      timers.mockRestore();
      client.destroy();
    }
  });

  for (const [name, connect] of [
    ['node-redis', node],
    ['ioredis', io],
  ] as const) {
    it(`runs a script the server has forgotten (NOSCRIPT falls back to EVAL) through ${name}`, async () => {
      const { store } = await connect();
      const script = defineScript(`echo ${randomUUID()}`, 'return ARGV[1]');
      expect(await store.evalScript(script, [], ['hello'])).toBe('hello');
      expect(await store.evalScript(script, [], ['again'])).toBe('again');
    });
  }

  it('shares a JSON result with another process, and marks an unserialisable one unshareable', async () => {
    const prefix = randomUUID();
    const a = redisIdempotencyStore((await node()).store, { prefix });
    const b = redisIdempotencyStore((await io()).store, { prefix, maxResultBytes: 64 });
    await a.complete(await lead(a, 'json'), { at: new Date(0), n: 1 }, 60_000);
    expect(await b.claim('json', fp)).toMatchObject({
      kind: 'hit',
      result: { at: '1970-01-01T00:00:00.000Z', n: 1 },
    });

    expect(await a.complete(await lead(a, 'bigint'), { n: 1n }, 60_000)).toEqual({ kind: 'stored' });
    const unshareable = await b.claim('bigint', fp);
    expect(unshareable).toMatchObject({ kind: 'unshareable' });
    if (unshareable.kind === 'unshareable') expect(unshareable.reason).toMatch(/not serialisable/);

    await b.complete(await lead(b, 'big'), 'x'.repeat(100), 60_000);
    expect(await a.claim('big', fp)).toMatchObject({
      kind: 'unshareable',
      reason: 'over maxResultBytes (64)',
    });
  });

  it('uses the given serialize and deserialize across processes', async () => {
    const prefix = randomUUID();
    const codec = {
      serialize: (value: unknown) => String(value),
      deserialize: (text: string) => BigInt(text),
    };
    const a = redisIdempotencyStore((await node()).store, { prefix, ...codec });
    const b = redisIdempotencyStore((await io()).store, { prefix, ...codec });
    await a.complete(await lead(a, 'k'), 12345678901234567890n, 60_000);
    expect(await b.claim('k', fp)).toMatchObject({ kind: 'hit', result: 12345678901234567890n });
  });

  it('costs one round trip per claim, complete, release, renew, slot acquire and release, and budget take', async () => {
    const counting = countingClient((await node()).store);
    const prefix = randomUUID();
    const store = redisIdempotencyStore(counting, { prefix });
    const lease = await lead(store, 'k');
    await store.renew(lease);
    await store.complete(lease, 1, 60_000);
    await store.claim('k', fp);
    expect(counting.total()).toBe(4);
    const slots = redisSlotStore(counting, { prefix, pool: 'p', max: 2 });
    counting.reset();
    const permit = await slots.tryAcquire();
    if (permit === undefined) throw new Error('expected a permit');
    await slots.release(permit);
    expect(counting.total()).toBe(2);
    const budget = await redisBudget(counting, { prefix, id: 'b', limit: 5 });
    counting.reset();
    await budget.tryConsume();
    expect(counting.total()).toBe(1);
  });

  it('answers circuit reads from the mirror with no round trip, and hears another process open it within 50 ms', async () => {
    const prefix = randomUUID();
    const counting = countingClient((await io()).store);
    const reader = redisCircuitStore(counting, { prefix, mirrorTtlMs: 60_000 });
    const writer = redisCircuitStore((await node()).store, { prefix });
    await reader.read('c'); // the first read of a circuit fills the mirror
    await new Promise((resolve) => setTimeout(resolve, 50)); // the subscription is confirmed
    await reader.read('c');
    counting.reset();
    for (let i = 0; i < 100; i++) expect(reader.read('c')).not.toBeInstanceOf(Promise);
    expect(counting.total()).toBe(0);

    const seen = await writer.read('c');
    const written = await writer.compareAndSet('c', seen.version, {
      state: 'open',
      failures: 5,
      openedAt: seen.now,
      probe: '',
      probeUntil: 0,
    });
    const startedAt = performance.now();
    let view = reader.read('c') as CircuitView;
    while (view.record?.state !== 'open' && performance.now() - startedAt < 1_000) {
      await new Promise((resolve) => setImmediate(resolve));
      view = reader.read('c') as CircuitView;
    }
    expect(view.record?.state).toBe('open');
    expect(view.version).toBe(written.view.version);
    expect(performance.now() - startedAt).toBeLessThan(50);
    expect(counting.total()).toBe(0);
  });

  it('reads a circuit afresh when its mirror is older than mirrorTtlMs and nobody publishes', async () => {
    const prefix = randomUUID();
    const plain = await connectNodeRedis(server.url, { subscriber: false });
    open.push(plain);
    const counted = countingClient(plain.store);
    const reader = redisCircuitStore(counted, { prefix, mirrorTtlMs: 30 });
    await reader.read('c');
    expect(reader.read('c')).not.toBeInstanceOf(Promise);
    await new Promise((resolve) => setTimeout(resolve, 40));
    counted.reset();
    expect(reader.read('c')).toBeInstanceOf(Promise);
    expect(counted.total()).toBe(1);
  });

  it('does not lead on a claim answered after its lease could have lapsed (a paused process)', async () => {
    const prefix = randomUUID();
    const paused = pausedReplies((await node()).store, 'idempotency claim');
    const a = redisIdempotencyStore(paused, { prefix, leaseMs: 150 });
    const b = redisIdempotencyStore((await io()).store, { prefix, leaseMs: 150 });
    const late = a.claim('charge', fp);
    await paused.held;
    // Redis gave A the lead, but A hears of it only after the lease ended and B ran the key.
    let claim = await b.claim('charge', fp);
    while (claim.kind === 'follow') {
      await new Promise((resolve) => setTimeout(resolve, 20));
      claim = await b.claim('charge', fp);
    }
    if (claim.kind !== 'lead') throw new Error(`expected lead, got ${claim.kind}`);
    await b.complete(claim.lease, 'charged by b', 60_000);
    paused.resume();
    expect(await late).toMatchObject({ kind: 'hit', result: 'charged by b' });
  });

  it('takes no slot permit answered after its lease could have lapsed (the cap would be passed)', async () => {
    const prefix = randomUUID();
    const paused = pausedReplies((await node()).store, 'slot acquire');
    const a = redisSlotStore(paused, { prefix, pool: 'api', max: 1, leaseMs: 150 });
    const b = redisSlotStore((await io()).store, { prefix, pool: 'api', max: 1, leaseMs: 150 });
    const late = a.tryAcquire();
    await paused.held;
    const granted = await new Promise((resolve, reject) => b.enqueue({ grant: resolve, fail: reject }));
    expect(granted).toMatchObject({ pool: 'api' });
    paused.resume();
    expect(await late).toBeUndefined();
    expect(await b.load()).toMatchObject({ running: 1 });
  });

  it('keeps the fleet cap across stores and hands a freed slot to the first waiter', async () => {
    const prefix = randomUUID();
    const a = redisSlotStore((await node()).store, { prefix, pool: 'api', max: 1 });
    const b = redisSlotStore((await io()).store, { prefix, pool: 'api', max: 1 });
    const held = await a.tryAcquire();
    if (held === undefined) throw new Error('expected a permit');
    const granted = new Promise((resolve, reject) => b.enqueue({ grant: resolve, fail: reject }));
    await a.release(held);
    await expect(granted).resolves.toMatchObject({ pool: 'api' });
  });
});
