// One fleet worker: a real dispatcher on the Redis stores, dispatching the run's keys in its own
// order and logging every handler execution with fs.writeSync (so lines survive a SIGKILL).

import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { ToolRegistry, TransientError } from '../../index.js';
import {
  redisBudget,
  redisCircuitStore,
  redisIdempotencyStore,
  redisSlotStore,
} from '../../integrations/redis/index.js';
import { createFleetDispatcher } from '../../examples/fleet/dispatcher.js';
import {
  connectOnceUp,
  oneLine,
  seededRandom,
  shuffled,
  sleep,
  stampedLines,
  workerConfig,
  workerLog,
} from './worker-kit.js';

/** What the runner tells a worker (JSON in TD_FLEET_CONFIG). */
export interface WorkerConfig {
  id: string;
  url: string;
  client: 'node-redis' | 'ioredis';
  prefix: string;
  phase: 'keys' | 'budget' | 'breaker';
  keys: string[];
  seed: number;
  concurrency: number;
  leaseMs: number;
  ttlMs: number;
  resetWindowMs: number;
  storeTimeoutMs: number;
  fleetMax: number;
  logPath: string;
  budgetId?: string;
  budgetLimit?: number;
  budgetCalls?: number;
}

const config = workerConfig<WorkerConfig>('TD_FLEET_CONFIG');
const log = workerLog(config.logPath);
const line = stampedLines(log);
const rand = seededRandom(config.seed);

async function main(): Promise<void> {
  const connected = await connectOnceUp(config.client, config.url);
  const common = { prefix: config.prefix, storeTimeoutMs: config.storeTimeoutMs, leaseMs: config.leaseMs };
  const stores = {
    idempotency: redisIdempotencyStore(connected.store, {
      ...common,
      resetWindowMs: config.resetWindowMs,
      pollMs: 250,
    }),
    slots: redisSlotStore(connected.store, {
      ...common,
      pool: 'payments',
      max: config.fleetMax,
      pollMs: 100,
    }),
    circuits: redisCircuitStore(connected.store, {
      prefix: config.prefix,
      storeTimeoutMs: config.storeTimeoutMs,
    }),
  };
  const budget =
    config.phase === 'budget'
      ? await redisBudget(connected.store, {
          prefix: config.prefix,
          id: config.budgetId ?? 'run',
          limit: config.budgetLimit ?? 0,
        })
      : undefined;

  // The executions running now, by call id, so a lost slot lease names the execution it cut loose.
  const running = new Map<string, string>();
  const registry = new ToolRegistry();
  registry.register({
    name: 'payments.charge',
    description: 'Charges an order once.',
    inputSchema: z.object({ orderId: z.string(), amount: z.number() }),
    handler: async ({ orderId }, ctx) => {
      const token = randomUUID();
      line(`S ${orderId} ${token} ${config.id}`);
      running.set(ctx.callId, `${orderId} ${token}`);
      await sleep(20 + Math.floor(rand() * 100)); // the side effect; it ignores aborts, as a charge would
      running.delete(ctx.callId);
      line(`E ${orderId} ${token} ${config.id}`);
      return { chargeId: token };
    },
  });
  registry.register({
    name: 'budget.step',
    description: 'One step that costs a budget unit.',
    inputSchema: z.object({}),
    handler: async () => {
      line(`B - ${randomUUID()} ${config.id}`);
      return 'ok';
    },
  });
  registry.register({
    name: 'flaky.backend',
    description: 'A backend that is down.',
    inputSchema: z.object({}),
    handler: async (_args, ctx) => {
      line(`X - ${ctx.attempt} ${config.id}`);
      throw new TransientError('backend down');
    },
  });

  const dispatcher = createFleetDispatcher(registry, stores, {
    ttlMs: config.ttlMs,
    hooks: {
      leaseLost: (key) => line(`L ${key} - ${config.id}`),
      storeError: (key, operation, error) =>
        line(
          `W ${key} ${operation}:${String((error as Error)?.message ?? error)
            .replaceAll(' ', '_')
            .slice(0, 120)} ${config.id}`,
        ),
      circuitOpened: (key) => line(`O ${key} - ${config.id}`),
      slotLost: (callId) => {
        const execution = running.get(callId);
        if (execution !== undefined) line(`Q ${execution} ${config.id}`);
      },
    },
  });

  const pool = async <T>(items: T[], each: (item: T) => Promise<void>) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: config.concurrency }, async () => {
        while (next < items.length) await each(items[next++] as T);
      }),
    );
  };

  if (config.phase === 'keys') {
    await pool(shuffled(config.keys, rand), async (key) => {
      for (let tries = 0; tries < 400; tries++) {
        const outcome = await dispatcher.dispatch(
          'payments.charge',
          { orderId: key, amount: 100 },
          { idempotencyKey: key },
        );
        if (outcome.ok) {
          line(`R ${key} ${(outcome.result as { chargeId: string }).chargeId} ${config.id}`);
          return;
        }
        if (
          outcome.kind !== 'store_unavailable' &&
          outcome.kind !== 'timeout' &&
          outcome.kind !== 'cancelled'
        ) {
          line(`F ${key} ${outcome.kind} ${config.id}`);
          return;
        }
        await sleep(50 + Math.floor(rand() * 50));
      }
      line(`F ${key} gave_up ${config.id}`);
    });
  } else if (config.phase === 'budget') {
    await pool(
      Array.from({ length: config.budgetCalls ?? 0 }, (_, i) => i),
      async () => {
        const outcome = await dispatcher.dispatch('budget.step', {}, budget === undefined ? {} : { budget });
        line(`U - ${outcome.ok ? 'ok' : outcome.kind} ${config.id}`);
      },
    );
  } else {
    let stop = false;
    process.on('message', async (message) => {
      if (message !== 'check') return;
      stop = true;
      const outcome = await dispatcher.dispatch('flaky.backend', {});
      line(`C - ${outcome.ok ? 'ok' : outcome.kind} ${config.id}`);
      process.send?.('checked');
    });
    while (!stop) {
      await dispatcher.dispatch('flaky.backend', {});
      await sleep(5);
    }
    await new Promise<void>((resolve) =>
      process.once('message', (message) => message === 'exit' && resolve()),
    );
  }
  line(`DONE - - ${config.id}`);
  log.close();
  await connected.close();
  process.exit(0);
}

main().catch((error: unknown) => {
  line(`CRASH - ${oneLine(error)} ${config.id}`);
  process.exit(1);
});
