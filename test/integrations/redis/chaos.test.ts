// The Redis stores under faults: a wedged connection, a partition past the lease, resent commands, a server killed and restarted empty.

import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisBudget, redisIdempotencyStore, redisSlotStore } from '../../../integrations/redis/index.js';
import type { IdempotencyLease, IdempotencyStore } from '../../../index.js';
import { redisSuitesEnabled, startRedisServer, type RedisServer } from '../../helpers/redis-server.js';
import { connectIoredis, connectNodeRedis, reconnected, type Connected } from './clients.js';
import { FaultProxy } from './fault-proxy.js';

const enabled = redisSuitesEnabled('redis chaos');
const fp = 'print';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function lead(store: IdempotencyStore, key: string): Promise<IdempotencyLease> {
  const claim = await store.claim(key, fp);
  if (claim.kind !== 'lead') throw new Error(`expected lead, got ${claim.kind}`);
  return claim.lease;
}

describe.runIf(enabled)('redis stores under faults', () => {
  let server: RedisServer;
  let proxy: FaultProxy;
  const open: Connected[] = [];
  const track = (connected: Connected) => {
    open.push(connected);
    return connected;
  };

  beforeAll(async () => {
    server = await startRedisServer();
    proxy = await FaultProxy.start(server.host, server.port);
  });
  afterAll(async () => {
    await Promise.all(open.map((each) => each.close()));
    await proxy?.close();
    await server?.stop();
  });

  for (const [name, connect] of [
    ['node-redis', connectNodeRedis],
    ['ioredis', connectIoredis],
  ] as const) {
    it(`fails a call on a wedged connection with store_unavailable at its own deadline (${name})`, async () => {
      const behind = track(await connect(proxy.url, { subscriber: false }));
      const store = redisIdempotencyStore(behind.store, { prefix: randomUUID(), storeTimeoutMs: 200 });
      proxy.set({ kind: 'drop' });
      try {
        await expect(store.claim('k', fp)).rejects.toMatchObject({ kind: 'store_unavailable' });
      } finally {
        proxy.set({ kind: 'pass' });
        proxy.resetAll();
      }
    });
  }

  for (const [name, connect] of [
    ['node-redis', connectNodeRedis],
    ['ioredis', connectIoredis],
  ] as const) {
    it(`drops a wedged connection after calls stall, so calls succeed again once the network heals (${name})`, async () => {
      const behind = track(await connect(proxy.url, { subscriber: false }));
      const store = redisIdempotencyStore(behind.store, { prefix: randomUUID(), storeTimeoutMs: 100 });
      expect((await store.claim('before', fp)).kind).toBe('lead');
      proxy.set({ kind: 'drop' });
      // Commands written keep the socket busy, so no socket timeout ever fires: only the
      // store deadlines tell that the connection is wedged.
      for (let i = 0; i < 3; i++)
        await expect(store.claim(`during-${i}`, fp)).rejects.toMatchObject({ kind: 'store_unavailable' });
      proxy.set({ kind: 'pass' });
      let answered = false;
      for (let i = 0; i < 100 && !answered; i++) {
        try {
          answered = (await store.claim(`after-${i}`, fp)).kind === 'lead';
        } catch {
          await sleep(20);
        }
      }
      expect(answered).toBe(true);
    });
  }

  it('fails at once with store_unavailable while Redis is down, and fails keyed calls closed once it is back empty', async () => {
    const connected = track(await connectNodeRedis(server.url));
    const prefix = randomUUID();
    const store = redisIdempotencyStore(connected.store, { prefix, storeTimeoutMs: 300 });
    const budget = await redisBudget(connected.store, { prefix, id: 'run', limit: 5 });
    await store.complete(await lead(store, 'k'), 'once', 60_000);
    await server.kill();
    await expect(store.claim('k', fp)).rejects.toMatchObject({ kind: 'store_unavailable' });
    await expect(budget.tryConsume()).rejects.toMatchObject({ kind: 'store_unavailable' });
    await server.restart();
    await reconnected(connected);
    await expect(store.claim('k', fp)).rejects.toMatchObject({ kind: 'store_unavailable' });
    // The budget's count went with the restart: it fails closed too.
    await expect(budget.tryConsume()).rejects.toMatchObject({ kind: 'store_unavailable' });
  });

  it('tells a leader partitioned past its lease that it lost, and hands it the winner result', async () => {
    const prefix = randomUUID();
    const behind = track(await connectIoredis(proxy.url, { subscriber: false }));
    const direct = track(await connectNodeRedis(server.url));
    const stale = redisIdempotencyStore(behind.store, { prefix, leaseMs: 300, storeTimeoutMs: 2_000 });
    const fresh = redisIdempotencyStore(direct.store, { prefix, leaseMs: 300 });
    const old = await lead(stale, 'k');
    proxy.set({ kind: 'hold' });
    const renewal = Promise.resolve(stale.renew(old));
    await sleep(450);
    const taker = await lead(fresh, 'k');
    await fresh.complete(taker, 'winner', 60_000);
    proxy.set({ kind: 'pass' });
    expect(await renewal).toBe(false);
    expect(old.signal.aborted).toBe(true);
    expect(await stale.complete(old, 'loser', 60_000)).toEqual({
      kind: 'lost',
      winner: { result: 'winner' },
    });
    expect(await fresh.claim('k', fp)).toMatchObject({ kind: 'hit', result: 'winner' });
  });

  it('takes a budget unit once when ioredis resends an unanswered take after a reset', async () => {
    const prefix = randomUUID();
    // ioredis defaults: unanswered commands are sent again after a reconnect.
    const resending = track(
      await connectIoredis(proxy.url, {
        subscriber: false,
        overrides: {
          autoResendUnfulfilledCommands: true,
          maxRetriesPerRequest: 20,
          enableOfflineQueue: true,
        },
      }),
    );
    const direct = track(await connectNodeRedis(server.url, { subscriber: false }));
    const budget = await redisBudget(resending.store, { prefix, id: 'run', limit: 5, storeTimeoutMs: 5_000 });
    proxy.set({ kind: 'drop', replies: true });
    const take = budget.tryConsume();
    await sleep(100); // the take ran on the server; its answer was dropped
    proxy.set({ kind: 'pass' });
    proxy.resetAll();
    expect(await take).toBe(true);
    const view = await redisBudget(direct.store, { prefix, id: 'run', limit: 5 });
    expect(view.remaining).toBe(4);
  });

  it('gives a killed holder slot back to the fleet when its lease ends', async () => {
    const prefix = randomUUID();
    const doomed = track(await connectNodeRedis(server.url, { subscriber: false }));
    const survivor = track(await connectIoredis(server.url));
    const before = redisSlotStore(doomed.store, { prefix, pool: 'api', max: 1, leaseMs: 300 });
    const after = redisSlotStore(survivor.store, { prefix, pool: 'api', max: 1, leaseMs: 300, pollMs: 100 });
    expect(await before.tryAcquire()).toBeDefined();
    await doomed.close(); // the holder dies without releasing
    const granted = new Promise((resolve, reject) => after.enqueue({ grant: resolve, fail: reject }));
    await expect(granted).resolves.toMatchObject({ pool: 'api' });
  });

  it('grants a local permit while Redis is unreachable when onStoreError is local, and fails otherwise', async () => {
    const behind = track(await connectNodeRedis(proxy.url, { subscriber: false }));
    const prefix = randomUUID();
    const strict = redisSlotStore(behind.store, { prefix, pool: 'p', max: 1, storeTimeoutMs: 150 });
    const lenient = redisSlotStore(behind.store, {
      prefix,
      pool: 'q',
      max: 1,
      storeTimeoutMs: 150,
      onStoreError: 'local',
    });
    proxy.set({ kind: 'drop' });
    try {
      await expect(strict.tryAcquire()).rejects.toMatchObject({ kind: 'store_unavailable' });
      const permit = await lenient.tryAcquire();
      expect(permit).toBeDefined();
      if (permit !== undefined) await lenient.release(permit);
    } finally {
      proxy.set({ kind: 'pass' });
      proxy.resetAll();
    }
  });
});
