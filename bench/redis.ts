// The Redis stores' costs on a local redis-server of its own:
//   1. round trips per dispatch path, counted by a wrapping client (held to issue 14's budgets);
//   2. throughput of keyed dispatches at concurrency 64 across 4 processes, against bare
//      `SET NX PX` + `GET` pairs from the same client at the same concurrency (target ≥ 0.5×).
//
//   npx tsx bench/redis.ts [--seconds 3] [--processes 4] [--concurrency 64] [--rounds 3]
//
// The layers are the built-in ones with a `store`. Exits 1 when a round-trip budget or the
// throughput target is missed.

import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createClient } from 'redis';
import { z } from 'zod';
import {
  circuitBreaker,
  concurrencyLimit,
  createDispatcher,
  errorMapping,
  idempotency,
  toolLookup,
  ToolRegistry,
  TransientError,
} from '../index.js';
import {
  fromNodeRedis,
  redisBudget,
  redisCircuitStore,
  redisIdempotencyStore,
  redisSlotStore,
} from '../integrations/redis/index.js';
import { startRedisServer } from '../test/helpers/redis-server.js';
import { countingClient } from '../test/integrations/redis/counting.js';

const argv = process.argv.slice(2);
const flag = (name: string, fallback: number) => {
  const at = argv.indexOf(`--${name}`);
  return at >= 0 ? Number(argv[at + 1]) : fallback;
};

async function connect(url: string) {
  const raw = createClient({ url, disableOfflineQueue: true });
  const subscriber = raw.duplicate();
  raw.on('error', () => {});
  subscriber.on('error', () => {});
  await raw.connect();
  await subscriber.connect();
  return {
    store: fromNodeRedis(raw, { subscriber }),
    raw,
    close: () => {
      raw.destroy();
      subscriber.destroy();
    },
  };
}

function registry(): ToolRegistry {
  return new ToolRegistry()
    .register({
      name: 'payments.charge',
      description: 'Charges.',
      inputSchema: z.object({ orderId: z.string() }),
      handler: async ({ orderId }) => ({ orderId }),
    })
    .register({
      name: 'flaky',
      description: 'Fails.',
      inputSchema: z.object({}),
      handler: async () => {
        throw new TransientError('down');
      },
    });
}

async function roundTrips(url: string): Promise<Array<{ path: string; trips: number; budget: number }>> {
  const connected = await connect(url);
  const counting = countingClient(connected.store);
  const prefix = `bench-${randomUUID()}`;
  const idempotency_ = redisIdempotencyStore(counting, { prefix });
  const slots = redisSlotStore(counting, { prefix, pool: 'api', max: 64 });
  const circuits = redisCircuitStore(counting, { prefix, mirrorTtlMs: 60_000 });
  const budget = await redisBudget(counting, { prefix, id: 'run', limit: 1_000 });
  const tools = registry();
  const keyed = createDispatcher([errorMapping(), toolLookup(tools), idempotency({ store: idempotency_ })]);
  const slotted = createDispatcher([errorMapping(), toolLookup(tools), concurrencyLimit({ store: slots })]);
  const guarded = createDispatcher([errorMapping(), toolLookup(tools), circuitBreaker({ store: circuits })]);
  const budgeted = createDispatcher([errorMapping(), toolLookup(tools)]);
  const measure = async (path: string, budgetTrips: number, run: () => Promise<unknown>, times = 20) => {
    counting.reset();
    for (let i = 0; i < times; i++) await run();
    return { path, trips: counting.total() / times, budget: budgetTrips };
  };
  let n = 0;
  const rows = [
    await measure('keyed miss (leader)', 2, () =>
      keyed.dispatch('payments.charge', { orderId: `o${++n}` }, { idempotencyKey: `k${n}` }),
    ),
    await measure('keyed hit', 1, () =>
      keyed.dispatch('payments.charge', { orderId: 'o1' }, { idempotencyKey: 'k1' }),
    ),
  ];
  // Same-process followers: 10 callers of one key, one of them leads.
  counting.reset();
  const key = `same-${randomUUID()}`;
  await Promise.all(
    Array.from({ length: 10 }, () =>
      keyed.dispatch('payments.charge', { orderId: 'same' }, { idempotencyKey: key }),
    ),
  );
  rows.push({ path: 'same-process follower', trips: (counting.total() - 2) / 9, budget: 0 });
  await guarded.dispatch('payments.charge', { orderId: 'x' }); // the first read of a circuit fills the mirror
  await new Promise((resolve) => setTimeout(resolve, 50));
  rows.push(
    await measure('breaker closed, success', 0, () => guarded.dispatch('payments.charge', { orderId: 'x' })),
  );
  rows.push(
    await measure('budget, per attempt', 1, () =>
      budgeted.dispatch('payments.charge', { orderId: 'x' }, { budget }),
    ),
  );
  rows.push(
    await measure('slot acquire + release', 2, () => slotted.dispatch('payments.charge', { orderId: 'x' })),
  );
  connected.close();
  return rows;
}

