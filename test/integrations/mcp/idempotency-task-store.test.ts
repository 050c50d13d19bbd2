// MCP Tasks kept in an idempotency store (`tasks.store` given a memoryIdempotencyStore): one create
// per task id, the working record until the first settle, which no later settle overwrites. On a
// redisIdempotencyStore with no subscriber, nothing waits out the store's poll for a task key held
// a round trip.
import { describe, expect, it } from 'vitest';
import { memoryIdempotencyStore } from '../../../middleware/index.js';
import { redisIdempotencyStore } from '../../../integrations/redis/index.js';
import { isIdempotencyStore, taskStoreOn } from '../../../integrations/mcp/idempotency-task-store.js';
import { McpTasks } from '../../../integrations/mcp/tasks.js';
import type { McpTaskRecord } from '../../../integrations/mcp/task-store.js';
import { gate } from '../../helpers/gate.js';
import { redisSuitesEnabled } from '../../helpers/redis-server.js';
import { redisSuite } from '../../helpers/redis-suite.js';
import { countingClient } from '../redis/counting.js';

const tasksCapability = { extensions: { 'io.modelcontextprotocol/tasks': {} } };

function record(taskId: string): McpTaskRecord {
  const now = new Date().toISOString();
  return {
    taskId,
    status: 'working',
    createdAt: now,
    lastUpdatedAt: now,
    ttlMs: 60_000,
    pollIntervalMs: 1_000,
  };
}

describe('taskStoreOn(an idempotency store)', () => {
  it('creates a task once, reads it working, then as its first settle left it', async () => {
    const tasks = taskStoreOn(memoryIdempotencyStore());
    const fresh = record('task-1');
    expect(await tasks.create(fresh)).toEqual({ created: true, record: fresh });
    expect(await tasks.create(record('task-1'))).toEqual({ created: false, record: fresh });
    expect(await tasks.get('task-1')).toEqual(fresh);
    const result = { content: [{ type: 'text' as const, text: 'done' }] };
    await tasks.settle('task-1', { ...fresh, status: 'completed', result });
    await tasks.settle('task-1', { ...fresh, status: 'cancelled' });
    expect(await tasks.get('task-1')).toMatchObject({ status: 'completed', result });
    // A re-issue after the end answers the task as it is now.
    expect((await tasks.create(record('task-1'))).record.status).toBe('completed');
    expect(await tasks.get('task-unknown')).toBeUndefined();
  });

  it('is what McpTasks makes of an idempotency store given as tasks.store', async () => {
    const store = memoryIdempotencyStore();
    expect(isIdempotencyStore(store)).toBe(true);
    expect(isIdempotencyStore({ create() {}, get() {}, settle() {} })).toBe(false);
    const tasks = new McpTasks({ store, pollIntervalMs: 50 });
    const release = gate<void>();
    let runs = 0;
    const run = async () => {
      runs += 1;
      await release.promise;
      return { content: [{ type: 'text' as const, text: 'built' }] };
    };
    const handle = await tasks.start('report.build', 'nov', run);
    expect(await tasks.start('report.build', 'nov', run)).toMatchObject({ taskId: handle.taskId });
    expect(await tasks.get(handle.taskId, tasksCapability)).toMatchObject({ status: 'working' });
    release.open();
    let status: string | undefined;
    for (let polls = 0; polls < 100 && status !== 'completed'; polls++) {
      status = (await tasks.get(handle.taskId, tasksCapability)).status;
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(status).toBe('completed');
    expect(runs).toBe(1);
  });

  it('lets a cancel win over the run that ends after it', async () => {
    const tasks = new McpTasks({ store: memoryIdempotencyStore() });
    const release = gate<void>();
    let running: AbortSignal | undefined;
    const handle = await tasks.start('report.build', 'dec', async (signal) => {
      running = signal;
      await release.promise;
      return { content: [{ type: 'text' as const, text: 'late' }] };
    });
    await tasks.cancel(handle.taskId, tasksCapability);
    expect(running?.aborted).toBe(true);
    release.open();
    await new Promise((resolve) => setImmediate(resolve));
    expect(await tasks.get(handle.taskId, tasksCapability)).toMatchObject({ status: 'cancelled' });
  });

  it('shares tasks between a store read by peeking and one without peek or putIfAbsent', async () => {
    const store = memoryIdempotencyStore();
    // A third-party store, or a process of an older release, that only claims.
    const { claim, renew, complete, release, changed } = store;
    const claiming = taskStoreOn({ claim, renew, complete, release, changed });
    const peeking = taskStoreOn(store);
    const older = record('task-older');
    expect(await claiming.create(older)).toEqual({ created: true, record: older });
    expect(await peeking.create(record('task-older'))).toEqual({ created: false, record: older });
    expect(await peeking.get('task-older')).toEqual(older);
    await peeking.settle('task-older', { ...older, status: 'cancelled' });
    await claiming.settle('task-older', { ...older, status: 'failed' });
    expect(await claiming.get('task-older')).toMatchObject({ status: 'cancelled' });
    const newer = record('task-newer');
    expect(await peeking.create(newer)).toEqual({ created: true, record: newer });
    expect(await claiming.get('task-newer')).toEqual(newer);
    await claiming.settle('task-newer', { ...newer, status: 'cancelled' });
    await peeking.settle('task-newer', { ...newer, status: 'failed' });
    expect(await peeking.get('task-newer')).toMatchObject({ status: 'cancelled' });
    expect(await claiming.get('task-unknown')).toBeUndefined();
    expect(await peeking.get('task-unknown')).toBeUndefined();
  });

  it('aborts the run when another process sharing the store cancels the task', async () => {
    const store = memoryIdempotencyStore();
    const here = new McpTasks({ store, pollIntervalMs: 10 });
    const there = new McpTasks({ store, pollIntervalMs: 10 });
    const aborted = gate<unknown>();
    const handle = await here.start(
      'report.build',
      'jan',
      (signal) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener(
            'abort',
            () => {
              aborted.open(signal.reason);
              reject(signal.reason);
            },
            { once: true },
          );
        }),
    );
    await there.cancel(handle.taskId, tasksCapability);
    expect(String(await aborted.promise)).toContain('cancelled');
    expect(await here.get(handle.taskId, tasksCapability)).toMatchObject({ status: 'cancelled' });
  });
});

