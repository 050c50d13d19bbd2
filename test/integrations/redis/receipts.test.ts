// Receipts on Redis (issue 24, item 4): they ride in the claim and the completion or release,
// so a keyed miss stays 2 round trips and a hit 1, and a key left in doubt is seen by another process.

import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry, type ReconcileVerdict } from '../../../index.js';
import { redisIdempotencyStore } from '../../../integrations/redis/index.js';
import { redisSuitesEnabled } from '../../helpers/redis-server.js';
import { redisSuite } from '../../helpers/redis-suite.js';
import { countingClient } from './counting.js';

const enabled = redisSuitesEnabled('redis receipts');

describe.runIf(enabled)('receipts on a real redis-server', () => {
  const redis = redisSuite();
  const node = () => redis.node();

  function worker(
    store: ReturnType<typeof redisIdempotencyStore>,
    handler: () => unknown,
    reconcile?: () => ReconcileVerdict,
  ) {
    let runs = 0;
    const registry = new ToolRegistry().register({
      name: 'payments.charge',
      inputSchema: z.object({ amount: z.number() }),
      timeoutMs: 50,
      handler: () => {
        runs += 1;
        return handler();
      },
      ...(reconcile === undefined ? {} : { reconcile }),
    });
    const dispatcher = createDispatcher(
      defaultStack({ registry, idempotency: { store }, retry: { maxAttempts: 1 } }),
    );
    return { dispatcher, runs: () => runs };
  }

  it('keeps a keyed miss at 2 round trips and a hit at 1, with the receipt written', async () => {
    const counting = countingClient((await node()).store);
    const store = redisIdempotencyStore(counting, { prefix: `rc-${randomUUID()}` });
    const { dispatcher } = worker(store, () => 'ch_1');
    expect(
      await dispatcher.dispatch('payments.charge', { amount: 5 }, { idempotencyKey: 'k1' }),
    ).toMatchObject({
      ok: true,
    });
    expect(counting.total()).toBe(2);
    counting.reset();
    expect(
      await dispatcher.dispatch('payments.charge', { amount: 5 }, { idempotencyKey: 'k1' }),
    ).toMatchObject({
      attempts: 0,
    });
    expect(counting.total()).toBe(1);
    expect(await store.receipts.get('k1')).toMatchObject({
      key: 'k1',
      tool: 'payments.charge',
      status: 'succeeded',
      attempts: 1,
      settledBy: 'handler',
    });
    store.close();
  });

  it('leaves a timed-out charge in doubt for every process: the same key is outcome_unknown, then reconciled', async () => {
    const prefix = `rc-${randomUUID()}`;
    const storeA = redisIdempotencyStore((await node()).store, { prefix });
    const storeB = redisIdempotencyStore((await node()).store, { prefix });
    const a = worker(storeA, () => new Promise(() => {}));
    expect(
      await a.dispatcher.dispatch('payments.charge', { amount: 5 }, { idempotencyKey: 'k2' }),
    ).toMatchObject({
      kind: 'timeout',
    });
    expect(await storeB.receipts.list({ inDoubt: true })).toEqual([
      expect.objectContaining({ key: 'k2', status: 'in_doubt', window: 'attempt_timeout' }),
    ]);
    const b = worker(storeB, () => 'charged again');
    expect(
      await b.dispatcher.dispatch('payments.charge', { amount: 5 }, { idempotencyKey: 'k2' }),
    ).toMatchObject({
      kind: 'outcome_unknown',
      window: 'attempt_timeout',
    });
    expect(b.runs()).toBe(0);
    const c = worker(
      storeB,
      () => 'charged again',
      () => ({ status: 'committed', result: 'ch_2' }),
    );
    expect(await c.dispatcher.dispatch('payments.charge', { amount: 5 }, { idempotencyKey: 'k2' })).toEqual({
      ok: true,
      result: 'ch_2',
      attempts: 0,
      reconciled: { window: 'attempt_timeout' },
    });
    expect(c.runs()).toBe(0);
    expect(await storeA.receipts.get('k2')).toMatchObject({ status: 'succeeded', settledBy: 'reconcile' });
    storeA.close();
    storeB.close();
  });

  it('names receiptTtlMs when it is wrong', async () => {
    const client = (await node()).store;
    expect(() => redisIdempotencyStore(client, { receiptTtlMs: 0 })).toThrow(/receiptTtlMs/);
  });
});
