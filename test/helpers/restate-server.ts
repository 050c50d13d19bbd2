// A restate-server of the test's own (the npm package's binary), on free ports, in a temporary
// directory, with a fast retry policy so a killed service is retried within a second.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';

/** A restate-server this process started. */
export interface RestateServer {
  /** The ingress, where invocations are sent: `http://127.0.0.1:<port>`. */
  readonly ingressUrl: string;
  /** The admin API, where deployments are registered. */
  readonly adminUrl: string;
  /** Registers the service endpoint at `uri` and waits until its services are known. */
  register(uri: string): Promise<void>;
  /** Kills the server and removes its directory. */
  stop(): Promise<void>;
}

/** Where the npm package keeps the binary for this platform, or why it cannot be found. */
export function restateBinary(): { available: true; path: string } | { available: false; reason: string } {
  try {
    const require = createRequire(import.meta.url);
    const path = require.resolve(
      `@restatedev/restate-server-${process.platform}-${process.arch}/bin/restate-server`,
    );
    return { available: true, path };
  } catch {
    return {
      available: false,
      reason: `@restatedev/restate-server has no binary for ${process.platform}-${process.arch}`,
    };
  }
}

/**
 * Whether the Restate suites can run here; without the binary it prints one line and answers
 * false, unless `TD_REQUIRE_ENGINES=1`, when it throws.
 */
export function restateSuitesEnabled(suite: string): boolean {
  const binary = restateBinary();
  if (binary.available) return true;
  const line = `[${suite}] skipped: ${binary.reason}`;
  if (process.env.TD_REQUIRE_ENGINES === '1') throw new Error(`${line}; TD_REQUIRE_ENGINES=1 requires it`);
  console.warn(line);
  return false;
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function config(ports: { fabric: number; admin: number; ingress: number }): string {
  return `cluster-name = "td-test"
node-name = "td"
default-num-partitions = 1
rocksdb-total-memory-size = "256 MiB"
log-filter = "warn"
bind-address = "127.0.0.1:${ports.fabric}"
advertised-address = "http://127.0.0.1:${ports.fabric}/"

[default-retry-policy]
initial-interval = "100ms"
exponentiation-factor = 2.0
max-attempts = 200
on-max-attempts = "kill"
max-interval = "500ms"

[admin]
bind-address = "127.0.0.1:${ports.admin}"

[ingress]
bind-address = "127.0.0.1:${ports.ingress}"
`;
}

/** Starts a restate-server on free ports and waits until its admin API and ingress answer. */
export async function startRestateServer(): Promise<RestateServer> {
  const binary = restateBinary();
  if (!binary.available) throw new Error(binary.reason);
  const ports = { fabric: await freePort(), admin: await freePort(), ingress: await freePort() };
  const dir = mkdtempSync(join(tmpdir(), 'td-restate-'));
  writeFileSync(join(dir, 'restate.toml'), config(ports));
  const child: ChildProcess = spawn(
    binary.path,
    [
      '--no-logo',
      '--listen-mode',
      'tcp',
      '--config-file',
      join(dir, 'restate.toml'),
      '--base-dir',
      join(dir, 'data'),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], cwd: dir },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4_000);
  });
  const adminUrl = `http://127.0.0.1:${ports.admin}`;
  const ingressUrl = `http://127.0.0.1:${ports.ingress}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitFor(async () => (await fetch(`${adminUrl}/health`)).ok, 'restate-server admin', 60_000);
    await waitFor(
      async () => (await fetch(`${ingressUrl}/restate/health`)).ok,
      'restate-server ingress',
      60_000,
    );
  } catch (error) {
    await stop();
    throw new Error(`${(error as Error).message}; restate-server said: ${stderr}`);
  }
  return {
    ingressUrl,
    adminUrl,
    stop,
    register: async (uri) => {
      const response = await fetch(`${adminUrl}/deployments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ uri, force: true }),
      });
      if (!response.ok)
        throw new Error(`registering ${uri} failed: ${response.status} ${await response.text()}`);
    },
  };
}
