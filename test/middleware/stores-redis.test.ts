// One end-to-end test per layer on the Redis stores, two "processes" (dispatchers with their own
// clients) on a redis-server of the test's own.

import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  circuitBreaker,
  createDispatcher,
  defaultStack,
  errorMapping,
  ToolRegistry,
  toolLookup,
  TransientError,
} from '../../index.js';
import {
  redisBudget,
  redisCircuitStore,
  redisIdempotencyStore,
  redisSlotStore,
} from '../../integrations/redis/index.js';
import { gate, type Gate } from '../helpers/gate.js';
import { redisSuitesEnabled, startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { connectNodeRedis, type Connected } from '../integrations/redis/clients.js';

const enabled = redisSuitesEnabled('layers on the Redis stores');

async function until(check: () => boolean, timeoutMs = 2_000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

(enabled ? describe : describe.skip)('the layers on the Redis stores', () => {
  let server: RedisServer;
  let a: Connected;
  let b: Connected;
  beforeAll(async () => {
    server = await startRedisServer();
    [a, b] = await Promise.all([connectNodeRedis(server.url), connectNodeRedis(server.url)]);
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await server?.stop();
  });

  it("runs a key once across two processes, the follower getting the leader's result", async () => {
    const prefix = randomUUID();
    const held: Array<Gate<unknown>> = [];
    const worker = (connected: Connected) => {
      const registry = new ToolRegistry().register({
        name: 'pay.charge',
        inputSchema: z.object({ order: z.string() }),
        handler: () => {
          const g = gate<unknown>();
          held.push(g);
          return g.promise;
        },
      });
      const store = redisIdempotencyStore(connected.store, { prefix });
      return createDispatcher(defaultStack({ registry, idempotency: { store } }));
    };
    const one = worker(a);
    const two = worker(b);
    const first = one.dispatch('pay.charge', { order: 'o-1' }, { idempotencyKey: 'o-1' });
    await until(() => held.length === 1);
    const second = two.dispatch('pay.charge', { order: 'o-1' }, { idempotencyKey: 'o-1' });
    const conflict = await two.dispatch('pay.charge', { order: 'o-2' }, { idempotencyKey: 'o-1' });
    expect(conflict).toMatchObject({ ok: false, kind: 'idempotency_conflict' });
    held[0]?.open({ chargeId: 'ch_1' });
    expect(await first).toEqual({ ok: true, result: { chargeId: 'ch_1' }, attempts: 1 });
    expect(await second).toEqual({ ok: true, result: { chargeId: 'ch_1' }, attempts: 0 });
    expect(await one.dispatch('pay.charge', { order: 'o-1' }, { idempotencyKey: 'o-1' })).toMatchObject({
      attempts: 0,
    });
    expect(held).toHaveLength(1);
  });

  it('caps calls across two processes at the pool size', async () => {
    const pool = randomUUID();
    let running = 0;
    let most = 0;
    const worker = (connected: Connected) => {
      const registry = new ToolRegistry().register({
        name: 'api.call',
        inputSchema: z.object({}),
        handler: async () => {
          running += 1;
          most = Math.max(most, running);
          await new Promise((resolve) => setTimeout(resolve, 10));
          running -= 1;
          return 'ok';
        },
      });
      const store = redisSlotStore(connected.store, { pool, max: 2, pollMs: 20 });
      return createDispatcher(defaultStack({ registry, concurrency: { max: 2, store } }));
    };
    const one = worker(a);
    const two = worker(b);
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? one : two).dispatch('api.call', {})),
    );
    expect(outcomes.every((outcome) => outcome.ok)).toBe(true);
    expect(most).toBe(2);
  });

  it('opens a circuit in both processes from their failures together', async () => {
    const prefix = randomUUID();
    const worker = (connected: Connected) => {
      const registry = new ToolRegistry().register({
        name: 'search.web',
        inputSchema: z.object({}),
        handler: () => {
          throw new TransientError('down');
        },
      });
      const breaker = circuitBreaker({
        store: redisCircuitStore(connected.store, { prefix }),
        failureThreshold: 2,
        cooldownMs: 60_000,
      });
      return createDispatcher([errorMapping(), toolLookup(registry), breaker]);
    };
    const one = worker(a);
    const two = worker(b);
    expect(await one.dispatch('search.web', {})).toMatchObject({ kind: 'transient' });
    expect(await two.dispatch('search.web', {})).toMatchObject({ kind: 'transient' });
    // The opened record reaches the other process's mirror by pub/sub.
    let refused = await one.dispatch('search.web', {});
    for (let i = 0; i < 50 && refused.ok === false && refused.kind !== 'circuit_open'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      refused = await one.dispatch('search.web', {});
    }
    expect(refused).toMatchObject({ ok: false, kind: 'circuit_open' });
  });

  it('shares one budget between two processes, never overspent', async () => {
    const id = randomUUID();
    let runs = 0;
    const worker = async (connected: Connected) => {
      const registry = new ToolRegistry().register({
        name: 'step.run',
        inputSchema: z.object({}),
        handler: () => ++runs,
      });
      const budget = await redisBudget(connected.store, { id, limit: 5 });
      return { dispatcher: createDispatcher(defaultStack({ registry })), budget };
    };
    const one = await worker(a);
    const two = await worker(b);
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, i) => {
        const { dispatcher, budget } = i % 2 === 0 ? one : two;
        return dispatcher.dispatch('step.run', {}, { budget });
      }),
    );
    expect(outcomes.filter((outcome) => outcome.ok)).toHaveLength(5);
    expect(outcomes.filter((outcome) => !outcome.ok && outcome.kind === 'budget_exceeded')).toHaveLength(3);
    expect(runs).toBe(5);
  });
});
