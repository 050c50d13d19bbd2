// examples/durable/dbos.ts runs on a PostgreSQL database of this run's own and charges once.

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, postgresSuitesEnabled, type TestDatabase } from '../../helpers/postgres.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const enabled = await postgresSuitesEnabled('examples/durable/dbos');

describe.runIf(enabled)('examples/durable/dbos.ts', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase('dbos_example');
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('serves the second run of a workflow id from the checkpoint and charges the card once', async () => {
    const { code, stdout } = await new Promise<{ code: number; stdout: string }>((resolve) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', 'examples/durable/dbos.ts'],
        { cwd: root, env: { ...process.env, DBOS_SYSTEM_DATABASE_URL: database.url }, timeout: 60_000 },
        (error, out) => resolve({ code: error ? 1 : 0, stdout: out }),
      );
    });
    expect(code).toBe(0);
    expect(stdout).toContain('first run: {"chargeId":"ch_1042","amountCents":2500}');
    expect(stdout).toContain('same workflow id again: {"chargeId":"ch_1042","amountCents":2500}');
    expect(stdout).toContain('cards charged: 1');
  });
});
