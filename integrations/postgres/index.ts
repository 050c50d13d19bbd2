/**
 * tool-dispatcher/postgres: idempotency receipts in PostgreSQL, one row per keyed execution, so
 * an operator can find every call whose outcome is in doubt long after Redis forgot it. Works
 * with any client that has `query(text, values)`; `pg` (the optional peer ^8.11) fits as it is,
 * and nothing here imports it.
 *
 * @example
 * import pg from 'pg';
 * import { postgresReceiptStore } from 'tool-dispatcher/postgres';
 * const receipts = postgresReceiptStore(new pg.Pool(), { createTable: true });
 * const stack = defaultStack({ registry, idempotency: { receipts } });
 *
 * @module tool-dispatcher/postgres
 */

export {
  postgresReceiptStore,
  type PostgresNamedStatement,
  type PostgresQueryable,
  type PostgresReceiptStore,
  type PostgresReceiptStoreOptions,
} from './receipt-store.js';
export { receiptTableSql } from './table-sql.js';
