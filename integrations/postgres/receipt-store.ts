/**
 * Receipts in PostgreSQL: one row per keyed execution, written with one upsert per settled call,
 * kept until an operator deletes them (they outlive every Redis restart and TTL).
 * @module
 */

import { optionKeys, rejectUnknownKeys } from '../../middleware/index.js';
import type { ReceiptQuery, ReceiptStore } from '../../index.js';
import { storeUnavailable } from '../../src/stores.js';
import { defaultReceiptTable, receiptTable, receiptTableSql } from './table-sql.js';
import { ReceiptQueries } from './queries.js';

/** A `ReceiptStore` on PostgreSQL, with a check to run at start-up. */
export interface PostgresReceiptStore extends ReceiptStore {
  /**
   * Resolves once the store can write: the table created (with `createTable`) or found.
   * Rejects with a `store_unavailable` envelope that names the table and what failed (the
   * driver's message and SQLSTATE, e.g. `connect ECONNREFUSED 127.0.0.1:5432`); await it at
   * start-up, since a keyed call whose receipt cannot be written still succeeds.
   *
   * @example
   * await receipts.ready(); // fails the deploy, not the first charge's receipt
   */
  ready(): Promise<void>;
}

/**
 * What the store needs of a PostgreSQL client: `query(text, values)` answering `{ rows }`. A
 * `pg` `Pool` or `Client` fits as it is.
 */
export interface PostgresQueryable {
  /**
   * Runs one statement with `$1…$n` parameters; given `{ name, text, values }` (node-postgres'
   * named statement, sent unless `namedStatements: false`), runs it as a statement the
   * connection prepares once.
   */
  query(
    text: string | PostgresNamedStatement,
    values?: unknown[],
  ): Promise<{
    /** The rows the statement returned. */
    rows: unknown[];
  }>;
}

/** A named statement, as node-postgres' `query` takes it: prepared once per connection. */
export interface PostgresNamedStatement {
  /** The statement's name on each connection. */
  name: string;
  /** Its text, with `$1…$n` parameters. */
  text: string;
  /** Its parameters. */
  values: unknown[];
}

/** Options for `postgresReceiptStore`. */
export interface PostgresReceiptStoreOptions {
  /**
   * The table, `name` or `schema.name` (a plain identifier: it is quoted, never interpolated raw).
   * @default 'tool_dispatcher_receipts'
   */
  table?: string;
  /**
   * Run `receiptTableSql(table)` once, before the first statement; leave it off where
   * migrations are applied by other means.
   * @default false
   */
  createTable?: boolean;
  /**
   * Send the upsert and the lookup as named statements (`{ name, text, values }`), which
   * node-postgres prepares once per connection: PostgreSQL then skips a parse and plan on every
   * receipt (about 0.1 ms of each). Set `false` for a queryable that takes only `(text, values)`.
   * @default true
   */
  namedStatements?: boolean;
}

const postgresReceiptStoreOptionKeys = optionKeys<PostgresReceiptStoreOptions>({
  table: true,
  createTable: true,
  namedStatements: true,
});

/**
 * A `ReceiptStore` on PostgreSQL: `record` is one upsert (the latest record of a key wins, as
 * the seam says; records sent together go in one statement), `get` one lookup by key, `list` the
 * operator's query (`{ inDoubt: true }`), newest first. A statement that fails rejects with a `store_unavailable` envelope carrying the
 * driver's error as its `cause`; bound each statement with the pool's own `statement_timeout`.
 *
 * @param pool - A `pg` `Pool` or `Client`, or anything with `query(text, values)`.
 * @throws TypeError naming `pool`, `table` or `createTable` for a bad argument.
 * @example
 * import pg from 'pg';
 * import { postgresReceiptStore } from 'tool-dispatcher/postgres';
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, statement_timeout: 2_000 });
 * const receipts = postgresReceiptStore(pool, { createTable: true });
 * const stuck = await receipts.list({ inDoubt: true, limit: 50 });
 */
export function postgresReceiptStore(
  pool: PostgresQueryable,
  options: PostgresReceiptStoreOptions = {},
): PostgresReceiptStore {
  if (typeof (pool as { query?: unknown } | null | undefined)?.query !== 'function') {
    throw new TypeError('pool must have a query(text, values) method, such as a pg Pool or Client');
  }
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('postgresReceiptStore options must be an object');
  }
  rejectUnknownKeys('postgresReceiptStore', options, postgresReceiptStoreOptionKeys);
  const { table = defaultReceiptTable, createTable = false, namedStatements = true } = options;
  const { quoted } = receiptTable(table);
  if (typeof createTable !== 'boolean') {
    throw new TypeError(`createTable must be a boolean, got ${typeof createTable}`);
  }
  if (typeof namedStatements !== 'boolean') {
    throw new TypeError(`namedStatements must be a boolean, got ${typeof namedStatements}`);
  }
  const queries = new ReceiptQueries(quoted, namedStatements);
  const run = new StatementRunner(pool, createTable ? receiptTableSql(table) : undefined, table);
  const batch = new RecordBatch(run, queries);
  return {
    ready: () => run.ready(`SELECT 1 FROM ${quoted} LIMIT 0`),
    get: async (key) => {
      requireText('key', key);
      // No row can hold such a key (see valuesOf); asking would fail the statement.
      if (key.includes('\u0000')) return undefined;
      const rows = await run.query(queries.statement('get', [key]));
      return rows[0] === undefined ? undefined : queries.receiptOf(rows[0]);
    },
    record: async (receipt) => batch.record(queries.valuesOf(receipt)),
    list: async (query?: ReceiptQuery) => {
      const { text, values } = queries.list(query);
      return (await run.query({ text, values })).map((row) => queries.receiptOf(row));
    },
  };
}

