// A fleet of workers charging the same orders through Redis: each order is charged once, and an
// order whose worker is killed mid-charge is charged again by another only after its lease ends
// and its `reconcile` found the first charge never went through.
//
//   npm run demo:fleet                 starts a redis-server of its own on a free port
//   REDIS_URL=redis://… npm run demo:fleet
//
// The workers build their dispatcher as the fleet test does (examples/fleet/dispatcher.ts): the
// default stack with the Redis idempotency store and fleet pool, a shared breaker in front.

import { fork, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from 'redis';
import { z } from 'zod';
import { ToolRegistry } from '../index.js';
import {
  fromNodeRedis,
  redisCircuitStore,
  redisIdempotencyStore,
  redisSlotStore,
} from '../integrations/redis/index.js';
import { createFleetDispatcher } from './fleet/dispatcher.js';

const orders = Array.from({ length: 8 }, (_, i) => `order-${1001 + i}`);
const workerCount = 3;
const leaseMs = 1_000;

type Report =
  | { type: 'start' | 'end'; order: string; chargeId: string }
  | { type: 'result'; order: string; chargeId: string; ran: boolean }
  | { type: 'lost'; order: string }
  | { type: 'done' };

async function worker(url: string, name: string, prefix: string): Promise<void> {
  const send = (report: Report) => process.send?.(report);
  // Faults visible fast: no offline queue, socket timeouts, reconnect for ever.
  const client = createClient({
    url,
    disableOfflineQueue: true,
    pingInterval: 1_000,
    socket: { socketTimeout: 5_000, reconnectStrategy: (retries) => Math.min(50 * (retries + 1), 500) },
  });
  client.on('error', () => {});
  await client.connect();
  const subscriber = client.duplicate();
  subscriber.on('error', () => {});
  await subscriber.connect();
  const redis = fromNodeRedis(client, { subscriber });

  const registry = new ToolRegistry().register({
    name: 'payments.charge',
    description: 'Charges an order.',
    inputSchema: z.object({ orderId: z.string(), cents: z.number() }),
    handler: async ({ orderId }) => {
      const chargeId = `ch_${name}_${orderId.slice(-4)}`;
      send({ type: 'start', order: orderId, chargeId });
      await new Promise((resolve) => setTimeout(resolve, 300 + Math.random() * 300));
      send({ type: 'end', order: orderId, chargeId });
      // The bank's ledger: a charge is in it once it went through.
      await client.set(`${prefix}:ledger:${orderId}`, chargeId);
      return { chargeId };
    },
    // A charge whose worker died mid-call is never made again blind (it would be outcome_unknown):
    // the next worker asks the ledger, and charges only when the first charge never went through.
    reconcile: async ({ orderId }) => {
      const chargeId = await client.get(`${prefix}:ledger:${orderId}`);
      return chargeId === null ? 'not_committed' : { status: 'committed', result: { chargeId } };
    },
  });
  const dispatcher = createFleetDispatcher(
    registry,
    {
      idempotency: redisIdempotencyStore(redis, { prefix, leaseMs }),
      slots: redisSlotStore(redis, { prefix, pool: 'payments-api', max: 4, leaseMs }),
      circuits: redisCircuitStore(redis, { prefix }),
    },
    { ttlMs: 60_000, hooks: { leaseLost: (order) => send({ type: 'lost', order }) } },
  );

  const mine = [...orders].sort(() => Math.random() - 0.5);
  await Promise.all(
    mine.map(async (order) => {
      const outcome = await dispatcher.dispatch(
        'payments.charge',
        { orderId: order, cents: 4_200 },
        { idempotencyKey: order },
      );
      if (outcome.ok)
        send({
          type: 'result',
          order,
          chargeId: (outcome.result as { chargeId: string }).chargeId,
          ran: outcome.attempts > 0,
        });
    }),
  );
  send({ type: 'done' });
  client.destroy();
  subscriber.destroy();
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

async function localRedis(): Promise<{ url: string; stop(): void }> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'td-demo-'));
  const server = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    { stdio: 'ignore' },
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', () =>
      reject(new Error('redis-server is not installed; set REDIS_URL or apt-get install redis-server')),
    );
    const attempt = () => {
      const socket = createConnection({ port, host: '127.0.0.1' }, () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', () => setTimeout(attempt, 20));
    };
    attempt();
  });
  return {
    url: `redis://127.0.0.1:${port}`,
    stop: () => {
      server.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// One order's line of the summary: charged once is the promise; a start with no end is a killed
// worker's charge, which the lease let another worker make after it.
function chargeSummary(started: readonly string[], finished: readonly string[]): string {
  if (finished.length === 0) return `not charged (started by ${started.join(', ') || 'nobody'})`;
  const unfinished = started.filter((name) => !finished.includes(name));
  const note =
    unfinished.length === 0
      ? ''
      : `; ${unfinished.join(', ')} started it and was killed before its charge finished, so ${finished.at(-1)} charged it after the lease ended`;
  return finished.length === 1
    ? `charged once, by ${finished[0]}${note}`
    : `CHARGED ${finished.length} TIMES, by ${finished.join(', ')} (a duplicate charge)`;
}
async function main(): Promise<void> {
  const given = process.env.REDIS_URL;
  const redis = given === undefined || given === '' ? await localRedis() : { url: given, stop: () => {} };
  // One namespace for the whole fleet (and none left over from an earlier run).
  const prefix = `demo-${Date.now()}`;
  const startedAt = Date.now();
  const at = () => `+${String(Date.now() - startedAt).padStart(5)} ms`;
  // Who started each order's charge, and who finished one (a killed worker starts but never ends).
  const charges = new Map<string, string[]>();
  const completed = new Map<string, string[]>();
  const shared = new Map<string, number>();
  const led = new Map<string, number>();
  // The worker killed mid-charge: it may have begun more than one charge before the kill landed,
  // and none of them finished.
  let victim: string | undefined;
  console.log(
    `${workerCount} workers charge the same ${orders.length} orders through ${redis.url} (lease ${leaseMs} ms)\n`,
  );

  const children = Array.from({ length: workerCount }, (_, i) => {
    const name = `w${i + 1}`;
    const child = fork(new URL(import.meta.url).pathname, ['--worker', redis.url, name, prefix], {
      execArgv: process.execArgv,
    });
    const done = new Promise<void>((resolve) => {
      child.on('message', (report: Report) => {
        if (report.type === 'start') {
          charges.set(report.order, [...(charges.get(report.order) ?? []), name]);
          console.log(`${at()}  ${name} starts charging ${report.order}`);
          // Whichever worker starts a charge first dies in it, before it can record the result,
          // so every run shows a killed charge made again after its lease.
          if (victim === undefined) {
            victim = name;
            child.kill('SIGKILL');
            console.log(
              `${at()}  ${name} KILLED mid-charge of ${report.order}; its key and its fleet slots come back when their leases end (${leaseMs} ms)`,
            );
          }
        } else if (report.type === 'end') {
          completed.set(report.order, [...(completed.get(report.order) ?? []), name]);
          console.log(`${at()}  ${name} charged ${report.order} (${report.chargeId})`);
        } else if (report.type === 'result') {
          const tally = report.ran ? led : shared;
          tally.set(name, (tally.get(name) ?? 0) + 1);
          if (!report.ran)
            console.log(`${at()}  ${name} got ${report.order} without charging: ${report.chargeId}`);
        } else if (report.type === 'lost') {
          console.log(`${at()}  ${name} lost its lease on ${report.order}`);
        } else if (report.type === 'done') {
          resolve();
        }
      });
      child.once('exit', () => resolve());
    });
    return done;
  });
  await Promise.all(children);
  redis.stop();

  console.log('\nSummary');
  for (const order of orders)
    console.log(`  ${order}: ${chargeSummary(charges.get(order) ?? [], completed.get(order) ?? [])}`);
  for (let i = 1; i <= workerCount; i++) {
    const name = `w${i}`;
    if (name === victim) {
      console.log(`  ${name}: killed in its first charge`);
      continue;
    }
    console.log(
      `  ${name}: ran ${led.get(name) ?? 0} charges, shared ${shared.get(name) ?? 0} results (dedupe hits)`,
    );
  }
}

if (process.argv[2] === '--worker')
  await worker(process.argv[3] as string, process.argv[4] as string, process.argv[5] as string);
else await main();
