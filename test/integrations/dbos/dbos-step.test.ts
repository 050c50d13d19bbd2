// dbosStep in real DBOS workflows, on a PostgreSQL database of this run's own, dropped after.

import { join } from 'node:path';
import { DBOS } from '@dbos-inc/dbos-sdk';
import { createClient } from 'redis';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDispatcher,
  defaultStack,
  type Middleware,
  ToolError,
  ToolRegistry,
  TransientError,
} from '../../../index.js';
import { dbosStep } from '../../../integrations/dbos/index.js';
import { fromNodeRedis, redisIdempotencyStore } from '../../../integrations/redis/index.js';
import { createTestDatabase, postgresSuitesEnabled, type TestDatabase } from '../../helpers/postgres.js';
import { redisSuitesEnabled, startRedisServer, type RedisServer } from '../../helpers/redis-server.js';
import { startServiceProcess, type ServiceProcess } from '../../helpers/service-process.js';

const enabled = await postgresSuitesEnabled('dbosStep');

const order = z.object({ orderId: z.string(), amount: z.number() });
type Order = z.infer<typeof order>;
const runs = new Map<string, number>();
const count = (name: string) => {
  const next = (runs.get(name) ?? 0) + 1;
  runs.set(name, next);
  return next;
};

const registry = new ToolRegistry()
  .register({
    name: 'payments.charge',
    inputSchema: order,
    handler: ({ orderId, amount }) => ({ chargeId: `ch_${orderId}_${count(`charge:${orderId}`)}`, amount }),
  })
  .register({
    name: 'payments.decline',
    inputSchema: order,
    handler: ({ orderId }) => {
      count(`decline:${orderId}`);
      throw new ToolError('The card was declined');
    },
  })
  .register({
    name: 'inventory.check',
    idempotent: true,
    inputSchema: order,
    handler: ({ orderId }) => {
      const tries = count(`check:${orderId}`);
      if (tries < 3) throw new TransientError('inventory busy');
      return { inStock: true, tries };
    },
  });

const seen: Array<{ key: unknown; callId: string; ttlMs: unknown; signal: boolean }> = [];
const observe: Middleware = async (ctx, next) => {
  const options = ctx.options as typeof ctx.options & { idempotencyTtlMs?: number };
  seen.push({
    key: options.idempotencyKey,
    callId: ctx.callId,
    ttlMs: options.idempotencyTtlMs,
    signal: options.signal instanceof AbortSignal,
  });
  await next();
};
const dispatcher = createDispatcher([
  observe,
  ...defaultStack({ registry, retry: { maxAttempts: 2, baseDelayMs: 1 } }),
]);

const charge = DBOS.registerWorkflow(
  async (input: Order) => dbosStep(dispatcher, 'payments.charge', input, { name: 'charge' }),
  { name: 'charge' },
);
const decline = DBOS.registerWorkflow(
  async (input: Order) => dbosStep(dispatcher, 'payments.decline', input, { name: 'decline' }),
  { name: 'decline' },
);
const declineAsData = DBOS.registerWorkflow(
  async (input: Order) =>
    dbosStep(dispatcher, 'payments.decline', input, { name: 'decline', failures: 'return' }),
  { name: 'declineAsData' },
);
const check = DBOS.registerWorkflow(
  async (input: Order) =>
    dbosStep(dispatcher, registry.get('inventory.check')!, input, {
      name: 'check',
      keyTtlMs: 3_600_000,
      intervalSeconds: 0.01,
    }),
  { name: 'check' },
);

/** Whether a Redis idempotency store leaves receipts (issue 24, requirement 4) in this build. */
function redisStoreKeepsReceipts(client: ReturnType<typeof createClient>): boolean {
  const store = redisIdempotencyStore(fromNodeRedis(client));
  return (store as { receipts?: unknown }).receipts !== undefined;
}

describe('dbosStep: bad input', () => {
  it('rejects a bad option with a TypeError naming it', async () => {
    const step = (options: object) => dbosStep(dispatcher, 'payments.charge', {}, options as never);
    await expect(step({})).rejects.toThrow(/^name must/);
    await expect(step({ name: 'charge', keyTtlMs: -1 })).rejects.toThrow(/^keyTtlMs must/);
    await expect(step({ name: 'charge', failures: 'swallow' })).rejects.toThrow(/^failures must/);
    await expect(step({ name: 'charge', maxAttempts: 0 })).rejects.toThrow(/^maxAttempts must/);
    await expect(step({ name: 'charge', intervalSeconds: 0 })).rejects.toThrow(/^intervalSeconds must/);
  });

  it('refuses to run outside a DBOS workflow', async () => {
    await expect(dbosStep(dispatcher, 'payments.charge', {}, { name: 'charge' })).rejects.toThrow(
      /^dbosStep runs only inside a DBOS workflow/,
    );
  });
});

