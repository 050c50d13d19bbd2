// Issue 33, item 9: the proxy did not meet MCP users where they are: no header for a remote upstream
// behind a token, no /healthz on --listen, REDIS_URL ignored, no JSON log lines, and a config file
// in a shape of its own only.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { z } from 'zod';
import { createMcpProxy, mcpProxyConfigSchema } from '../../integrations/mcp/index.js';
import { freePort } from '../helpers/free-port.js';
import { runProxy, startProxy } from '../helpers/mcp-fleet.js';
import { type HttpUpstream, serveHttp } from '../integrations/mcp/fixtures/http-upstream.js';
import { buildOddServer } from '../integrations/mcp/fixtures/odd-upstream.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const cli = fileURLToPath(new URL('../../integrations/mcp/cli.ts', import.meta.url));
const remote = fileURLToPath(new URL('../integrations/mcp/fixtures/remote-server.ts', import.meta.url));
const remoteCommand = ['--', process.execPath, '--import', 'tsx', remote];
const token = 's3cret-token-value';
// `${NAME}` as the user types it in the shell (single-quoted: the proxy expands it, not the shell).
const envRef = (name: string) => `\${${name}}`;

// The in-process upstream must keep answering while the proxy runs: spawn, not spawnSync.
async function proxyRun(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', cli, 'mcp-proxy', ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => void (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => void (stderr += chunk));
  const [status] = (await once(child, 'exit')) as [number | null];
  return { status, stdout, stderr };
}

describe('mcp-proxy --header', () => {
  let upstream: HttpUpstream | undefined;
  afterEach(async () => {
    await upstream?.close();
    upstream = undefined;
  });

  it('sends the header on every request to an upstream behind a bearer token', async () => {
    upstream = await serveHttp(() => buildOddServer(), { authorization: `Bearer ${token}` });
    const proxy = await createMcpProxy({
      upstream: { url: upstream.url, headers: { Authorization: `Bearer ${token}` } },
      logLevel: 'silent',
    });
    try {
      expect([...proxy.imported.names.values()]).toContain('echo');
    } finally {
      await proxy.close();
    }
  });

  it('serves the tools of an upstream behind a token it reads from the environment', async () => {
    upstream = await serveHttp(() => buildOddServer(), { authorization: `Bearer ${token}` });
    const header = `Authorization: Bearer ${envRef('UPSTREAM_TOKEN')}`;
    const { child, url } = await startProxy(['--upstream-url', upstream.url, '--header', header], [], {
      UPSTREAM_TOKEN: token,
    });
    const client = new Client({ name: 'test', version: '1.0.0' });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain('echo');
    } finally {
      await client.close();
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  }, 60_000);

  it('reads $VAR in braces from the environment and never prints the value, even when refused', async () => {
    upstream = await serveHttp(() => buildOddServer(), { authorization: 'Bearer another-token' });
    const refused = await proxyRun(
      ['--upstream-url', upstream.url, '--header', `Authorization: Bearer ${envRef('UPSTREAM_TOKEN')}`],
      { UPSTREAM_TOKEN: token },
    );
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(
      /^tool-dispatcher: The upstream MCP server \(http:\/\/127\.0\.0\.1:\d+\/mcp\) did not start/,
    );
    expect(`${refused.stdout}${refused.stderr}`).not.toContain(token);

    const unset = runProxy([
      '--upstream-url',
      upstream.url,
      '--header',
      `Authorization: Bearer ${envRef('NO_SUCH_TOKEN')}`,
    ]);
    expect(unset.status).toBe(2);
    expect(unset.stderr).toContain(
      `--header Authorization reads ${envRef('NO_SUCH_TOKEN')}, which is not set`,
    );
    const malformed = runProxy(['--upstream-url', upstream.url, '--header', `Bearer ${token}`]);
    expect(malformed.status).toBe(2);
    expect(malformed.stderr).toContain('--header must be "<Name>: <value>"');
    expect(malformed.stderr).not.toContain(token);
    const commandUpstream = runProxy(['--header', 'X-Team: billing', ...remoteCommand]);
    expect(commandUpstream.status).toBe(2);
    expect(commandUpstream.stderr).toContain('--header needs --upstream-url');
  }, 60_000);
});

describe('mcp-proxy --listen', () => {
  it('answers GET /healthz with 200 beside the MCP endpoint', async () => {
    const { child, url } = await startProxy(remoteCommand);
    try {
      const health = await fetch(new URL('/healthz', url));
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ status: 'ok' });
      expect((await fetch(new URL('/elsewhere', url))).status).toBe(404);
      expect((await fetch(new URL('/healthz', url), { method: 'POST' })).status).toBe(405);
    } finally {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  }, 60_000);
});

