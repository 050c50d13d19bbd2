// `mcp-proxy --redis-url` shares the breakers' state: a circuit that calls through one proxy
// opened turns calls away on the other proxy of the fleet (one on node-redis, one on ioredis),
// which then never reaches the upstream. Both run on a redis-server of the test's own.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../../../index.js';
import { createMcpServerFactory, errorMetaKey } from '../../../integrations/mcp/index.js';
import { listenMcp, type McpListener } from '../../../integrations/mcp/listener.js';
import { type RedisServer, redisSuitesEnabled, startRedisServer } from '../../helpers/redis-server.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const cli = fileURLToPath(new URL('../../../integrations/mcp/cli.ts', import.meta.url));
const hiding = fileURLToPath(new URL('../../helpers/hidden-packages.ts', import.meta.url));

interface Listening {
  child: ChildProcess;
  url: string;
}

function startProxy(args: string[], hidden: string[]): Promise<Listening> {
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

async function call(url: string): Promise<Record<string, unknown> | undefined> {
  const client = new Client({ name: 'host', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    const result = await client.callTool({ name: 'stall', arguments: {} });
    return result._meta?.[errorMetaKey] as Record<string, unknown> | undefined;
  } finally {
    await client.close();
  }
}

const enabled = redisSuitesEnabled('mcp-proxy --redis-url circuit sharing');

describe.runIf(enabled)('two mcp-proxy processes on one Redis share their circuits', () => {
  let redis: RedisServer;
  let upstream: McpListener;
  let dir: string;
  let first: Listening;
  let second: Listening;
  let runs = 0;

  beforeAll(async () => {
    redis = await startRedisServer();
    // A tool that never answers by itself: each call through a proxy ends by the proxy's timeout.
    const registry = new ToolRegistry().register({
      name: 'stall',
      inputSchema: z.object({}),
      handler: (_args, ctx) =>
        new Promise((_resolve, reject) => {
          runs += 1;
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
        }),
    });
    const dispatcher = createDispatcher(defaultStack({ registry }));
    upstream = await listenMcp(
      createMcpServerFactory({ registry, dispatcher, info: { name: 'stalling', version: '1.0.0' } }),
      { url: 'http://127.0.0.1:0/mcp' },
    );
    dir = mkdtempSync(join(tmpdir(), 'td-fleet-breaker-'));
    const config = join(dir, 'proxy.json');
    writeFileSync(
      config,
      JSON.stringify({
        tools: { stall: { timeoutMs: 200, maxAttempts: 1 } },
        breaker: { failureThreshold: 2, cooldownMs: 600_000 },
      }),
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
    [first, second] = await Promise.all([startProxy(shared, []), startProxy(shared, ['redis'])]);
  }, 120_000);

  afterAll(async () => {
    first?.child.kill('SIGKILL');
    second?.child.kill('SIGKILL');
    await upstream?.close();
    await redis?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('refuses calls on the other proxy once one opened the circuit, without reaching the upstream', async () => {
    // Before: the other proxy calls through (its own timeout is a first failure on the circuit).
    expect(await call(second.url)).toMatchObject({ kind: 'timeout' });
    expect(await call(first.url)).toMatchObject({ kind: 'timeout' });
    expect(runs).toBe(2);
    expect(await call(second.url)).toMatchObject({ kind: 'circuit_open' });
    expect(await call(first.url)).toMatchObject({ kind: 'circuit_open' });
    expect(runs).toBe(2);
  }, 60_000);
});
