// `mcp-proxy --listen`: the stack on stateless Streamable HTTP for both revisions, the ready line,
// the Origin check, a header/body mismatch, SIGTERM, and the flags and addresses it refuses.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const cli = fileURLToPath(new URL('../../../integrations/mcp/cli.ts', import.meta.url));
const upstream = fileURLToPath(new URL('./fixtures/remote-server.ts', import.meta.url));
const upstreamCommand = [process.execPath, '--import', 'tsx', upstream];

const modernMeta = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

interface Listening {
  child: ChildProcess;
  url: string;
  stderr: () => string;
}

async function startListening(listen = 'http://127.0.0.1:0/mcp'): Promise<Listening> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', cli, 'mcp-proxy', '--listen', listen, '--', ...upstreamCommand],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  const ready = new Promise<string>((resolve, reject) => {
    child.stderr?.on('data', (chunk: string) => {
      stderr += chunk;
      const line = /^mcp-proxy listening on (\S+)$/m.exec(stderr);
      if (line !== null) resolve(line[1] as string);
    });
    child.once('exit', (code) => reject(new Error(`exited ${String(code)}: ${stderr}`)));
  });
  return { child, url: await ready, stderr: () => stderr };
}

function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify(body),
  });
}

describe('mcp-proxy --listen', () => {
  let proxy: Listening;
  beforeAll(async () => {
    proxy = await startListening();
  }, 30_000);
  afterAll(() => {
    proxy.child.kill('SIGKILL');
  });

  it('prints one ready line naming the bound port', () => {
    expect(proxy.url).toMatch(/^http:\/\/127\.0\.0\.1:[1-9]\d*\/mcp$/);
  });

  it.each([
    ['legacy', undefined],
    ['modern', { versionNegotiation: { mode: { pin: '2026-07-28' as const } } }],
  ] as const)('serves a v2 Client on the %s era', async (era, options) => {
    const client = new Client({ name: 'host', version: '1.0.0' }, options);
    await client.connect(new StreamableHTTPClientTransport(new URL(proxy.url)));
    try {
      expect(client.getProtocolEra()).toBe(era);
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('getWeather');
      const weather = await client.callTool({ name: 'getWeather', arguments: { city: 'Quito' } });
      expect(weather.isError).not.toBe(true);
    } finally {
      await client.close();
    }
  });

  it('keeps no session: a 2025-era initialize gets no Mcp-Session-Id', async () => {
    const answer = await post(proxy.url, {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('mcp-session-id')).toBeNull();
    await answer.body?.cancel();
  });

  it('answers 403 to a foreign Origin and serves its own', async () => {
    const request = { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: modernMeta } };
    const headers = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' };
    const foreign = await post(proxy.url, request, { ...headers, origin: 'http://evil.example' });
    expect(foreign.status).toBe(403);
    await foreign.body?.cancel();
    const own = await post(proxy.url, request, { ...headers, origin: 'http://localhost:5173' });
    expect(own.status).toBe(200);
    await own.body?.cancel();
  });

  it('answers 400 with -32020 when a header contradicts the body', async () => {
    const answer = await post(
      proxy.url,
      { jsonrpc: '2.0', id: 3, method: 'tools/list', params: { _meta: modernMeta } },
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call' },
    );
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as { error: { code: number } }).error.code).toBe(-32020);
  });

  it('stops on SIGTERM with exit 0, without reading stdin', async () => {
    const other = await startListening();
    const exited = once(other.child, 'exit');
    other.child.kill('SIGTERM');
    expect((await exited)[0]).toBe(0);
  }, 30_000);
});

describe('mcp-proxy --listen refuses', () => {
  const run = (args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', cli, 'mcp-proxy', ...args, '--', ...upstreamCommand], {
      cwd: root,
      encoding: 'utf8',
    });

  it.each([
    ['ftp://127.0.0.1:21/mcp', /--listen must be an http: URL.*ftp:\/\/127\.0\.0\.1:21\/mcp/],
    ['http://127.0.0.1/mcp', /--listen must name a port.*http:\/\/127\.0\.0\.1\/mcp/],
    ['not a url', /--listen must be a URL.*not a url/],
  ])('%s with exit 2 and the usage', (listen, message) => {
    const answer = run(['--listen', listen]);
    expect(answer.status).toBe(2);
    expect(answer.stderr).toMatch(message);
    expect(answer.stderr).toMatch(/Usage: tool-dispatcher mcp-proxy/);
  });

  it.each([
    ['--task-threshold-ms', '0'],
    ['--task-poll-interval-ms', '1.5'],
    ['--task-ttl-ms', 'soon'],
  ])('%s %s with exit 2, naming the flag and the value', (flag, value) => {
    const answer = run([flag, value]);
    expect(answer.status).toBe(2);
    expect(answer.stderr).toContain(`${flag} must be a positive integer, got "${value}"`);
  });

  it('an address in use with exit 1 naming it', async () => {
    const taken = createServer().listen(0, '127.0.0.1');
    await once(taken, 'listening');
    const { port } = taken.address() as AddressInfo;
    try {
      const answer = run(['--listen', `http://127.0.0.1:${port}/mcp`]);
      expect(answer.status).toBe(1);
      expect(answer.stderr).toContain(`Cannot listen on http://127.0.0.1:${port}/mcp: the address is in use`);
    } finally {
      taken.close();
    }
  }, 30_000);
});