describe('mcp-proxy and REDIS_URL', () => {
  it('reads REDIS_URL when --redis-url is absent, and --redis-url wins over it', async () => {
    const port = await freePort();
    const fromEnv = runProxy(remoteCommand, [], { REDIS_URL: `redis://app:s3cret-pw@127.0.0.1:${port}` });
    expect(fromEnv.status).toBe(1);
    expect(fromEnv.stderr).toContain(`Cannot reach Redis at redis://app:***@127.0.0.1:${port}`);
    expect(fromEnv.stderr).not.toContain('s3cret-pw');
    const refused = runProxy(remoteCommand, [], { REDIS_URL: 'http://127.0.0.1:6379' });
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('REDIS_URL must be a redis: or rediss: URL');
    const flagWins = runProxy(['--redis-url', `redis://127.0.0.1:${port}`, ...remoteCommand], [], {
      REDIS_URL: 'http://127.0.0.1:6379',
    });
    expect(flagWins.status).toBe(1);
    expect(flagWins.stderr).toContain(`Cannot reach Redis at redis://127.0.0.1:${port}`);
  }, 60_000);
});

describe('mcp-proxy --log-format json', () => {
  it('writes one JSON record a line with pino’s level, time and msg', async () => {
    const lines: string[] = [];
    const proxy = await createMcpProxy({
      upstream: { command: process.execPath, args: ['--import', 'tsx', remote] },
      logLevel: 'info',
      logFormat: 'json',
      log: (line) => lines.push(line),
    });
    await proxy.close();
    expect(lines.length).toBeGreaterThan(0);
    const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    for (const [i, record] of records.entries()) {
      expect(lines[i]).not.toContain('\n');
      expect(record).toMatchObject({
        level: expect.any(Number),
        time: expect.any(Number),
        msg: expect.any(String),
      });
    }
    expect(records).toContainEqual(expect.objectContaining({ level: 30, msg: 'proxy.ready' }));
  }, 60_000);

  it('refuses a format it does not write', () => {
    const answer = runProxy(['--log-format', 'yaml', ...remoteCommand]);
    expect(answer.status).toBe(2);
    expect(answer.stderr).toContain('--log-format must be text or json, got "yaml"');
  });
});

describe('mcp-proxy --config in the shape hosts use', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-proxy-servers-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let files = 0;
  const write = (config: object) => {
    files += 1;
    const file = join(dir, `proxy-${files}.json`);
    writeFileSync(file, JSON.stringify(config));
    return file;
  };
  const entry = { command: process.execPath, args: ['--import', 'tsx', remote], env: { TEAM: 'billing' } };

  it('takes its upstream from mcpServers, with a $schema beside the proxy settings', async () => {
    const file = write({
      $schema: './node_modules/tool-dispatcher/mcp-proxy.schema.json',
      mcpServers: { remote: { ...entry, disabled: false } },
      defaults: { timeoutMs: 5000 },
    });
    const { child, url } = await startProxy(['--config', file]);
    try {
      expect((await fetch(new URL('/healthz', url))).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  }, 60_000);

  it('asks which of several servers, and says what is wrong with an entry', () => {
    const several = runProxy(['--config', write({ mcpServers: { a: entry, b: entry } })]);
    expect(several.status).toBe(2);
    expect(several.stderr).toContain('--config has 2 mcpServers: pick one with --server (a, b)');
    const typo = runProxy(['--config', write({ mcpServers: { remote: entry } }), '--server', 'remot']);
    expect(typo.stderr).toContain('--server remot is not in mcpServers: did you mean remote?');
    const bad = runProxy(['--config', write({ mcpServers: { remote: { ...entry, args: 'x' } } })]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('config.mcpServers["remote"].args must be an array of strings, got "x"');
  });

  it('ships mcp-proxy.schema.json generated from the zod schema the check uses', () => {
    const shipped = JSON.parse(readFileSync(new URL('../../mcp-proxy.schema.json', import.meta.url), 'utf8'));
    expect(shipped).toEqual(z.toJSONSchema(mcpProxyConfigSchema, { io: 'input', target: 'draft-2020-12' }));
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      files: string[];
      exports: Record<string, unknown>;
    };
    expect(pkg.files).toContain('mcp-proxy.schema.json');
    expect(pkg.exports['./mcp-proxy.schema.json']).toBe('./mcp-proxy.schema.json');
    expect(shipped.additionalProperties).toBe(false);
  });
});
