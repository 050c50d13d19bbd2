// MCP Tasks kept in an idempotency store (`tasks.store` given a memoryIdempotencyStore): one create
// per task id, the working record until the first settle, which no later settle overwrites.
import { describe, expect, it } from 'vitest';
import { memoryIdempotencyStore } from '../../../middleware/index.js';
import { isIdempotencyStore, taskStoreOn } from '../../../integrations/mcp/idempotency-task-store.js';
import { McpTasks } from '../../../integrations/mcp/tasks.js';
import type { McpTaskRecord } from '../../../integrations/mcp/task-store.js';
import { gate } from '../../helpers/gate.js';

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
