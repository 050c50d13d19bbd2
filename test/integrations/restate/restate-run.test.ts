// restateRun against a real restate-server (the npm package) on free ports, with the service in a
// process of its own that the tests kill between the side effect and the journal write.

import { join } from 'node:path';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDispatcher, defaultStack, ToolRegistry } from '../../../index.js';
import { fromNodeRedis, redisIdempotencyStore } from '../../../integrations/redis/index.js';
import { restateRun } from '../../../integrations/restate/index.js';
import { freePort } from '../../helpers/free-port.js';
import { redisSuitesEnabled, startRedisServer, type RedisServer } from '../../helpers/redis-server.js';
import {
  restateSuitesEnabled,
  startRestateServer,
  type RestateServer,
} from '../../helpers/restate-server.js';
import { startServiceProcess, type ServiceProcess } from '../../helpers/service-process.js';

const enabled = redisSuitesEnabled('restateRun') && restateSuitesEnabled('restateRun');

/** Whether a Redis idempotency store leaves receipts (issue 24, requirement 4) in this build. */
function redisStoreKeepsReceipts(client: ReturnType<typeof createClient>): boolean {
  const store = redisIdempotencyStore(fromNodeRedis(client));
  return (store as { receipts?: unknown }).receipts !== undefined;
}

describe('restateRun: bad input', () => {
  const dispatcher = createDispatcher(defaultStack({ registry: new ToolRegistry() }));
  const run = (
    options: object,
    ctx: unknown = {},
    tool: unknown = 'payments.charge',
    using: unknown = dispatcher,
  ) => restateRun(ctx as never, using as never, tool as never, {}, options as never);

  it('rejects a bad option with a TypeError naming it', async () => {
    await expect(run({})).rejects.toThrow(/^name must/);
    await expect(run({ name: 'charge', keyTtlMs: 0 })).rejects.toThrow(/^keyTtlMs must/);
    await expect(run({ name: 'charge', keyTtlMs: 1.5 })).rejects.toThrow(/^keyTtlMs must/);
    await expect(run({ name: 'charge', failures: 'ignore' })).rejects.toThrow(/^failures must/);
    await expect(run({ name: 'charge' }, {}, '')).rejects.toThrow(/^tool must/);
    await expect(run({ name: 'charge' }, {}, 'payments.charge', {})).rejects.toThrow(/^dispatcher must/);
  });

  it('refuses to run outside a Restate handler, naming ctx', async () => {
    await expect(run({ name: 'charge' }, undefined)).rejects.toThrow(
      /^ctx must be the Restate handler context/,
    );
    await expect(run({ name: 'charge' }, { run: () => {} })).rejects.toThrow(TypeError);
  });
});

describe.runIf(enabled)('restateRun on a restate-server', () => {
  const prefix = `td-restate-${process.pid}`;
  let redis: RedisServer;
  let restate: RestateServer;
  let service: ServiceProcess;
  let client: ReturnType<typeof createClient>;

  beforeAll(async () => {
    redis = await startRedisServer();
    client = createClient({ url: redis.url });
    client.on('error', () => {});
    await client.connect();
    restate = await startRestateServer();
    const port = await freePort();
    service = await startServiceProcess(join(import.meta.dirname, 'checkout-service.ts'), {
      TD_REDIS_URL: redis.url,
      TD_SERVICE_PORT: String(port),
      TD_PREFIX: prefix,
    });
    await restate.register(`http://127.0.0.1:${port}`);
  }, 120_000);

  afterAll(async () => {
    await service?.stop();
    await restate?.stop();
    client?.destroy();
    await redis?.stop();
  });

  const invoke = async (handler: string, body: unknown) => {
    const response = await fetch(`${restate.ingressUrl}/Checkout/${handler}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const counter = async (name: string) => Number((await client.get(`${prefix}:${name}`)) ?? 0);
  const seen = async (tool: string) => JSON.parse((await client.get(`${prefix}:seen:${tool}`)) ?? '{}');

  it('runs the call once in ctx.run, keyed by the invocation id and the step name, for a day', async () => {
    const answer = await invoke('charge', { orderId: 'o1', amount: 10 });
    expect(answer).toEqual({ status: 200, body: { chargeId: 'ch_o1_1', amount: 10 } });
    expect(await counter('charges:o1')).toBe(1);
    const options = await seen('payments.charge');
    expect(options.key).toMatch(/^restate:inv_\w+:charge$/);
    expect(options).toMatchObject({ callId: options.key, ttlMs: 86_400_000, signal: true });
  });

  it('fails terminally, naming the kind, when the tool reports a failure', async () => {
    const answer = await invoke('decline', { orderId: 'o2', amount: 10 });
    expect(answer.status).toBe(500);
    expect(answer.body.message).toBe('tool_error: The card was declined');
  });

  it("journals a final failure as data with failures: 'return'", async () => {
    const answer = await invoke('declineAsData', { orderId: 'o3', amount: 10 });
    expect(answer).toEqual({
      status: 200,
      body: {
        ok: false,
        kind: 'tool_error',
        message: 'The card was declined',
        attempts: 1,
        jsonrpcCode: -32603,
      },
    });
  });

  it('hands a transient failure to Restate once the in-process retries are spent', async () => {
    // Two attempts in the stack fail; Restate runs the step again, and the third attempt succeeds.
    const answer = await invoke('check', { orderId: 'o4', amount: 1 });
    expect(answer).toEqual({ status: 200, body: { inStock: true, tries: 3 } });
    expect((await seen('inventory.check')).ttlMs).toBe(3_600_000);
  });

  it('serves the re-run step from the store when the service dies after the store write', async () => {
    const restarts = service.restarts;
    await client.set(`${prefix}:kill:after-store-write`, '1');
    const answer = await invoke('charge', { orderId: 'o5', amount: 25 });
    expect(service.restarts).toBe(restarts + 1);
    expect(answer).toEqual({ status: 200, body: { chargeId: 'ch_o5_1', amount: 25 } });
    expect(await counter('charges:o5')).toBe(1);
  }, 60_000);

  // Closed by the core's reconcile of a crashed leader's `running` receipt (issue 24, requirement
  // 1), which needs a Redis store that keeps receipts; skipped until the store has them.
  it('reconciles instead of charging again when the service dies after the side effect, before the store write', async (context) => {
    if (!redisStoreKeepsReceipts(client)) context.skip();
    const restarts = service.restarts;
    await client.set(`${prefix}:kill:after-side-effect`, '1');
    const answer = await invoke('charge', { orderId: 'o6', amount: 25 });
    expect(service.restarts).toBe(restarts + 1);
    expect(answer).toEqual({ status: 200, body: { chargeId: 'ch_o6_1' } });
    expect(await counter('charges:o6')).toBe(1);
  }, 60_000);
});
