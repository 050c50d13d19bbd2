// The Restate service the restateRun suite registers: run as a process of its own (so a test can
// SIGKILL it) with `node --import tsx`. Its side effects are counters in the test's redis-server,
// which outlive the process; `<prefix>:kill:<point>` in Redis makes it SIGKILL itself once there.

import * as restate from '@restatedev/restate-sdk';
import { createClient } from 'redis';
import { z } from 'zod';
import {
  createDispatcher,
  defaultStack,
  type Middleware,
  ToolError,
  ToolRegistry,
  TransientError,
} from '../../../index.js';
import { fromNodeRedis, redisIdempotencyStore } from '../../../integrations/redis/index.js';
import { restateRun } from '../../../integrations/restate/index.js';

const prefix = process.env.TD_PREFIX ?? 'td';
const client = createClient({
  url: process.env.TD_REDIS_URL ?? 'redis://127.0.0.1:1',
  disableOfflineQueue: true,
});
const subscriber = client.duplicate();
client.on('error', () => {});
subscriber.on('error', () => {});
await client.connect();
await subscriber.connect();

/** SIGKILLs this process when the test armed `point`, once. */
async function killIf(point: string): Promise<void> {
  if ((await client.getDel(`${prefix}:kill:${point}`)) !== null) process.kill(process.pid, 'SIGKILL');
}

const order = z.object({ orderId: z.string(), amount: z.number() });
const registry = new ToolRegistry()
  .register({
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
  })
  .register({
    name: 'payments.decline',
    inputSchema: order,
    handler: () => {
      throw new ToolError('The card was declined');
    },
  })
  .register({
    name: 'inventory.check',
    idempotent: true,
    inputSchema: order,
    handler: async ({ orderId }) => {
      const tries = await client.incr(`${prefix}:checks:${orderId}`);
      if (tries < 3) throw new TransientError('inventory busy', { retryAfterMs: 20 });
      return { inStock: true, tries };
    },
  });

// Outermost: records what restateRun passed, and dies after the idempotency store's write when armed.
const observe: Middleware = async (ctx, next) => {
  const options = ctx.options as typeof ctx.options & { idempotencyTtlMs?: number };
  await client.set(
    `${prefix}:seen:${ctx.toolName}`,
    JSON.stringify({
      key: options.idempotencyKey,
      callId: ctx.callId,
      ttlMs: options.idempotencyTtlMs,
      signal: options.signal instanceof AbortSignal,
    }),
  );
  await next();
  await killIf('after-store-write');
};

const store = redisIdempotencyStore(fromNodeRedis(client, { subscriber }), { prefix, leaseMs: 1_000 });
const dispatcher = createDispatcher([
  observe,
  ...defaultStack({ registry, idempotency: { store }, retry: { maxAttempts: 2, baseDelayMs: 1 } }),
]);

type Order = z.infer<typeof order>;
const checkout = restate.service({
  name: 'Checkout',
  handlers: {
    charge: (ctx: restate.Context, input: Order) =>
      restateRun(ctx, dispatcher, 'payments.charge', input, { name: 'charge' }),
    decline: (ctx: restate.Context, input: Order) =>
      restateRun(ctx, dispatcher, 'payments.decline', input, { name: 'decline' }),
    declineAsData: (ctx: restate.Context, input: Order) =>
      restateRun(ctx, dispatcher, 'payments.decline', input, { name: 'decline', failures: 'return' }),
    check: (ctx: restate.Context, input: Order) =>
      restateRun(ctx, dispatcher, registry.get('inventory.check')!, input, {
        name: 'check',
        keyTtlMs: 3_600_000,
      }),
  },
});

await restate.serve({ services: [checkout], port: Number(process.env.TD_SERVICE_PORT) });
process.stdout.write('ready\n');
