// One worker of the fleet's exactly-once scenario: non-idempotent keyed charges against the
// runner's fake bank (its own ledger, asked by `reconcile`), on the Redis idempotency store with
// receipts in PostgreSQL. It may SIGKILL itself between the bank's answer and the store's write.
// Every outcome is logged with fs.writeSync, so lines survive a SIGKILL.

import pg from 'pg';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../../index.js';
import { postgresReceiptStore } from '../../integrations/postgres/index.js';
import { redisIdempotencyStore } from '../../integrations/redis/index.js';
import {
  connectOnceUp,
  oneLine,
  seededRandom,
  shuffled,
  sleep,
  workerConfig,
  workerLog,
} from './worker-kit.js';

/** What the runner tells an exactly-once worker (JSON in TD_ONCE_CONFIG). */
export interface OnceWorkerConfig {
  id: string;
  redisUrl: string;
  client: 'node-redis' | 'ioredis';
  postgresUrl: string;
  table: string;
  bankUrl: string;
  prefix: string;
  keys: string[];
  seed: number;
  concurrency: number;
  leaseMs: number;
  timeoutMs: number;
  resetWindowMs: number;
  /** The chance that the worker kills itself after a charge, before the store hears of it. */
  killAfterCharge: number;
  logPath: string;
}

const config = workerConfig<OnceWorkerConfig>('TD_ONCE_CONFIG');
const log = workerLog(config.logPath);
const line = log.write;
const rand = seededRandom(config.seed);

interface Charge {
  id: string;
}

async function main(): Promise<void> {
  const connected = await connectOnceUp(config.client, config.redisUrl, { attempts: 100 });
  const pool = new pg.Pool({ connectionString: config.postgresUrl, max: 4 });
  pool.on('error', () => {});
  const store = redisIdempotencyStore(connected.store, {
    prefix: config.prefix,
    leaseMs: config.leaseMs,
    storeTimeoutMs: 500,
    pollMs: 100,
    resetWindowMs: config.resetWindowMs,
  });
  const receipts = postgresReceiptStore(pool, { table: config.table });

  const registry = new ToolRegistry().register({
    name: 'payments.charge',
    description: 'Charges an order; the bank is not idempotent.',
    inputSchema: z.object({ amount: z.number() }),
    timeoutMs: config.timeoutMs,
    handler: async ({ amount }, { idempotencyKey, signal }) => {
      // Who sent each charge: a key charged twice names both senders, even one killed before it answered.
      line(`S ${idempotencyKey} - - - ${config.id}`);
      const response = await fetch(`${config.bankUrl}/charge/${encodeURIComponent(idempotencyKey ?? '')}`, {
        method: 'POST',
        body: JSON.stringify({ amount }),
        signal,
      });
      const charge = (await response.json()) as Charge;
      // Killed after the side effect, before the idempotency store's write.
      if (rand() < config.killAfterCharge) {
        line(`K ${idempotencyKey} after-charge ${config.id}`);
        process.kill(process.pid, 'SIGKILL');
      }
      return charge;
    },
    reconcile: async (_args, { idempotencyKey, signal }) => {
      const response = await fetch(`${config.bankUrl}/charge/${encodeURIComponent(idempotencyKey ?? '')}`, {
        signal,
      });
      if (response.status === 404) return 'not_committed';
      const charge = (await response.json()) as Charge;
      return { status: 'committed', result: charge, evidence: { id: charge.id } };
    },
    reconcileTimeoutMs: 5_000,
  });
  const dispatcher = createDispatcher(
    defaultStack({
      registry,
      idempotency: { store, receipts, ttlMs: config.resetWindowMs },
      retry: { maxAttempts: 1 },
    }),
    {
      // A receipt or a store write that failed is what a later double charge is read against.
      onEvent: (event) => {
        if (event.type !== 'receipt.failed' && event.type !== 'idempotency.store_error') return;
        const what = String(event.receiptStatus ?? event.operation);
        line(`E ${String(event.key)} ${event.type} ${what} - ${config.id}`);
      },
    },
  );

  const keys = shuffled(config.keys, rand);
  let next = 0;
  await Promise.all(
    Array.from({ length: config.concurrency }, async () => {
      while (next < keys.length) await call(keys[next++] as string);
    }),
  );

  async function call(key: string): Promise<void> {
    // The agent's own retries, with the same key, of what may be retried.
    for (let tries = 0; tries < 600; tries++) {
      const outcome = await dispatcher.dispatch('payments.charge', { amount: 100 }, { idempotencyKey: key });
      if (outcome.ok) {
        const window = outcome.reconciled?.window ?? '-';
        line(`R ${key} ${(outcome.result as Charge).id} ${window} ${outcome.attempts} ${config.id}`);
        return;
      }
      if (outcome.kind === 'outcome_unknown') {
        const why = outcome.message.replaceAll(' ', '_').slice(0, 200);
        line(`U ${key} ${outcome.window ?? '-'} ${why} - ${config.id}`);
        return;
      }
      if (!['store_unavailable', 'timeout', 'cancelled', 'transient'].includes(outcome.kind)) {
        line(`F ${key} ${outcome.kind} - - ${config.id}`);
        return;
      }
      await sleep(20 + Math.floor(rand() * 60));
    }
    line(`F ${key} gave_up - - ${config.id}`);
  }

  line(`DONE - - - - ${config.id}`);
  log.close();
  store.close();
  await connected.close();
  await pool.end();
  process.exit(0);
}

main().catch((error: unknown) => {
  line(`CRASH - ${oneLine(error)} - - ${config.id}`);
  process.exit(1);
});
