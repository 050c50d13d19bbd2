// Regression (issue 31, item 14): a receipt whose key or evidence PostgreSQL cannot hold (a NUL)
// failed the one statement its whole group commit went in, so every receipt batched with it was
// lost, and nobody was told.

import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Receipt } from '../../index.js';
import { postgresReceiptStore } from '../../integrations/postgres/index.js';
import { createTestDatabase, postgresSuitesEnabled, type TestDatabase } from '../helpers/postgres.js';

const enabled = await postgresSuitesEnabled('receipt batch');

function receipt(key: string, evidence?: unknown): Receipt {
  return {
    key,
    tool: 'payments.charge',
    status: 'succeeded',
    attempts: 1,
    startedAt: 1_767_225_600_000,
    endedAt: 1_767_225_600_100,
    settledBy: 'reconcile',
    ...(evidence === undefined ? {} : { evidence }),
  };
}

let database: TestDatabase;
beforeAll(async () => {
  if (enabled) database = await createTestDatabase('receipt_batch');
});
afterAll(async () => {
  await database?.drop();
});

it.runIf(enabled)('keeps every receipt of a batch that holds a NUL key or NUL evidence', async () => {
  const receipts = postgresReceiptStore(database.pool, { createTable: true });
  await receipts.ready();
  // The first goes alone; the rest arrive while it is in flight and go together in one batch.
  const sent = [
    receipts.record(receipt('order-0')),
    receipts.record(receipt('order-1')),
    receipts.record(receipt('order\u0000bad')),
    receipts.record(receipt('order-2', { id: 'ch_2', note: 'bank said \u0000' })),
    receipts.record(receipt('order-3')),
  ];
  const settled = await Promise.allSettled(sent);
  expect(settled.map((each) => each.status)).toEqual([
    'fulfilled',
    'fulfilled',
    'rejected',
    'fulfilled',
    'fulfilled',
  ]);
  expect(String((settled[2] as PromiseRejectedResult).reason)).toMatch(/receipt\.key contains U\+0000/);
  const kept = await receipts.list({ limit: 10 });
  expect(kept.map((each) => each.key).sort()).toEqual(['order-0', 'order-1', 'order-2', 'order-3']);
  // The NUL is stored escaped, as the six characters \u0000.
  expect((await receipts.get('order-2'))?.evidence).toEqual({ id: 'ch_2', note: 'bank said \\u0000' });
  expect(await receipts.get('order\u0000bad')).toBeUndefined();
});

it.runIf(enabled)('fails only the row PostgreSQL refuses when a batch breaks a constraint', async () => {
  const receipts = postgresReceiptStore(database.pool, { table: 'constrained', createTable: true });
  await receipts.ready();
  await database.pool.query(
    `ALTER TABLE constrained ADD CONSTRAINT no_refunds CHECK (tool <> 'payments.refund')`,
  );
  const first = receipts.record(receipt('a'));
  const batch = [
    receipts.record(receipt('b')),
    receipts.record({ ...receipt('c'), tool: 'payments.refund' }),
    receipts.record(receipt('d')),
  ];
  await first;
  const settled = await Promise.allSettled(batch);
  expect(settled.map((each) => each.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  expect((settled[1] as PromiseRejectedResult).reason).toMatchObject({ kind: 'store_unavailable' });
  expect((await receipts.list()).map((each) => each.key).sort()).toEqual(['a', 'b', 'd']);
});
