// The DBOS worker the dbosStep kill test runs as a process of its own (`node --import tsx`), so
// the test can have it SIGKILL itself between the side effect and the checkpoint. Its side effects
// are counters in the test's redis-server; the first worker starts the workflow, a restarted one
// resumes it through DBOS's recovery, and whichever sees it finish writes its result to Redis.

import { DBOS } from '@dbos-inc/dbos-sdk';
import { createClient } from 'redis';
import { z } from 'zod';
import { createDispatcher, defaultStack, type Middleware, ToolRegistry } from '../../../index.js';
import { dbosStep } from '../../../integrations/dbos/index.js';
import { fromNodeRedis, redisIdempotencyStore } from '../../../integrations/redis/index.js';

const prefix = process.env.TD_PREFIX ?? 'td';
const workflowID = process.env.TD_WORKFLOW_ID ?? 'order';
const client = createClient({
  url: process.env.TD_REDIS_URL ?? 'redis://127.0.0.1:1',
  disableOfflineQueue: true,
});
const subscriber = client.duplicate();
client.on('error', () => {});
subscriber.on('error', () => {});
await client.connect();
await subscriber.connect();

async function killIf(point: string): Promise<void> {
  if ((await client.getDel(`${prefix}:kill:${point}`)) !== null) process.kill(process.pid, 'SIGKILL');
}

const order = z.object({ orderId: z.string(), amount: z.number() });
const registry = new ToolRegistry().register({
  name: 'payments.charge',
  inputSchema: order,
  handler: async ({ orderId, amount }) => {
    const charges = await client.incr(`${prefix}:charges:${orderId}`);
    await killIf('after-side-effect');
    return { chargeId: `ch_${orderId}_${charges}`, amount };
  },
  // Read by a core that reconciles (issue 24, requirement 1); older cores ignore it.
  ...{
    reconcile: async ({ orderId }: { orderId: string }) => {
      const charges = Number((await client.get(`${prefix}:charges:${orderId}`)) ?? 0);
      return charges === 0
        ? 'not_committed'
        : { status: 'committed', result: { chargeId: `ch_${orderId}_1` } };
    },
  },
});

// Outermost: dies after the idempotency store's write (before DBOS checkpoints the step) when armed.
const dieAfterStoreWrite: Middleware = async (_ctx, next) => {
  await next();
  await killIf('after-store-write');
};
const store = redisIdempotencyStore(fromNodeRedis(client, { subscriber }), { prefix, leaseMs: 1_000 });
const dispatcher = createDispatcher([
  dieAfterStoreWrite,
  ...defaultStack({ registry, idempotency: { store } }),
]);

const checkout = DBOS.registerWorkflow(
  async (input: z.infer<typeof order>) => dbosStep(dispatcher, 'payments.charge', input, { name: 'charge' }),
  { name: 'checkout' },
);

DBOS.setConfig({
  name: 'td-dbos-kill',
  systemDatabaseUrl: process.env.TD_DATABASE_URL ?? '',
  logLevel: 'error',
});
await DBOS.launch();
process.stdout.write('ready\n');

const first = (await client.set(`${prefix}:started:${workflowID}`, '1', { NX: true })) === 'OK';
const handle = first
  ? await DBOS.startWorkflow(checkout, { workflowID })({ orderId: workflowID, amount: 25 })
  : DBOS.retrieveWorkflow(workflowID);
const result = await handle.getResult();
await client.set(`${prefix}:result:${workflowID}`, JSON.stringify(result));