describe.runIf(enabled)('dbosStep in DBOS workflows', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase('dbos');
    DBOS.setConfig({ name: 'td-dbos-test', systemDatabaseUrl: database.url, logLevel: 'error' });
    await DBOS.launch();
  }, 60_000);
  afterAll(async () => {
    await DBOS.shutdown();
    await database?.drop();
  });

  it('runs the call once as a step keyed by the workflow and step ids, for a day', async () => {
    const handle = await DBOS.startWorkflow(charge, { workflowID: 'order-o1' })({
      orderId: 'o1',
      amount: 10,
    });
    expect(await handle.getResult()).toEqual({ chargeId: 'ch_o1_1', amount: 10 });
    expect(seen.at(-1)).toEqual({
      key: 'dbos:order-o1:0',
      callId: 'dbos:order-o1:0',
      ttlMs: 86_400_000,
      signal: true,
    });
  });

  it('serves the same workflow id again from the checkpoint, without running the tool', async () => {
    const handle = await DBOS.startWorkflow(charge, { workflowID: 'order-o1' })({
      orderId: 'o1',
      amount: 10,
    });
    expect(await handle.getResult()).toEqual({ chargeId: 'ch_o1_1', amount: 10 });
    expect(runs.get('charge:o1')).toBe(1);
  });

  it('records a final failure without a retry and throws its envelope, without its cause, from the workflow', async () => {
    const handle = await DBOS.startWorkflow(decline)({ orderId: 'o2', amount: 10 });
    const failure = await handle.getResult().then(
      () => undefined,
      (error: unknown) => error as Error & { kind?: string },
    );
    expect(failure).toMatchObject({ kind: 'tool_error', message: 'The card was declined', attempts: 1 });
    expect(failure?.cause).toBeUndefined();
    expect(failure?.stack).toBe('DispatchError: The card was declined');
    expect(runs.get('decline:o2')).toBe(1);
  });

  it("returns a final failure as data with failures: 'return'", async () => {
    const handle = await DBOS.startWorkflow(declineAsData)({ orderId: 'o3', amount: 10 });
    expect(await handle.getResult()).toEqual({
      ok: false,
      kind: 'tool_error',
      message: 'The card was declined',
      attempts: 1,
      jsonrpcCode: -32603,
    });
  });

  it('lets DBOS run the step again for a transient failure once the in-process retries are spent', async () => {
    const handle = await DBOS.startWorkflow(check)({ orderId: 'o4', amount: 1 });
    expect(await handle.getResult()).toEqual({ inStock: true, tries: 3 });
    expect(seen.at(-1)?.ttlMs).toBe(3_600_000);
  });
});

describe.runIf(enabled && redisSuitesEnabled('dbosStep kill'))(
  'dbosStep when the worker dies mid-step',
  () => {
    const prefix = `td-dbos-${process.pid}`;
    let database: TestDatabase;
    let redis: RedisServer;
    let client: ReturnType<typeof createClient>;
    const workers: ServiceProcess[] = [];
    beforeAll(async () => {
      database = await createTestDatabase('dbos_kill');
      redis = await startRedisServer();
      client = createClient({ url: redis.url });
      client.on('error', () => {});
      await client.connect();
    }, 60_000);
    afterAll(async () => {
      for (const worker of workers) await worker.stop();
      client?.destroy();
      await redis?.stop();
      await database?.drop();
    });

    const runWorker = async (workflowID: string, killAt: string) => {
      await client.set(`${prefix}:kill:${killAt}`, '1');
      const worker = await startServiceProcess(join(import.meta.dirname, 'checkout-worker.ts'), {
        TD_REDIS_URL: redis.url,
        TD_DATABASE_URL: database.url,
        TD_PREFIX: prefix,
        TD_WORKFLOW_ID: workflowID,
      });
      workers.push(worker);
      for (;;) {
        const result = await client.get(`${prefix}:result:${workflowID}`);
        if (result !== null) return { result: JSON.parse(result), restarts: worker.restarts };
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };

    it('serves the recovered step from the store when the worker dies after the store write', async () => {
      const { result, restarts } = await runWorker('k1', 'after-store-write');
      expect(restarts).toBe(1);
      expect(result).toEqual({ chargeId: 'ch_k1_1', amount: 25 });
      expect(await client.get(`${prefix}:charges:k1`)).toBe('1');
    }, 60_000);

    // Closed by the core's reconcile of a crashed leader's `running` receipt (issue 24,
    // requirement 1), which needs a Redis store that keeps receipts; skipped until it has them.
    it('reconciles instead of charging again when the worker dies after the side effect, before the store write', async (context) => {
      if (!redisStoreKeepsReceipts(client)) context.skip();
      const { result, restarts } = await runWorker('k2', 'after-side-effect');
      expect(restarts).toBe(1);
      expect(result).toEqual({ chargeId: 'ch_k2_1' });
      expect(await client.get(`${prefix}:charges:k2`)).toBe('1');
    }, 60_000);
  },
);
