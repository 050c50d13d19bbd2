// A fleet of two `mcp-proxy --listen --redis-url` processes on one redis-server of the suite's own
// (one on node-redis, one on ioredis with node-redis hidden) in front of one in-process upstream.

import { type ChildProcess, spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
import { createDispatcher, defaultStack, type ToolRegistry } from '../../index.js';
import { createMcpServerFactory } from '../../integrations/mcp/index.js';
import { listenMcp, type McpListener } from '../../integrations/mcp/listener.js';
import { type RedisServer, startRedisServer } from './redis-server.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const cli = fileURLToPath(new URL('../../integrations/mcp/cli.ts', import.meta.url));
const hiding = fileURLToPath(new URL('./hidden-packages.ts', import.meta.url));

const proxyArgs = (args: string[]) => ['--import', 'tsx', '--import', hiding, cli, 'mcp-proxy', ...args];
const hidingEnv = (hidden: string[]) => ({ ...process.env, HIDDEN_PACKAGES: hidden.join(',') });

/** A proxy process listening on Streamable HTTP. */
export interface Listening {
  child: ChildProcess;
  url: string;
}

/**
 * Starts `mcp-proxy --listen` on a free port with `hidden` packages made absent and `env` added to
 * its environment; resolves once it listens.
 */
export function startProxy(
  args: string[],
  hidden: string[] = [],
  env: Record<string, string> = {},
): Promise<Listening> {
  const child = spawn(process.execPath, proxyArgs(['--listen', 'http://127.0.0.1:0/mcp', ...args]), {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...hidingEnv(hidden), ...env },
  });
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

/** Runs `mcp-proxy` with `args` to its exit, with `hidden` packages made absent. */
export function runProxy(
  args: string[],
  hidden: string[] = [],
  env: Record<string, string> = {},
): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, proxyArgs(args), {
    cwd: root,
    encoding: 'utf8',
    env: { ...hidingEnv(hidden), ...env },
  });
}

/** What the fleet's upstream serves and the proxies' config file holds. */
export interface FleetOptions {
  registry: ToolRegistry;
  info: { name: string; version: string };
  /** The proxies' `--config` file's content. */
  config: object;
}

/** The fleet, once the suite's `beforeAll` ran. */
export interface McpFleet {
  readonly redis: RedisServer;
  /** The proxy on node-redis. */
  readonly nodeRedis: Listening;
  /** The proxy on ioredis (node-redis hidden). */
  readonly ioredis: Listening;
}

/**
 * Call inside a `describe`: starts the redis-server, the upstream and both proxies (sharing one
 * fresh `--redis-prefix`) in its `beforeAll`, and kills and removes them all in its `afterAll`.
 */
export function mcpFleet(options: FleetOptions): McpFleet {
  let started: McpFleet | undefined;
  let redis: RedisServer | undefined;
  let upstream: McpListener | undefined;
  let dir: string | undefined;
  let proxies: Listening[] = [];

  beforeAll(async () => {
    redis = await startRedisServer();
    const dispatcher = createDispatcher(defaultStack({ registry: options.registry }));
    upstream = await listenMcp(
      createMcpServerFactory({ registry: options.registry, dispatcher, info: options.info }),
      { url: 'http://127.0.0.1:0/mcp' },
    );
    dir = mkdtempSync(join(tmpdir(), 'td-fleet-'));
    const config = join(dir, 'proxy.json');
    writeFileSync(config, JSON.stringify(options.config));
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
    const [nodeRedis, ioredis] = await Promise.all([startProxy(shared), startProxy(shared, ['redis'])]);
    proxies = [nodeRedis, ioredis];
    started = { redis, nodeRedis, ioredis };
  }, 120_000);

  afterAll(async () => {
    for (const proxy of proxies) proxy.child.kill('SIGKILL');
    await upstream?.close();
    await redis?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  const get = (): McpFleet => {
    if (started === undefined) throw new Error('the MCP fleet has not started yet');
    return started;
  };
  return {
    get redis() {
      return get().redis;
    },
    get nodeRedis() {
      return get().nodeRedis;
    },
    get ioredis() {
      return get().ioredis;
    },
  };
}