describe.runIf(redisSuitesEnabled('MCP tasks on a Redis idempotency store'))(
  'taskStoreOn(a redisIdempotencyStore without a subscriber)',
  () => {
    const redis = redisSuite();
    // Without pub/sub a waiter hears of a released key only at its poll: a minute here, longer
    // than the test's timeout, so a wait for the poll fails the test.
    const connect = async (prefix: string) => {
      const { store: client } = await redis.io({ subscriber: false });
      const store = redisIdempotencyStore(client, { prefix, pollMs: 60_000, leaseMs: 60_000 });
      return { store, tasks: taskStoreOn(store) };
    };

    it('creates a task in one round trip and reads it in one (both keys peeked at once)', async () => {
      const { store: client } = await redis.io({ subscriber: false });
      const counting = countingClient(client);
      const tasks = taskStoreOn(redisIdempotencyStore(counting, { prefix: 'round-trips' }));
      const fresh = record('task-counted');
      await tasks.create(fresh);
      expect(Object.fromEntries(counting.counts)).toEqual({ 'idempotency put-if-absent': 1 });
      counting.reset();
      expect(await tasks.get('task-counted')).toEqual(fresh);
      expect(Object.fromEntries(counting.counts)).toEqual({ 'idempotency peek': 2 });
      counting.reset();
      await tasks.settle('task-counted', { ...fresh, status: 'cancelled' });
      expect(Object.fromEntries(counting.counts)).toEqual({ 'idempotency put-if-absent': 1 });
    });

    it('answers a tasks/get that lands while the end is being stored without waiting for the poll', async () => {
      const { store, tasks } = await connect('get-held');
      const fresh = record('task-held');
      await tasks.create(fresh);
      // The end key held as a settle holds it between its claim and its completion.
      const held = await store.claim('mcp-task:task-held:end', 'mcp-task');
      if (held.kind !== 'lead') throw new Error(`expected a lead, got ${held.kind}`);
      expect(await tasks.get('task-held')).toEqual(fresh);
      const result = { content: [{ type: 'text' as const, text: 'done' }] };
      await store.complete(held.lease, { ...fresh, status: 'completed', result }, 60_000);
      expect(await tasks.get('task-held')).toMatchObject({ status: 'completed', result });
    });

    it('stores the end of a task whose end key a poll held without waiting for the poll', async () => {
      const { store, tasks } = await connect('settle-held');
      const fresh = record('task-polled');
      await tasks.create(fresh);
      // A poll's claim of the end key: it holds it until it releases it.
      const polled = await store.claim('mcp-task:task-polled:end', 'mcp-task');
      if (polled.kind !== 'lead') throw new Error(`expected a lead, got ${polled.kind}`);
      // The settle's claim is written before the release on the one connection: it follows.
      const settling = tasks.settle('task-polled', { ...fresh, status: 'cancelled' });
      await store.release(polled.lease);
      await settling;
      expect(await tasks.get('task-polled')).toMatchObject({ status: 'cancelled' });
    });
  },
);
