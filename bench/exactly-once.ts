// Issue 24's PostgreSQL targets, in one run: round trips of an attached `postgresReceiptStore` per
// settled keyed call (≤ 1, none for a hit), and keyed throughput on the Redis idempotency store
// with it against the same stack without it (≥ 0.8×), 16 calls in flight. Needs PostgreSQL at
// 127.0.0.1:5432 (a database of the run's own, dropped after) and a redis-server binary (one of
// its own). Run: npx tsx bench/exactly-once.ts [--quick]

import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../index.js';
import { postgresReceiptStore } from '../integrations/postgres/index.js';
import { redisIdempotencyStore } from '../integrations/redis/index.js';
import { connectIoredis } from '../test/integrations/redis/clients.js';
import { createTestDatabase, postgresSuitesEnabled } from '../test/helpers/postgres.js';
import { startRedisServer } from '../test/helpers/redis-server.js';
import { pairedRatio, runGroup, type BenchCase } from './harness.js';

const quick = process.argv.includes('--quick');
if (!(await postgresSuitesEnabled('bench exactly-once'))) process.exit(0);
const database = await createTestDatabase('bench_once');
const redis = await startRedisServer();
const connected = await connectIoredis(redis.url);
try {
  let queries = 0;
  const pool = {
    query: (text: string, values?: unknown[]) => {
      queries += 1;
      return database.pool.query(text, values);
    },
  };
  const receipts = postgresReceiptStore(pool, { createTable: true });
  await receipts.list({ limit: 1 });

  const registry = new ToolRegistry().register({
    name: 'payments.charge',
    inputSchema: z.object({ amount: z.number() }),
    handler: ({ amount }) => ({ id: `ch_${amount}` }),
  });
  const store = redisIdempotencyStore(connected.store, { prefix: 'bench' });
  const dispatchers = {
    redis: createDispatcher(defaultStack({ registry, idempotency: { store } })),
    postgres: createDispatcher(defaultStack({ registry, idempotency: { store, receipts } })),
  };

  // Round trips: 200 fresh keys, then the same 200 again (hits).
  queries = 0;
  for (let i = 0; i < 200; i++)
    await dispatchers.postgres.dispatch('payments.charge', { amount: 1 }, { idempotencyKey: `rt-${i}` });
  const perMiss = queries / 200;
  queries = 0;
  for (let i = 0; i < 200; i++)
    await dispatchers.postgres.dispatch('payments.charge', { amount: 1 }, { idempotencyKey: `rt-${i}` });
  const perHit = queries / 200;

  let n = 0;
  const cases: BenchCase[] = Object.entries(dispatchers).map(([id, dispatcher]) => ({
    id,
    label: id,
    async batch(size: number) {
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next++ < size) {
            const outcome = await dispatcher.dispatch(
              'payments.charge',
              { amount: 1 },
              { idempotencyKey: `k${++n}` },
            );
            if (!outcome.ok) throw new Error(`${id}: ${outcome.kind}`);
          }
        }),
      );
    },
  }));
  const group = await runGroup(
    cases,
    quick
      ? { rounds: 11, warmupRounds: 2, warmupMs: 500, batchMs: 50 }
      : { rounds: 31, warmupRounds: 3, warmupMs: 1_000, batchMs: 100 },
  );
  // Time per call with receipts in PostgreSQL over time per call on Redis alone: its inverse is the
  // throughput ratio the issue states (≥ 0.8× throughput is ≤ 1.25× time).
  const time = pairedRatio(group, 'postgres', 'redis');
  console.log(`postgres receipt: round trips per settled keyed call: ${perMiss.toFixed(2)} (target ≤ 1)`);
  console.log(`postgres receipt: round trips per hit: ${perHit.toFixed(2)} (target 0)`);
  console.log(
    `postgres receipt: keyed throughput with / without: ${(1 / time.median).toFixed(3)}× ` +
      `(q1 ${(1 / time.q3).toFixed(3)}, q3 ${(1 / time.q1).toFixed(3)}; target ≥ 0.8×) ${1 / time.median >= 0.8 ? 'met' : 'MISSED'}`,
  );
  store.close();
} finally {
  await connected.close();
  await redis.stop();
  await database.drop();
}
