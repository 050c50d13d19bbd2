// Regression (fleet exactly-once scenario under load, 8–13 double charges): a worker started
// while Redis restarted empty reached the new Redis before any worker that knew its earlier life.
// Its claims created the new epoch, so no reset was marked, and it led keys charged before the
// restart as if new: it ran them again, although their `succeeded` receipts were in the receipt
// store attached to the layer (PostgreSQL in the fleet), which outlives Redis. A claim in a
// store too young to vouch for a key's past now makes the layer ask that receipt store first.

import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createDispatcher,
  defaultStack,
  ToolRegistry,
  type Receipt,
  type ReceiptStore,
  type ReconcileContext,
} from '../../index.js';
import { memoryReceiptStore, type MemoryReceiptStore } from '../../middleware/index.js';
import { redisIdempotencyStore, type RedisIdempotencyStore } from '../../integrations/redis/index.js';
import { redisSuitesEnabled, startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { connectNodeRedis, type Connected } from '../integrations/redis/clients.js';

const enabled = redisSuitesEnabled('fresh worker after a Redis restart');

describe.runIf(enabled)('a worker that first meets Redis after it restarted empty', () => {
  let server: RedisServer;
  const open: Connected[] = [];
  const stores: RedisIdempotencyStore[] = [];

  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    for (const store of stores) store.close();
    await Promise.all(open.map((each) => each.close()));
    await server?.stop();
  });

  // A worker process: its own connection and store on the shared prefix, the shared receipts.
  async function worker(
    prefix: string,
    bank: Map<string, string[]>,
    receipts: ReceiptStore,
    options: { reconcile?: boolean } = {},
  ) {
    const connected = await connectNodeRedis(server.url);
    open.push(connected);
    const store = redisIdempotencyStore(connected.store, { prefix, leaseMs: 300, pollMs: 50 });
    stores.push(store);
    let runs = 0;
    const registry = new ToolRegistry().register({
      name: 'payments.charge',
      inputSchema: z.object({ amount: z.number() }),
      handler: (_args, { idempotencyKey }) => {
        runs += 1;
        const key = idempotencyKey as string;
        const id = `ch_${[...bank.values()].flat().length + 1}`;
        bank.set(key, [...(bank.get(key) ?? []), id]);
        return id;
      },
      ...(options.reconcile === false
        ? {}
        : {
            reconcile: (_args: unknown, { idempotencyKey }: ReconcileContext) => {
              const id = bank.get(idempotencyKey as string)?.[0];
              return id === undefined ? 'not_committed' : { status: 'committed' as const, result: id };
            },
          }),
    });
    const dispatcher = createDispatcher(
      defaultStack({ registry, idempotency: { store, receipts }, retry: { maxAttempts: 1 } }),
    );
    return {
      call: (key: string) => dispatcher.dispatch('payments.charge', { amount: 5 }, { idempotencyKey: key }),
      runs: () => runs,
    };
  }

  it('reconciles a key charged before the restart instead of charging it again', async () => {
    const prefix = `fresh-${randomUUID()}`;
    const bank = new Map<string, string[]>();
    // The receipt store that outlives Redis (PostgreSQL in the fleet), shared by the workers.
    const receipts = memoryReceiptStore();
    const old = await worker(prefix, bank, receipts);
    expect(await old.call('order-1')).toMatchObject({ ok: true, result: 'ch_1', attempts: 1 });
    expect(receipts.get('order-1')).toMatchObject({ status: 'succeeded' });

    await server.restart();
    // Started during the restart: it never knew the store's earlier life, and it is first.
    const fresh = await worker(prefix, bank, receipts);
    expect(await fresh.call('order-1')).toEqual({
      ok: true,
      result: 'ch_1',
      attempts: 0,
      reconciled: { window: 'store_reset' },
    });
    expect(bank.get('order-1')).toEqual(['ch_1']);
    expect(fresh.runs()).toBe(0);
    expect(receipts.get('order-1')).toMatchObject({
      status: 'succeeded',
      window: 'store_reset',
      settledBy: 'reconcile',
    });
    // Stored again: the next caller of the key is a hit.
    expect(await fresh.call('order-1')).toMatchObject({ ok: true, result: 'ch_1', attempts: 0 });
    // A key nobody ran before runs once, as on a first deployment.
    expect(await fresh.call('order-2')).toMatchObject({ ok: true, result: 'ch_2', attempts: 1 });
    expect(fresh.runs()).toBe(1);
  });

  it('never runs again a key charged before the restart when the tool cannot reconcile', async () => {
    const prefix = `fresh-${randomUUID()}`;
    const bank = new Map<string, string[]>();
    const receipts = memoryReceiptStore();
    const old = await worker(prefix, bank, receipts, { reconcile: false });
    expect(await old.call('order-1')).toMatchObject({ ok: true, result: 'ch_1' });

    await server.restart();
    const fresh = await worker(prefix, bank, receipts, { reconcile: false });
    expect(await fresh.call('order-1')).toMatchObject({
      ok: false,
      kind: 'outcome_unknown',
      window: 'store_reset',
    });
    expect(await fresh.call('order-1')).toMatchObject({ ok: false, kind: 'outcome_unknown' });
    expect(bank.get('order-1')).toEqual(['ch_1']);
    expect(fresh.runs()).toBe(0);
    // The earlier execution's receipt, now in doubt: when it started is kept.
    expect(receipts.get('order-1')).toMatchObject({
      status: 'in_doubt',
      window: 'store_reset',
      attempts: 1,
    });
  });

  // The receipt store of the workers, which fails every `get` while `down.now` is set.
  function flakyReceipts(down: { now: boolean }): { receipts: ReceiptStore; kept: MemoryReceiptStore } {
    const kept = memoryReceiptStore();
    const receipts: ReceiptStore = {
      get: (key) => {
        if (down.now) throw new Error('connection refused');
        return kept.get(key);
      },
      record: (receipt: Receipt) => kept.record(receipt),
      list: (query) => kept.list(query),
    };
    return { receipts, kept };
  }

  it('asks reconcile when the receipt store cannot answer', async () => {
    const prefix = `fresh-${randomUUID()}`;
    const bank = new Map<string, string[]>();
    const down = { now: false };
    const { receipts } = flakyReceipts(down);
    const old = await worker(prefix, bank, receipts);
    expect(await old.call('order-1')).toMatchObject({ ok: true, result: 'ch_1' });

    await server.restart();
    const fresh = await worker(prefix, bank, receipts);
    down.now = true;
    expect(await fresh.call('order-1')).toEqual({
      ok: true,
      result: 'ch_1',
      attempts: 0,
      reconciled: { window: 'store_reset' },
    });
    expect(await fresh.call('order-2')).toMatchObject({ ok: true, result: 'ch_2', attempts: 1 });
    expect(bank.get('order-1')).toEqual(['ch_1']);
  });

  it('fails a tool without reconcile as store_unavailable, running nothing, while the receipt store cannot answer', async () => {
    const prefix = `fresh-${randomUUID()}`;
    const bank = new Map<string, string[]>();
    const down = { now: false };
    const { receipts, kept } = flakyReceipts(down);
    const old = await worker(prefix, bank, receipts, { reconcile: false });
    expect(await old.call('order-1')).toMatchObject({ ok: true, result: 'ch_1' });

    await server.restart();
    const fresh = await worker(prefix, bank, receipts, { reconcile: false });
    down.now = true;
    expect(await fresh.call('order-1')).toMatchObject({ ok: false, kind: 'store_unavailable' });
    expect(fresh.runs()).toBe(0);
    // Nothing it wrote hides the earlier success, and the key is looked up again.
    expect(kept.get('order-1')).toMatchObject({ status: 'succeeded', attempts: 1 });
    down.now = false;
    expect(await fresh.call('order-1')).toMatchObject({
      ok: false,
      kind: 'outcome_unknown',
      window: 'store_reset',
    });
    expect(bank.get('order-1')).toEqual(['ch_1']);
    expect(fresh.runs()).toBe(0);
  });

  it('runs again a key whose receipt is older than its TTL (it may run again anyway)', async () => {
    const prefix = `fresh-${randomUUID()}`;
    const bank = new Map<string, string[]>([['order-1', ['ch_0']]]);
    const receipts: MemoryReceiptStore = memoryReceiptStore();
    receipts.record({
      key: 'order-1',
      tool: 'payments.charge',
      status: 'succeeded',
      attempts: 1,
      startedAt: Date.now() - 120_000,
      endedAt: Date.now() - 120_000,
    });
    const fresh = await worker(prefix, bank, receipts, { reconcile: false });
    // The layer's TTL is 60 s: a success two minutes old is not served any more.
    expect(await fresh.call('order-1')).toMatchObject({ ok: true, attempts: 1 });
    expect(fresh.runs()).toBe(1);
  });
});
