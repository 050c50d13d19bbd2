// `mcp-proxy --redis-url`: two proxies with --listen on one redis-server of the test's own (one
// on node-redis, one on ioredis) dedupe a keyed call between them and share MCP Tasks; and the
// flags, servers and packages it refuses.
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolRegistry } from '../../../index.js';
import { receiptMetaKey } from '../../../integrations/mcp/index.js';
import { freePort } from '../../helpers/free-port.js';
import { gate } from '../../helpers/gate.js';
import { mcpFleet, runProxy } from '../../helpers/mcp-fleet.js';
import { rpc } from '../../helpers/mcp-rpc.js';
import { redisSuitesEnabled } from '../../helpers/redis-server.js';

const remote = fileURLToPath(new URL('./fixtures/remote-server.ts', import.meta.url));

const enabled = redisSuitesEnabled('mcp-proxy --redis-url');

describe.runIf(enabled)('two mcp-proxy processes on one Redis', () => {
  const runs = { charge: 0, report: 0 };
  const reportGate = gate();
  const registry = new ToolRegistry()
    .register({
      name: 'charge',
      inputSchema: z.object({ cents: z.number() }),
      handler: (args) => {
        runs.charge += 1;
        return { charged: args.cents, run: runs.charge };
      },
    })
    .register({
      name: 'report',
      inputSchema: z.object({ month: z.string() }),
      handler: async (args) => {
        runs.report += 1;
        await reportGate.promise;
        return { month: args.month, rows: 3 };
      },
    });
  const fleet = mcpFleet({
    registry,
    info: { name: 'billing', version: '1.0.0' },
    config: { tools: { report: { task: true } }, tasks: { pollIntervalMs: 50 } },
  });
  // Registered after the fleet's, so it runs first: the held handler returns before the kill.
  afterAll(() => reportGate.open());

  it('runs a keyed call once: the other proxy answers the same key from Redis, replayed', async () => {
    const call = async (url: string) => {
      const client = new Client({ name: 'host', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      try {
        return await client.callTool({
          name: 'charge',
          arguments: { cents: 700 },
          _meta: { 'tool-dispatcher/idempotencyKey': 'order-fleet-1' },
        });
      } finally {
        await client.close();
      }
    };
    const first = await call(fleet.nodeRedis.url);
    const second = await call(fleet.ioredis.url);
    expect(first._meta?.[receiptMetaKey]).toEqual({ key: 'order-fleet-1', replayed: false });
    expect(second._meta?.[receiptMetaKey]).toEqual({ key: 'order-fleet-1', replayed: true });
    expect(second.structuredContent).toEqual({ charged: 700, run: 1 });
    expect(runs.charge).toBe(1);
  });

  it('creates a task on one proxy that tasks/get reads on the other, and a re-issue there joins it', async () => {
    const params = {
      name: 'report',
      arguments: { month: '2026-11' },
      _meta: { 'tool-dispatcher/idempotencyKey': 'report-fleet-1' },
    };
    const created = await rpc(fleet.nodeRedis.url, 'tools/call', params);
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working', pollIntervalMs: 50 });
    const taskId = created.result?.['taskId'] as string;
    const working = await rpc(fleet.ioredis.url, 'tasks/get', { taskId });
    expect(working.result).toMatchObject({ taskId, status: 'working' });
    const reissued = await rpc(fleet.ioredis.url, 'tools/call', params);
    expect(reissued.result).toMatchObject({ resultType: 'task', taskId });
    reportGate.open();
    let done: Record<string, unknown> | undefined;
    for (let polls = 0; polls < 400 && done === undefined; polls++) {
      const answer = await rpc(fleet.ioredis.url, 'tasks/get', { taskId });
      if (answer.result?.['status'] === 'completed') done = answer.result;
      else await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(done).toMatchObject({
      taskId,
      status: 'completed',
      result: { structuredContent: { month: '2026-11', rows: 3 } },
    });
    expect(runs.report).toBe(1);
    const unknown = await rpc(fleet.nodeRedis.url, 'tasks/get', { taskId: 'task-unknown' });
    expect(unknown.error?.code).toBe(-32602);
  });
});

describe('mcp-proxy --redis-url refuses', () => {
  const run = (args: string[], hidden: string[] = []) =>
    runProxy([...args, '--', process.execPath, '--import', 'tsx', remote], hidden);

  it.each([
    [
      'http://127.0.0.1:6379',
      /--redis-url must be a redis: or rediss: URL, got "http:\/\/127\.0\.0\.1:6379"/,
    ],
    ['not a url', /--redis-url must be a URL \(redis:\/\/<host>:<port>\), got "not a url"/],
  ])('%s with exit 2 and the usage', (url, message) => {
    const answer = run(['--redis-url', url]);
    expect(answer.status).toBe(2);
    expect(answer.stderr).toMatch(message);
    expect(answer.stderr).toMatch(/Usage: tool-dispatcher mcp-proxy/);
  });

  it('an empty --redis-prefix, and one without --redis-url, with exit 2', () => {
    const empty = run(['--redis-url', 'redis://127.0.0.1:1', '--redis-prefix', '']);
    expect(empty.status).toBe(2);
    expect(empty.stderr).toContain('--redis-prefix must be a non-empty name, got ""');
    const alone = run(['--redis-prefix', 'billing']);
    expect(alone.status).toBe(2);
    expect(alone.stderr).toContain('--redis-prefix "billing" needs --redis-url');
  });

  it.each([[[]], [['redis']]])(
    'an unreachable Redis with exit 1 naming it (hidden: %j)',
    async (hidden) => {
      const port = await freePort();
      const answer = run(['--redis-url', `redis://127.0.0.1:${port}`], hidden);
      expect(answer.status).toBe(1);
      expect(answer.stderr).toContain(`Cannot reach Redis at redis://127.0.0.1:${port}`);
      expect(answer.stderr).not.toContain('Usage:');
    },
    30_000,
  );

  it('no Redis client installed with exit 1 naming the packages', () => {
    const answer = run(['--redis-url', 'redis://127.0.0.1:1'], ['redis', 'ioredis']);
    expect(answer.status).toBe(1);
    expect(answer.stderr).toContain('--redis-url needs the "redis" package (or "ioredis")');
  }, 30_000);
});
