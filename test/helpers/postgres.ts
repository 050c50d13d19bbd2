// A PostgreSQL database of the test run's own, on the server at 127.0.0.1:5432 (trust auth, user
// postgres, or PGHOST/PGPORT/PGUSER), created with a unique name and dropped after.

import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** A database this run created. */
export interface TestDatabase {
  /** Its name, `td_<suite>_<random>`. */
  readonly name: string;
  /** A connection string to it. */
  readonly url: string;
  /** A pool on it (ended by `drop`). */
  readonly pool: pg.Pool;
  /** Ends the pool and drops the database, whoever is still connected. */
  drop(): Promise<void>;
}

const server = {
  host: process.env.PGHOST ?? '127.0.0.1',
  port: Number(process.env.PGPORT ?? 5432),
  user: process.env.PGUSER ?? 'postgres',
};

function adminClient(): pg.Client {
  return new pg.Client({ ...server, database: 'postgres', connectionTimeoutMillis: 3_000 });
}

/**
 * Whether the PostgreSQL suites can run here. When the server does not answer it prints one line
 * saying why and answers false, unless `TD_REQUIRE_POSTGRES=1`, when it throws (CI must not skip).
 */
export async function postgresSuitesEnabled(suite: string): Promise<boolean> {
  const client = adminClient();
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch (error) {
    const line = `[${suite}] skipped: no PostgreSQL at ${server.host}:${server.port} (${(error as Error).message})`;
    if (process.env.TD_REQUIRE_POSTGRES === '1')
      throw new Error(`${line}; TD_REQUIRE_POSTGRES=1 requires it`);
    console.warn(line);
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Creates a database named after `suite` and a random suffix, and a pool on it. */
export async function createTestDatabase(suite: string): Promise<TestDatabase> {
  const name = `td_${suite.replace(/\W/g, '_').toLowerCase()}_${randomBytes(5).toString('hex')}`;
  const admin = adminClient();
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = `postgresql://${server.user}@${server.host}:${server.port}/${name}`;
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  pool.on('error', () => {});
  return {
    name,
    url,
    pool,
    drop: async () => {
      await pool.end().catch(() => {});
      const closer = adminClient();
      await closer.connect();
      try {
        await closer.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await closer.end();
      }
    },
  };
}
