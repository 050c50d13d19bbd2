// The checkout both engine suites run in a process of their own (the Restate service, the DBOS
// worker): a charge, a decline and an idempotent inventory check on the Redis idempotency store.
// Side effects are counters in the test's redis-server, which outlive the process;
// `<prefix>:kill:<point>` in Redis makes the process SIGKILL itself once there.

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

export const order = z.object({ orderId: z.string(), amount: z.number() });
export type Order = z.infer<typeof order>;

/** Connects to the test's Redis (TD_REDIS_URL, TD_PREFIX) and builds the checkout's dispatcher. */
export async function checkoutFixture() {
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
  const killIf = async (point: string): Promise<void> => {
    if ((await client.getDel(`${prefix}:kill:${point}`)) !== null) process.kill(process.pid, 'SIGKILL');
  };

  const registry = new ToolRegistry()
    .register({
      name: 'payments.charge',
      inputSchema: order,
      handler: async ({ orderId, amount }) => {
        const charges = await client.incr(`${prefix}:charges:${orderId}`);
        await killIf('after-side-effect');
        return { chargeId: `ch_${orderId}_${charges}`, amount };
      },
      reconcile: async ({ orderId }) => {
        const charges = Number((await client.get(`${prefix}:charges:${orderId}`)) ?? 0);
        return charges === 0
          ? 'not_committed'
          : { status: 'committed', result: { chargeId: `ch_${orderId}_1` } };
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

  // Outermost: records what the adapter passed, and dies after the idempotency store's write
  // (before the engine's journal write) when armed.
  const observe: Middleware = async (ctx, next) => {
    await client.set(
      `${prefix}:seen:${ctx.toolName}`,
      JSON.stringify({
        key: ctx.options.idempotencyKey,
        callId: ctx.callId,
        ttlMs: ctx.options.idempotencyTtlMs,
        signal: ctx.options.signal instanceof AbortSignal,
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
  return { client, prefix, registry, dispatcher };
}
