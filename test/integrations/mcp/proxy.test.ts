// The mcp-proxy command as a child process between a real Client and a flaky upstream.

import { spawnSync } from 'node:child_process';
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseProxyArgs } from '../../../integrations/mcp/proxy-args.js';
import { buildRemoteServer } from './fixtures/remote-server.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const cli = join(root, 'integrations/mcp/cli.ts');
const upstream = fileURLToPath(new URL('./fixtures/flaky-upstream.ts', import.meta.url));

interface UpstreamState {
  starts: number;
  crashes: Record<string, number>;
  charges: number;
  aborts: string[];
}

interface Running {
  client: Client;
  stderr: () => string;
  state: () => UpstreamState;
  protocolErrors: Error[];
}

const dir = mkdtempSync(join(tmpdir(), 'mcp-proxy-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function startProxy(
  name: string,
  config: unknown,
  flags: string[] = [],
  command = [process.execPath, '--import', 'tsx', upstream],
): Promise<Running> {
  const configFile = join(dir, `${name}.config.json`);
  const stateFile = join(dir, `${name}.state.json`);
  writeFileSync(configFile, JSON.stringify(config));
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [
      '--import',
      'tsx',
      cli,
      'mcp-proxy',
      '--config',
      configFile,
      '--log-level',
      'info',
      ...flags,
      ...(command.length > 0 ? ['--', ...command] : []),
    ],
    env: { ...(process.env as Record<string, string>), FLAKY_STATE: stateFile },
    cwd: root,
    stderr: 'pipe',
  });
  let logged = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    logged += chunk.toString();
  });
  const client = new Client({ name: 'proxy-test', version: '1.0.0' });
  const protocolErrors: Error[] = [];
  client.onerror = (error) => protocolErrors.push(error);
  await client.connect(transport);
  return {
    client,
    stderr: () => logged,
    state: () => JSON.parse(readFileSync(stateFile, 'utf8')) as UpstreamState,
    protocolErrors,
  };
}

const textOf = (result: unknown): string =>
  (result as { content: Array<{ text?: string }> }).content[0]?.text ?? '';