async function child(
  mode: 'keyed' | 'bare',
  url: string,
  concurrency: number,
  seconds: number,
): Promise<number> {
  const connected = await connect(url);
  const prefix = `bench-${randomUUID()}`;
  const keyed = createDispatcher([
    errorMapping(),
    toolLookup(registry()),
    idempotency({ store: redisIdempotencyStore(connected.store, { prefix }) }),
  ]);
  let ops = 0;
  let running = true;
  setTimeout(() => (running = false), seconds * 1_000);
  let n = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (running) {
        const key = `${prefix}:${++n}`;
        if (mode === 'keyed') {
          const outcome = await keyed.dispatch('payments.charge', { orderId: key }, { idempotencyKey: key });
          if (!outcome.ok) throw outcome;
        } else {
          await connected.raw.set(key, 'v', { condition: 'NX', expiration: { type: 'PX', value: 60_000 } });
          await connected.raw.get(key);
        }
        ops += 1;
      }
    }),
  );
  connected.close();
  return ops / seconds;
}

async function throughput(
  url: string,
  mode: 'keyed' | 'bare',
  processes: number,
  concurrency: number,
  seconds: number,
): Promise<number> {
  const rates = await Promise.all(
    Array.from(
      { length: processes },
      () =>
        new Promise<number>((resolve, reject) => {
          const worker = fork(
            new URL(import.meta.url).pathname,
            ['--child', mode, url, String(Math.ceil(concurrency / processes)), String(seconds)],
            {
              execArgv: ['--import', 'tsx'],
            },
          );
          worker.once('message', (rate) => resolve(Number(rate)));
          worker.once('exit', (code) => code !== 0 && reject(new Error(`bench child exited ${code}`)));
        }),
    ),
  );
  return rates.reduce((sum, rate) => sum + rate, 0);
}

if (argv[0] === '--child') {
  const rate = await child(argv[1] as 'keyed' | 'bare', argv[2] as string, Number(argv[3]), Number(argv[4]));
  process.send?.(rate);
  if (process.send === undefined) console.log(rate);
  process.exit(0);
} else {
  const seconds = flag('seconds', 3);
  const processes = flag('processes', 4);
  const concurrency = flag('concurrency', 64);
  const server = await startRedisServer();
  let failed = false;
  try {
    console.log(`redis-server ${server.version} on ${server.url}, node-redis\n`);
    console.log('round trips per dispatch path');
    for (const row of await roundTrips(server.url)) {
      const ok = row.trips <= row.budget;
      failed ||= !ok;
      console.log(
        `  ${row.path.padEnd(26)} ${row.trips.toFixed(2).padStart(5)}   (budget ${row.budget})${ok ? '' : '  OVER'}`,
      );
    }
    // Interleaved rounds, the median ratio: a busy machine moves both sides of one round alike.
    const rounds: Array<{ bare: number; keyed: number }> = [];
    for (let round = 0; round < flag('rounds', 3); round++) {
      const bareRate = await throughput(server.url, 'bare', processes, concurrency, seconds);
      const keyedRate = await throughput(server.url, 'keyed', processes, concurrency, seconds);
      rounds.push({ bare: bareRate, keyed: keyedRate });
    }
    rounds.sort((a, b) => a.keyed / a.bare - b.keyed / b.bare);
    const { bare, keyed } = rounds[Math.floor(rounds.length / 2)] as { bare: number; keyed: number };
    const ratio = keyed / bare;
    failed ||= ratio < 0.5;
    console.log(
      `\nthroughput at concurrency ${concurrency} across ${processes} processes, ${seconds} s each, the median of ${rounds.length} interleaved rounds`,
    );
    console.log(`  bare SET NX PX + GET   ${Math.round(bare).toLocaleString('en')} pairs/s`);
    console.log(`  keyed dispatch (miss)  ${Math.round(keyed).toLocaleString('en')} dispatches/s`);
    console.log(
      `  ratio                  ${ratio.toFixed(2)}× (target ≥ 0.5×)${ratio < 0.5 ? '  MISSED' : ''}`,
    );
  } finally {
    await server.stop();
  }
  if (failed) process.exitCode = 1;
}
