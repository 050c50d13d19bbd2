// Regression (fleet exactly-once hardening): a lead that settles an earlier receipt first (a
// reconcile, or a look in the attached receipt store after Redis was found young) holds its lease
// unrenewed meanwhile. Under load that step outlived the lease: another worker claimed the key,
// reconciled `not_committed` and charged, and the first then ran the charge too, on the word of
// a reconcile asked before that charge. A lead now renews its lease before it runs past such a
// step, and claims the key again (its new holder's outcome answers) when the lease is gone.

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
import { memoryReceiptStore } from '../../middleware/index.js';
import { redisIdempotencyStore, type RedisIdempotencyStore } from '../../integrations/redis/index.js';
import { fingerprint } from '../../src/fingerprint.js';
import { gate } from '../helpers/gate.js';
import { redisSuitesEnabled, startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { connectNodeRedis, type Connected } from '../integrations/redis/clients.js';

const enabled = redisSuitesEnabled('lead runs after its lease lapsed');
const leaseMs = 300;

describe.runIf(enabled)('a lead whose lease lapsed while it settled an earlier receipt', () => {
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

  async function storeOn(prefix: string): Promise<RedisIdempotencyStore> {
    const connected = await connectNodeRedis(server.url);
    open.push(connected);
    const store = redisIdempotencyStore(connected.store, { prefix, leaseMs, pollMs: 50 });
    stores.push(store);
    return store;
  }

  // A worker charging against the shared bank; `verdictAfter` holds its reconcile's answer back
  // until it opens, as a slow backend would, answering what the bank showed when it was asked.
  function worker(
    store: RedisIdempotencyStore,
    bank: Map<string, string[]>,
    options: { verdictAfter?: Promise<unknown>; receipts?: ReceiptStore } = {},
  ) {
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
      reconcile: async (_args: unknown, { idempotencyKey }: ReconcileContext) => {
        const id = bank.get(idempotencyKey as string)?.[0];
        await options.verdictAfter;
        return id === undefined ? 'not_committed' : { status: 'committed' as const, result: id };
      },
    });
    const idempotency = options.receipts === undefined ? { store } : { store, receipts: options.receipts };
    const dispatcher = createDispatcher(defaultStack({ registry, idempotency, retry: { maxAttempts: 1 } }));
    return {
      call: (key: string) => dispatcher.dispatch('payments.charge', { amount: 5 }, { idempotencyKey: key }),
      runs: () => runs,
    };
  }

  it('does not run a charge another worker made while its reconcile outlived the lease', async () => {
    const prefix = `lapse-${randomUUID()}`;
    const bank = new Map<string, string[]>();
    // A leader that crashed: its running receipt stays, its lease ends.
    const crashed = await storeOn(prefix);
    await crashed.claim('order-1', fingerprint('payments.charge', { amount: 5 }), {
      tool: 'payments.charge',
    });
    await sleep(leaseMs + 50);

    const slowAnswer = gate();
    const slow = worker(await storeOn(prefix), bank, { verdictAfter: slowAnswer.promise });
    const first = slow.call('order-1');
    // Its reconcile was asked (and saw no charge); its lease lapses while the answer is held.
    await sleep(leaseMs + 50);
    const other = worker(await storeOn(prefix), bank);
    expect(await other.call('order-1')).toMatchObject({ ok: true, result: 'ch_1', attempts: 1 });

    slowAnswer.open();
    expect(await first).toMatchObject({ ok: true, result: 'ch_1' });
    expect(bank.get('order-1')).toEqual(['ch_1']);
    expect(slow.runs()).toBe(0);
  });

  it('does not run a charge another worker made while its receipt lookup outlived the lease', async () => {
    const prefix = `lapse-${randomUUID()}`;
    const bank = new Map<string, string[]>();
    const kept = memoryReceiptStore();
    const lookup = gate();
    // The attached receipt store answers the first look late (a database under load), with what
    // it held when asked.
    let looks = 0;
    const slowReceipts: ReceiptStore = {
      get: async (key) => {
        looks += 1;
        const found = kept.get(key);
        if (looks === 1) await lookup.promise;
        return found;
      },
      record: (receipt: Receipt) => kept.record(receipt),
      list: (query) => kept.list(query),
    };
    // A young Redis: the first lead of the key asks the receipt store.
    const slow = worker(await storeOn(prefix), bank, { receipts: slowReceipts });
    const first = slow.call('order-1');
    await sleep(leaseMs + 50);
    const other = worker(await storeOn(prefix), bank, { receipts: kept });
    expect(await other.call('order-1')).toMatchObject({ ok: true, result: 'ch_1', attempts: 1 });

    lookup.open();
    expect(await first).toMatchObject({ ok: true, result: 'ch_1' });
    expect(bank.get('order-1')).toEqual(['ch_1']);
    expect(slow.runs()).toBe(0);
  });
});

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