/** A recorded receipt's parameters, and the promise its caller awaits. */
interface PendingRecord {
  readonly values: unknown[];
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Group commit: a record sent while no statement is in flight goes at once; those that arrive
 * while one is in flight go together in the next, one upsert for all, so a busy fleet pays one
 * commit per batch rather than one per call. Within a batch the last record of a key wins, as
 * it would have one statement after another. A batch that PostgreSQL refuses for its data (a
 * value it cannot hold, a constraint) is sent again one row per statement, so only the bad row
 * fails.
 */
class RecordBatch {
  #queue: PendingRecord[] = [];
  #inFlight = false;

  constructor(
    private readonly run: StatementRunner,
    private readonly queries: ReceiptQueries,
  ) {}

  record(values: unknown[]): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ values, resolve, reject });
      if (!this.#inFlight) void this.#send();
    });
  }

  async #send(): Promise<void> {
    this.#inFlight = true;
    while (this.#queue.length > 0) {
      const sent = this.#queue;
      this.#queue = [];
      const latest = new Map<unknown, unknown[]>();
      for (const { values } of sent) {
        latest.delete(values[0]);
        latest.set(values[0], values);
      }
      try {
        await this.run.query(this.queries.statement('record', this.queries.columnsOf([...latest.values()])));
        for (const pending of sent) pending.resolve();
      } catch (error) {
        if (latest.size > 1 && isDataError(error)) await this.#sendAlone(sent, latest);
        else for (const pending of sent) pending.reject(error);
      }
    }
    this.#inFlight = false;
  }

  // Each key's latest row in a statement of its own: the records of a key share its answer.
  async #sendAlone(sent: PendingRecord[], latest: Map<unknown, unknown[]>): Promise<void> {
    for (const [key, values] of latest) {
      let failure: unknown;
      try {
        await this.run.query(this.queries.statement('record', this.queries.columnsOf([values])));
      } catch (error) {
        failure = error ?? new Error('the statement failed');
      }
      for (const pending of sent) {
        if (pending.values[0] !== key) continue;
        if (failure === undefined) pending.resolve();
        else pending.reject(failure);
      }
    }
  }
}

// The PostgreSQL errors that mean the table already exists, raised when two processes run the
// migration at once: the other one won, which is what this one wanted. 42710 is the table's row
// type, which the other CREATE TABLE made a moment before the table.
const createdConcurrently = new Set(['42P07', '23505', '42710']);

/** Runs statements on the pool, the migration first when asked, failures as `store_unavailable`. */
class StatementRunner {
  #migrated: Promise<void> | undefined;

  constructor(
    private readonly pool: PostgresQueryable,
    private readonly migration: string | undefined,
    private readonly table: string,
  ) {}

  /** Resolves once the table is created (by the migration) or can be read (by `probe`). */
  async ready(probe: string): Promise<void> {
    if (this.migration !== undefined) return this.#migrate(this.migration);
    try {
      await this.pool.query(probe);
    } catch (error) {
      throw unavailable(error, `could not read its table "${this.table}"`);
    }
  }

  async query(statement: {
    name?: string;
    text: string;
    values: unknown[];
  }): Promise<Record<string, unknown>[]> {
    if (this.migration !== undefined) await this.#migrate(this.migration);
    try {
      const { name, text, values } = statement;
      const { rows } = await (name === undefined
        ? this.pool.query(text, values)
        : this.pool.query({ name, text, values }));
      return rows as Record<string, unknown>[];
    } catch (error) {
      throw unavailable(error);
    }
  }

  #migrate(migration: string): Promise<void> {
    // One run per store; a failed one is forgotten, so the next statement tries again.
    this.#migrated ??= this.pool.query(migration).then(
      () => undefined,
      (error: unknown) => {
        if (createdConcurrently.has(sqlState(error) ?? '')) return;
        this.#migrated = undefined;
        throw unavailable(error, `could not create its table "${this.table}"`);
      },
    );
    return this.#migrated;
  }
}

function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

// The SQLSTATE classes of a statement refused for its data: 22 (a value it cannot hold, such as
// a NUL) and 23 (a constraint).
function isDataError(error: unknown): boolean {
  const code = sqlState((error as { cause?: unknown } | null | undefined)?.cause);
  return code !== undefined && (code.startsWith('22') || code.startsWith('23'));
}

// The message names the SQLSTATE (or the socket error code) and never the statement's values.
// Only a statement without values (the migration, the start-up check) says the driver's own
// words, as `what` went wrong: it quotes no receipt.
function unavailable(error: unknown, what?: string) {
  const code = sqlState(error);
  const said = code === undefined ? '' : ` (${code})`;
  if (what === undefined)
    return storeUnavailable(`The PostgreSQL receipt store failed${said}`, { cause: error });
  const driver = error instanceof Error && error.message !== '' ? `: ${error.message}` : '';
  return storeUnavailable(`The PostgreSQL receipt store ${what}${driver}${said}`, { cause: error });
}

function requireText(name: string, value: unknown): void {
  if (typeof value !== 'string' || value === '') throw new TypeError(`${name} must be a non-empty string`);
}
