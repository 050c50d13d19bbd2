// `mcp-proxy --redis-url`: two proxies with --listen on one redis-server of the test's own (one
// on node-redis, one on ioredis) dedupe a keyed call between them and share MCP Tasks; and the
// flags, servers and packages it refuses.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../../../index.js';
import { createMcpServerFactory, receiptMetaKey } from '../../../integrations/mcp/index.js';
import { listenMcp, type McpListener } from '../../../integrations/mcp/listener.js';
import { freePort } from '../../helpers/free-port.js';
import { type Gate, gate } from '../../helpers/gate.js';
import { type RedisServer, redisSuitesEnabled, startRedisServer } from '../../helpers/redis-server.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const cli = fileURLToPath(new URL('../../../integrations/mcp/cli.ts', import.meta.url));
const hiding = fileURLToPath(new URL('../../helpers/hidden-packages.ts', import.meta.url));
const remote = fileURLToPath(new URL('./fixtures/remote-server.ts', import.meta.url));
const tasksCapability = { extensions: { 'io.modelcontextprotocol/tasks': {} } };

interface Listening {
  child: ChildProcess;
  url: string;
}

function startProxy(args: string[], hidden: string[] = []): Promise<Listening> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--import', hiding, cli, 'mcp-proxy', '--listen', 'http://127.0.0.1:0/mcp', ...args],
    {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, HIDDEN_PACKAGES: hidden.join(',') },
    },
  );
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  return new Promise<Listening>((resolve, reject) => {
    child.stderr?.on('data', (chunk: string) => {
      stderr += chunk;
      const line = /^mcp-proxy listening on (\S+)$/m.exec(stderr);
      if (line !== null) resolve({ child, url: line[1] as string });
    });
    child.once('exit', (code) => reject(new Error(`exited ${String(code)}: ${stderr}`)));
  });
}

let nextId = 1;
// One 2026-07-28 JSON-RPC request over HTTP, declaring the Tasks extension; resolves to the body.
async function rpc(
  url: string,
  method: string,
  params: Record<string, unknown>,
): Promise<{ result?: Record<string, unknown>; error?: { code: number; message: string } }> {
  const name = method === 'tools/call' ? params['name'] : params['taskId'];
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: nextId++,
      method,
      params: {
        ...params,
        _meta: {
          ...(params['_meta'] as object),
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
          'io.modelcontextprotocol/clientCapabilities': tasksCapability,
        },
      },
    }),
  });
  const text = await response.text();
  const json = text.startsWith('{') ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? text);
  return JSON.parse(json) as { result?: Record<string, unknown>; error?: { code: number; message: string } };
}

const enabled = redisSuitesEnabled('mcp-proxy --redis-url');

describe.runIf(enabled)('two mcp-proxy processes on one Redis', () => {
  let redis: RedisServer;
  let upstream: McpListener;
  let dir: string;
  let nodeRedisProxy: Listening;
  let ioredisProxy: Listening;
  const runs = { charge: 0, report: 0 };
  let reportGate: Gate<void>;

  beforeAll(async () => {
    reportGate = gate();
    redis = await startRedisServer();
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
    const dispatcher = createDispatcher(defaultStack({ registry }));
    upstream = await listenMcp(
      createMcpServerFactory({ registry, dispatcher, info: { name: 'billing', version: '1.0.0' } }),
      { url: 'http://127.0.0.1:0/mcp' },
    );
    dir = mkdtempSync(join(tmpdir(), 'td-fleet-'));
    const config = join(dir, 'proxy.json');
    writeFileSync(
      config,
      JSON.stringify({ tools: { report: { task: true } }, tasks: { pollIntervalMs: 50 } }),
    );
    const shared = [
      '--redis-url',
      redis.url,
      '--redis-prefix',
      `fleet-${randomUUID()}`,
      '--config',
      config,
      '--upstream-url',
      upstream.url,
    ];
    [nodeRedisProxy, ioredisProxy] = await Promise.all([startProxy(shared), startProxy(shared, ['redis'])]);
  }, 120_000);

  afterAll(async () => {
    reportGate?.open();
    nodeRedisProxy?.child.kill('SIGKILL');
    ioredisProxy?.child.kill('SIGKILL');
    await upstream?.close();
    await redis?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

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
    const first = await call(nodeRedisProxy.url);
    const second = await call(ioredisProxy.url);
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
    const created = await rpc(nodeRedisProxy.url, 'tools/call', params);
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working', pollIntervalMs: 50 });
    const taskId = created.result?.['taskId'] as string;
    const working = await rpc(ioredisProxy.url, 'tasks/get', { taskId });
    expect(working.result).toMatchObject({ taskId, status: 'working' });
    const reissued = await rpc(ioredisProxy.url, 'tools/call', params);
    expect(reissued.result).toMatchObject({ resultType: 'task', taskId });
    reportGate.open();
    let done: Record<string, unknown> | undefined;
    for (let polls = 0; polls < 400 && done === undefined; polls++) {
      const answer = await rpc(ioredisProxy.url, 'tasks/get', { taskId });
      if (answer.result?.['status'] === 'completed') done = answer.result;
      else await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(done).toMatchObject({
      taskId,
      status: 'completed',
      result: { structuredContent: { month: '2026-11', rows: 3 } },
    });
    expect(runs.report).toBe(1);
    const unknown = await rpc(nodeRedisProxy.url, 'tasks/get', { taskId: 'task-unknown' });
    expect(unknown.error?.code).toBe(-32602);
  });
});

describe('mcp-proxy --redis-url refuses', () => {
  const run = (args: string[], hidden: string[] = []) =>
    spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '--import',
        hiding,
        cli,
        'mcp-proxy',
        ...args,
        '--',
        process.execPath,
        '--import',
        'tsx',
        remote,
      ],
      { cwd: root, encoding: 'utf8', env: { ...process.env, HIDDEN_PACKAGES: hidden.join(',') } },
    );

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
