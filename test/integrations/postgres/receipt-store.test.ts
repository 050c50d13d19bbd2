// postgresReceiptStore against a real PostgreSQL: a database of this run's own, dropped after.

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDispatchError } from '../../../index.js';
import type { Receipt } from '../../../index.js';
import {
  postgresReceiptStore,
  receiptTableSql,
  type PostgresNamedStatement,
  type PostgresQueryable,
} from '../../../integrations/postgres/index.js';
import { createTestDatabase, postgresSuitesEnabled, type TestDatabase } from '../../helpers/postgres.js';

const enabled = await postgresSuitesEnabled('postgres receipts');

/** The pool, counting the statements sent through it. */
function counted(pool: pg.Pool): PostgresQueryable & { texts: string[] } {
  const texts: string[] = [];
  return {
    texts,
    query: (statement: string | PostgresNamedStatement, values?: unknown[]) => {
      if (typeof statement === 'string') {
        texts.push(statement);
        return pool.query(statement, values);
      }
      texts.push(statement.text);
      return pool.query(statement);
    },
  };
}

const settled: Receipt = {
  key: 'order-1',
  tool: 'payments.charge',
  status: 'succeeded',
  attempts: 1,
  startedAt: 1_767_225_600_000,
  endedAt: 1_767_225_600_250,
  settledBy: 'handler',
};

describe('receiptTableSql', () => {
  it('quotes the table and names the indexes after it', () => {
    const sql = receiptTableSql('audit.receipts');
    expect(sql).toContain('CREATE TABLE IF NOT EXISTS "audit"."receipts"');
    expect(sql).toContain('CREATE INDEX IF NOT EXISTS "receipts_in_doubt" ON "audit"."receipts"');
    expect(receiptTableSql()).toContain('"tool_dispatcher_receipts"');
  });

  it('refuses a table name that is not a plain identifier', () => {
    for (const table of ['receipts; DROP TABLE users', 'a"b', '1receipts', 'a.b.c', '', 'x'.repeat(49)]) {
      expect(() => receiptTableSql(table)).toThrow(/^table must be/);
    }
  });
});

describe('postgresReceiptStore: bad input', () => {
  it('throws a TypeError naming pool, table or createTable', () => {
    expect(() => postgresReceiptStore({} as never)).toThrow(TypeError);
    expect(() => postgresReceiptStore(undefined as never)).toThrow(/^pool /);
    const pool = { query: async () => ({ rows: [] }) };
    expect(() => postgresReceiptStore(pool, { table: 'bad name' })).toThrow(/^table /);
    expect(() => postgresReceiptStore(pool, { createTable: 'yes' as never })).toThrow(/^createTable /);
  });

  it('rejects a malformed receipt or query with a TypeError before any statement', async () => {
    const texts: string[] = [];
    const store = postgresReceiptStore({
      query: async (text: string) => {
        texts.push(text);
        return { rows: [] };
      },
    });
    await expect(store.record({ ...settled, key: '' })).rejects.toThrow(/^receipt.key /);
    await expect(store.record({ ...settled, status: 'done' as never })).rejects.toThrow(/^receipt.status /);
    await expect(store.list({ limit: 0 })).rejects.toThrow(/^limit /);
    await expect(store.list({ status: 'lost' as never })).rejects.toThrow(/^status /);
    expect(texts).toEqual([]);
  });
});