describe('tool-dispatcher mcp-proxy', () => {
  let proxy: Running;
  beforeAll(async () => {
    proxy = await startProxy('main', {
      defaults: { timeoutMs: 20_000 },
      tools: {
        hang: { timeoutMs: 300 },
        chargeOnce: { idempotent: false },
        echoText: { idempotent: true },
        crashFirst: { idempotent: true },
      },
      concurrency: 4,
      breaker: { failureThreshold: 50, cooldownMs: 1_000 },
    });
  });
  afterAll(async () => {
    await proxy.client.close();
  });

  it('serves the upstream tools under their upstream names', async () => {
    const { tools } = await proxy.client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual([
      'echoText',
      'crashFirst',
      'hang',
      'hangForever',
      'chargeOnce',
      'upstreamState',
    ]);
    expect(tools.find((tool) => tool.name === 'echoText')?.annotations?.idempotentHint).toBe(true);
    expect(tools.find((tool) => tool.name === 'crashFirst')?.inputSchema).toMatchObject({
      type: 'object',
      required: ['key', 'times'],
    });
    const result = await proxy.client.callTool({ name: 'echoText', arguments: { text: 'hi' } });
    expect(textOf(result)).toBe('{"echo":"hi"}');
  });

  it('validates args against the upstream schema before calling it', async () => {
    const result = await proxy.client.callTool({ name: 'echoText', arguments: { text: 7 } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/^error \(schema\): Invalid args for "echoText"/);
  });

  it('retries an idempotent call whose upstream crashed, on the restarted process', async () => {
    const result = await proxy.client.callTool({ name: 'crashFirst', arguments: { key: 'once', times: 1 } });
    expect(JSON.parse(textOf(result))).toEqual({ key: 'once', calls: 2 });
    expect(proxy.stderr()).toMatch(/upstream\.exited/);
    expect(proxy.stderr()).toMatch(/dispatch\.retry tool=crashFirst .*kind=transient/);
    expect(proxy.stderr()).toMatch(/dispatch\.success tool=crashFirst .*attempts=2/);
  });

  it('times a hung tool out and cancels it upstream', async () => {
    const before = proxy.state().aborts.length;
    const result = await proxy.client.callTool({ name: 'hang', arguments: {} });
    expect(result).toMatchObject({
      isError: true,
      _meta: { 'tool-dispatcher/error': { kind: 'timeout', attempts: 1 } },
    });
    await expect
      .poll(() => proxy.state().aborts.slice(before))
      .toEqual([expect.stringMatching(/timed out after 300 ms/)]);
  });

  it('runs the upstream tool once for calls that share a _meta idempotency key', async () => {
    const call = () =>
      proxy.client.callTool({
        name: 'chargeOnce',
        arguments: { amount: 9 },
        _meta: { 'tool-dispatcher/idempotencyKey': 'pay-1' },
      });
    const [first, second] = await Promise.all([call(), call()]);
    const third = await call();
    expect(textOf(first)).toBe(textOf(second));
    expect(textOf(third)).toBe(textOf(first));
    expect(proxy.state().charges).toBe(1);
  });

  it("passes a client abort through to the upstream handler's signal", async () => {
    const before = proxy.state().aborts.length;
    const controller = new AbortController();
    const progress: unknown[] = [];
    const call = proxy.client.callTool({ name: 'hangForever', arguments: {} }, undefined, {
      signal: controller.signal,
      onprogress: (update) => {
        progress.push(update);
        controller.abort(new Error('user pressed stop'));
      },
    });
    await expect(call).rejects.toThrow(/user pressed stop/);
    expect(progress).toEqual([{ progress: 0, message: 'hanging' }]);
    await expect.poll(() => proxy.state().aborts.length).toBe(before + 1);
    await expect.poll(() => proxy.stderr()).toMatch(/dispatch\.failure tool=hangForever .*kind=cancelled/);
  });

  it('backs off when the upstream keeps crashing, and a call arriving meanwhile waits for the new process', async () => {
    const starts = proxy.state().starts;
    const crashing = await proxy.client.callTool({
      name: 'crashFirst',
      arguments: { key: 'always', times: 99 },
    });
    expect(crashing).toMatchObject({
      isError: true,
      _meta: { 'tool-dispatcher/error': { kind: 'transient', attempts: 3 } },
    });
    expect(proxy.stderr()).toMatch(/upstream\.backoff/);
    // The third crash's restart is under way (or backing off) as this call arrives.
    const echo = await proxy.client.callTool({ name: 'echoText', arguments: { text: 'still here' } });
    expect(textOf(echo)).toBe('{"echo":"still here"}');
    expect(proxy.state().starts).toBe(starts + 3);
  });

  it('writes nothing but protocol to stdout', () => {
    expect(proxy.protocolErrors).toEqual([]);
  });
});

describe('tool-dispatcher mcp-proxy --upstream-url', () => {
  let http: HttpServer;
  let url: string;
  beforeAll(async () => {
    // A stateless Streamable HTTP MCP server: a fresh McpServer and transport per request.
    http = createServer((request, response) => {
      const { server } = buildRemoteServer();
      const transport = new StreamableHTTPServerTransport({});
      response.on('close', () => {
        void transport.close();
        void server.close();
      });
      void server.connect(transport).then(() => transport.handleRequest(request, response));
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  });
  afterAll(() => {
    http.closeAllConnections();
    http.close();
  });

  it('serves a Streamable HTTP upstream, fails calls transient once it is unreachable, and opens the breaker', async () => {
    const proxy = await startProxy(
      'http',
      { defaults: { maxAttempts: 2 } },
      ['--upstream-url', url, '--breaker-failure-threshold', '1'],
      [],
    );
    try {
      expect((await proxy.client.listTools()).tools.map((tool) => tool.name)).toContain('getWeather');
      const weather = await proxy.client.callTool({ name: 'getWeather', arguments: { city: 'Quito' } });
      expect(weather.structuredContent).toEqual({ city: 'Quito', tempC: 21 });
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
      const unreachable = await proxy.client.callTool({ name: 'getWeather', arguments: { city: 'Quito' } });
      expect(unreachable).toMatchObject({
        isError: true,
        _meta: { 'tool-dispatcher/error': { kind: 'transient', attempts: 2 } },
      });
      const refused = await proxy.client.callTool({ name: 'getWeather', arguments: { city: 'Quito' } });
      expect(refused).toMatchObject({
        isError: true,
        _meta: { 'tool-dispatcher/error': { kind: 'circuit_open', attempts: 0 } },
      });
    } finally {
      await proxy.client.close();
    }
  });
});

describe('mcp-proxy arguments', () => {
  it('takes the upstream command after -- and lets flags win over the config file', () => {
    const file = join(dir, 'args.config.json');
    writeFileSync(
      file,
      JSON.stringify({
        defaults: { timeoutMs: 1_000, maxAttempts: 2 },
        tools: { slow: { timeoutMs: 60_000 } },
        concurrency: 2,
      }),
    );
    const parsed = parseProxyArgs([
      '--config',
      file,
      '--timeout-ms',
      '5000',
      '--concurrency',
      '3',
      '--',
      'node',
      'server.js',
      '--port',
      '1',
    ]);
    expect(parsed).toEqual({
      upstream: { command: 'node', args: ['server.js', '--port', '1'] },
      config: {
        defaults: { timeoutMs: 5_000, maxAttempts: 2 },
        tools: { slow: { timeoutMs: 60_000 } },
        concurrency: 3,
        breaker: {},
      },
      logLevel: 'warn',
      logFormat: 'text',
    });
    expect(parseProxyArgs(['--upstream-url', 'http://127.0.0.1:1/mcp', '--idempotent']).upstream).toEqual({
      url: 'http://127.0.0.1:1/mcp',
    });
  });

  it('refuses bad flags and settings with a message naming them', () => {
    expect(() => parseProxyArgs([])).toThrow(/No upstream/);
    expect(() => parseProxyArgs(['--timeout-ms', 'soon', '--', 'node'])).toThrow(
      /--timeout-ms must be a number/,
    );
    expect(() => parseProxyArgs(['--max-attempts', '0', '--', 'node'])).toThrow(
      /maxAttempts must be an integer >= 1/,
    );
    expect(() => parseProxyArgs(['--log-level', 'loud', '--', 'node'])).toThrow(/--log-level/);
    const file = join(dir, 'bad.config.json');
    writeFileSync(file, JSON.stringify({ tools: { x: { retries: 2 } } }));
    expect(() => parseProxyArgs(['--config', file, '--', 'node'])).toThrow(
      /config\.tools\["x"\]\.retries is not a setting/,
    );
  });

  it('exits 1 with a message on stderr when the upstream does not start', () => {
    const run = spawnSync(
      process.execPath,
      ['--import', 'tsx', cli, 'mcp-proxy', '--', process.execPath, '-e', 'process.exit(3)'],
      {
        cwd: root,
        encoding: 'utf8',
      },
    );
    expect(run.status).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      /^tool-dispatcher: The upstream MCP server \(.* -e process\.exit\(3\)\) did not start: .*Connection closed/,
    );
  });

  it('exits 2 with the usage on stderr for a bad command line', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', cli, 'mcp-proxy', '--bogus'], {
      cwd: root,
      encoding: 'utf8',
    });
    expect(run.status).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/Unknown option '--bogus'[\s\S]*Usage: tool-dispatcher mcp-proxy/);
  });
});
