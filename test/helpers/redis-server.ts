// A redis-server of the test's own, on a free port, that a test can kill and restart (never the shared one on 6379).

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A redis-server this process started. */
export interface RedisServer {
  readonly host: string;
  readonly port: number;
  readonly url: string;
  /** The server's version, e.g. '7.0.15'. */
  readonly version: string;
  /** Whether this helper started it (false for one given by `REDIS_URL`, which it never kills). */
  readonly owned: boolean;
  /** Kills the server (SIGKILL by default) and waits for it to exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port, empty (no persistence), and waits until it answers. */
  restart(): Promise<void>;
  /** Stops it for good and removes its directory. */
  stop(): Promise<void>;
}

/** Whether a redis-server binary is on the PATH, and why not when it is not. */
export function redisBinary(): { available: true; version: string } | { available: false; reason: string } {
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (probe.error !== undefined || probe.status !== 0) {
    return { available: false, reason: 'redis-server is not installed (apt-get install redis-server)' };
  }
  const version = /v=([\d.]+)/.exec(probe.stdout)?.[1] ?? 'unknown';
  return { available: true, version };
}

/**
 * Whether the Redis suites can run here. When they cannot, it prints one line saying why and
 * answers false, unless `TD_REQUIRE_REDIS=1`, when it throws (CI must not skip them).
 */
export function redisSuitesEnabled(suite: string): boolean {
  if (process.env.REDIS_URL !== undefined && process.env.REDIS_URL !== '') return true;
  const binary = redisBinary();
  if (binary.available) return true;
  const line = `[${suite}] skipped: ${binary.reason}`;
  if (process.env.TD_REQUIRE_REDIS === '1') throw new Error(`${line}; TD_REQUIRE_REDIS=1 requires it`);
  console.warn(line);
  return false;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once a PING on `host:port` answers PONG; rejects after `timeoutMs`. */
export async function waitForRedis(host: string, port: number, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host, port });
      let reply = '';
      socket.setTimeout(500, () => {
        socket.destroy();
        resolve(false);
      });
      socket.on('connect', () => socket.write('PING\r\n'));
      socket.on('data', (chunk) => {
        reply += chunk.toString();
        if (reply.includes('\r\n')) {
          socket.destroy();
          resolve(reply.startsWith('+PONG'));
        }
      });
      socket.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline)
      throw new Error(`redis-server on ${host}:${port} did not answer within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Starts a redis-server on a free port with no persistence (`--save "" --appendonly no`) in a
 * temporary directory. Kill it with `stop()` (tests do it in `afterAll`).
 */
export async function startRedisServer(): Promise<RedisServer> {
  const binary = redisBinary();
  if (!binary.available) throw new Error(binary.reason);
  const host = '127.0.0.1';
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'td-redis-'));
  let child: ChildProcess | undefined;

  const launch = async () => {
    const started = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        host,
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        '--daemonize',
        'no',
      ],
      { stdio: 'ignore' },
    );
    child = started;
    await waitForRedis(host, port);
  };
  const kill = async (signal: NodeJS.Signals = 'SIGKILL') => {
    const running = child;
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    running.kill(signal);
    await exited;
  };

  await launch();
  return {
    host,
    port,
    url: `redis://${host}:${port}`,
    version: binary.version,
    owned: true,
    kill,
    restart: async () => {
      await kill();
      await launch();
    },
    stop: async () => {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The server the contract suite runs against: `REDIS_URL` when set (never killed or flushed;
 * the suite uses unique prefixes), otherwise one of its own.
 */
export async function contractRedis(): Promise<RedisServer> {
  const given = process.env.REDIS_URL;
  if (given === undefined || given === '') return startRedisServer();
  const url = new URL(given);
  const host = url.hostname;
  const port = Number(url.port || 6379);
  const refuse = async () => {
    throw new Error('REDIS_URL points at a server this helper does not own; it never kills or restarts it');
  };
  return {
    host,
    port,
    url: given,
    version: 'external',
    owned: false,
    kill: refuse,
    restart: refuse,
    stop: async () => {},
  };
}