describe.runIf(enabled)('postgresReceiptStore on PostgreSQL', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase('receipts');
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('creates its table once, on first use, then records with one statement per call', async () => {
    const pool = counted(database.pool);
    const store = postgresReceiptStore(pool, { table: 'created_once', createTable: true });
    expect(pool.texts).toEqual([]);
    await Promise.all([store.record(settled), store.record({ ...settled, key: 'order-2' })]);
    await store.record({ ...settled, key: 'order-3' });
    expect(pool.texts.filter((text) => text.startsWith('CREATE TABLE'))).toHaveLength(1);
    expect(pool.texts.filter((text) => text.startsWith('INSERT'))).toHaveLength(3);
  });

  it('names its statements for node-postgres, and sends plain text with namedStatements: false', async () => {
    const named: string[] = [];
    const store = postgresReceiptStore(
      {
        query: (statement: string | PostgresNamedStatement, values?: unknown[]) => {
          if (typeof statement !== 'string') named.push(statement.name);
          return typeof statement === 'string'
            ? database.pool.query(statement, values)
            : database.pool.query(statement);
        },
      },
      { table: 'named', createTable: true },
    );
    await store.record(settled);
    expect((await store.get(settled.key))?.status).toBe('succeeded');
    expect(named).toEqual([
      expect.stringMatching(/^tool_dispatcher_record_/),
      expect.stringMatching(/^tool_dispatcher_get_/),
    ]);

    // A queryable that takes only (text, values).
    const textOnly = postgresReceiptStore(
      { query: (text: string, values?: unknown[]) => database.pool.query(text, values) },
      { table: 'text_only', createTable: true, namedStatements: false },
    );
    await textOnly.record(settled);
    expect((await textOnly.get(settled.key))?.status).toBe('succeeded');
  });

  it('sends the records that arrive while one is in flight as one statement, the last of a key winning', async () => {
    const pool = counted(database.pool);
    const store = postgresReceiptStore(pool, { table: 'grouped', createTable: true });
    await store.record({ ...settled, key: 'warm' });
    const inserts = () => pool.texts.filter((text) => text.startsWith('INSERT')).length;
    const before = inserts();
    await Promise.all([
      store.record({ ...settled, key: 'a' }),
      store.record({ ...settled, key: 'b' }),
      store.record({ ...settled, key: 'b', status: 'in_doubt', window: 'lease_lost' }),
      store.record({ ...settled, key: 'c' }),
    ]);
    // 'a' goes alone; 'b', 'b' again and 'c' wait for it and go together.
    expect(inserts() - before).toBe(2);
    expect((await store.get('b'))?.status).toBe('in_doubt');
    expect((await store.list()).map(({ key }) => key).sort()).toEqual(['a', 'b', 'c', 'warm']);
  });

  it('rejects every record of a statement that failed, and sends the next one', async () => {
    const store = postgresReceiptStore(database.pool, { table: 'grouped_failure' });
    const failed = [store.record({ ...settled, key: 'x' }), store.record({ ...settled, key: 'y' })];
    for (const record of failed) await expect(record).rejects.toMatchObject({ kind: 'store_unavailable' });
    await database.pool.query(receiptTableSql('grouped_failure'));
    await store.record({ ...settled, key: 'z' });
    expect((await store.list()).map(({ key }) => key)).toEqual(['z']);
  });

  it('reads back every field it recorded, and no field it did not', async () => {
    const store = postgresReceiptStore(database.pool, { table: 'round_trip', createTable: true });
    const inDoubt: Receipt = {
      key: 'order-9',
      tool: 'payments.charge',
      status: 'in_doubt',
      attempts: 2,
      startedAt: 1_767_225_600_000,
      endedAt: 1_767_225_630_000,
      window: 'attempt_timeout',
      settledBy: 'reconcile',
      evidence: { bank: 'no answer', tries: [1, 2], at: 10n },
    };
    await store.record(inDoubt);
    await store.record(settled);
    expect(await store.get('order-9')).toEqual({
      ...inDoubt,
      evidence: { bank: 'no answer', tries: [1, 2], at: '10' },
    });
    expect(await store.get('order-1')).toStrictEqual(settled);
    expect(await store.get('order-404')).toBeUndefined();
  });

  it('sends one statement text whatever the batch size, and keeps awkward text intact in its arrays', async () => {
    const pool = counted(database.pool);
    const store = postgresReceiptStore(pool, { table: 'arrays', createTable: true });
    const awkward = ['a "quoted", {braced} key', 'back\\slash', 'NULL', '', 'ünï ☃'];
    const receipts = awkward.map(
      (text, i): Receipt => ({
        ...settled,
        key: `k${i}-${text}`,
        tool: text,
        attempts: i,
        startedAt: 1_767_225_600_000 + i,
        evidence: { text, list: [text, null], nested: { '"': '\\' } },
      }),
    );
    // The first goes alone, the four that arrive while it is in flight together.
    await Promise.all(receipts.map((receipt) => store.record(receipt)));
    const inserts = pool.texts.filter((text) => text.startsWith('INSERT'));
    expect(inserts).toHaveLength(2);
    expect(new Set(inserts).size).toBe(1);
    for (const receipt of receipts) expect(await store.get(receipt.key)).toStrictEqual(receipt);
  });

  it('upserts: the latest record of a key replaces the one before', async () => {
    const store = postgresReceiptStore(database.pool, { table: 'upserts', createTable: true });
    await store.record({
      key: 'k',
      tool: 'payments.charge',
      status: 'in_doubt',
      attempts: 1,
      startedAt: 5,
      endedAt: 9,
      window: 'lease_lost',
    });
    await store.record({
      key: 'k',
      tool: 'payments.charge',
      status: 'succeeded',
      attempts: 1,
      startedAt: 5,
      endedAt: 12,
      settledBy: 'reconcile',
    });
    const { rows } = await database.pool.query('SELECT count(*)::int AS n FROM upserts');
    expect(rows[0].n).toBe(1);
    expect(await store.get('k')).toStrictEqual({
      key: 'k',
      tool: 'payments.charge',
      status: 'succeeded',
      attempts: 1,
      startedAt: 5,
      endedAt: 12,
      settledBy: 'reconcile',
    });
  });

  it('lists the in-doubt receipts newest first, and filters by status, tool and limit', async () => {
    const store = postgresReceiptStore(database.pool, { table: 'listed', createTable: true });
    const at = (
      key: string,
      startedAt: number,
      status: Receipt['status'],
      tool = 'payments.charge',
    ): Receipt => ({
      key,
      tool,
      status,
      attempts: 1,
      startedAt,
    });
    await store.record(at('a', 1, 'in_doubt'));
    await store.record(at('b', 3, 'in_doubt', 'mail.send'));
    await store.record(at('c', 2, 'succeeded'));
    await store.record(at('d', 4, 'failed'));
    const keys = (receipts: Receipt[]) => receipts.map((receipt) => receipt.key);
    expect(keys(await store.list({ inDoubt: true }))).toEqual(['b', 'a']);
    expect(keys(await store.list({ inDoubt: false }))).toEqual(['d', 'c']);
    expect(keys(await store.list({ inDoubt: true, tool: 'payments.charge' }))).toEqual(['a']);
    expect(keys(await store.list({ status: 'failed' }))).toEqual(['d']);
    expect(keys(await store.list({ limit: 2 }))).toEqual(['d', 'b']);
    expect(keys(await store.list())).toEqual(['d', 'b', 'c', 'a']);
  });

  it('answers store_unavailable, with the driver error as cause, when the table is missing', async () => {
    const store = postgresReceiptStore(database.pool, { table: 'never_created' });
    const failure = await (async () => store.get('k'))().catch((error: unknown) => error);
    expect(isDispatchError(failure) && failure.kind).toBe('store_unavailable');
    expect((failure as Error).message).toBe('The PostgreSQL receipt store failed (42P01)');
    expect(((failure as Error).cause as { code?: string }).code).toBe('42P01');
  });

  it('tries the migration again after it failed once', async () => {
    let failNext = true;
    const store = postgresReceiptStore(
      {
        query: (text: string, values?: unknown[]) => {
          if (failNext && text.startsWith('CREATE')) {
            failNext = false;
            return Promise.reject(Object.assign(new Error('connection reset'), { code: 'ECONNRESET' }));
          }
          return database.pool.query(text, values);
        },
      },
      { table: 'second_try', createTable: true },
    );
    await expect(store.record(settled)).rejects.toMatchObject({ kind: 'store_unavailable' });
    await store.record(settled);
    expect(await store.get(settled.key)).toStrictEqual(settled);
  });

  it('creates the table once when two stores race to create it', async () => {
    const first = postgresReceiptStore(database.pool, { table: 'raced', createTable: true });
    const otherPool = new pg.Pool({ connectionString: database.url, max: 1 });
    const second = postgresReceiptStore(otherPool, {
      table: 'raced',
      createTable: true,
    });
    await Promise.all([first.record(settled), second.record({ ...settled, key: 'order-2' })]);
    await otherPool.end();
    expect((await first.list()).length).toBe(2);
  });
});
