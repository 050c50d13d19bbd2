// `mcp-proxy --listen … --console`: the real CLI serves the control room on its listener; a person
// logs in over HTTP, sees the call an MCP client's tool call paused, approves it, and the client's
// resumed call runs the tool once. The refusals, the Host check, and the token never printed.

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalMetaKey } from '../../../integrations/mcp/index.js';
import { localNameOf } from '../../../integrations/mcp/proxy.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const cli = fileURLToPath(new URL('../../../integrations/mcp/cli.ts', import.meta.url));
const upstream = fileURLToPath(new URL('./fixtures/flaky-upstream.ts', import.meta.url));
const upstreamCommand = [process.execPath, '--import', 'tsx', upstream];
const token = 'console-token-0123456789-not-printed';
const dir = mkdtempSync(join(tmpdir(), 'mcp-proxy-console-'));
const stateFile = join(dir, 'state.json');

interface Running {
  child: ChildProcess;
  mcpUrl: string;
  consoleUrl: string;
  output: () => string;
}

async function startProxy(listen = 'http://127.0.0.1:0/mcp'): Promise<Running> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      cli,
      'mcp-proxy',
      '--listen',
      listen,
      '--console',
      '--require-approval',
      'destructive',
      '--log-level',
      'debug',
      '--',
      ...upstreamCommand,
    ],
    {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, TD_CONSOLE_TOKEN: token, FLAKY_STATE: stateFile },
    },
  );
  let output = '';
  child.stdout?.setEncoding('utf8');
  child.stderr?.setEncoding('utf8');
  child.stdout?.on('data', (chunk: string) => {
    output += chunk;
  });
  const ready = new Promise<[string, string]>((resolve, reject) => {
    child.stderr?.on('data', (chunk: string) => {
      output += chunk;
      const listening = /^mcp-proxy listening on (\S+)$/m.exec(output);
      const console = /^mcp-proxy console at (\S+)/m.exec(output);
      if (listening !== null && console !== null) resolve([listening[1] as string, console[1] as string]);
    });
    child.once('exit', (code) => reject(new Error(`exited ${String(code)}: ${output}`)));
  });
  const [mcpUrl, consoleUrl] = await ready;
  return { child, mcpUrl, consoleUrl, output: () => output };
}

const charges = () =>
  existsSync(stateFile) ? (JSON.parse(readFileSync(stateFile, 'utf8')) as { charges: number }).charges : 0;

describe('mcp-proxy --console', () => {
  let proxy: Running;
  beforeAll(async () => {
    proxy = await startProxy();
  }, 30_000);
  afterAll(async () => {
    const exited = once(proxy.child, 'exit');
    proxy.child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints where the console is, on the listener, without the token', () => {
    const mcp = new URL(proxy.mcpUrl);
    expect(proxy.consoleUrl).toBe(`http://127.0.0.1:${mcp.port}/console`);
    expect(proxy.output()).not.toMatch(/not a loopback/);
  });

  it('lists a call paused through the MCP client to a person logged in, and approving it runs the tool once', async () => {
    const client = new Client({ name: 'console-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(proxy.mcpUrl)));
    try {
      const paused = await client.callTool({ name: 'chargeOnce', arguments: { amount: 7 } });
      expect(paused.isError).toBe(true);
      const ticket = paused._meta?.[approvalMetaKey] as { token: string } | undefined;
      expect(ticket?.token).toEqual(expect.any(String));
      const approval = ticket?.token as string;

      const origin = new URL(proxy.consoleUrl).origin;
      const login = await fetch(`${proxy.consoleUrl}/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin },
        body: JSON.stringify({ token, name: 'ops' }),
      });
      expect(login.status).toBe(200);
      const { csrf } = (await login.json()) as { csrf: string };
      const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] as string;
      expect(cookie).toMatch(/^td_console=/);

      const listed = await fetch(`${proxy.consoleUrl}/api/approvals`, { headers: { cookie } });
      expect(listed.status).toBe(200);
      const { items } = (await listed.json()) as {
        items: Array<{ token: string; tool: string; preview?: string }>;
      };
      expect(items).toHaveLength(1);
      // The console names tools as the proxy's registry does (the upstream's chargeOnce).
      expect(items[0]).toMatchObject({ token: approval, tool: localNameOf('chargeOnce') });
      expect(items[0]?.preview).toContain('7');

      const approved = await fetch(`${proxy.consoleUrl}/api/approvals/${approval}/approve`, {
        method: 'POST',
        headers: { cookie, origin, 'x-csrf-token': csrf, 'content-type': 'application/json' },
        body: '{}',
      });
      expect(approved.status).toBe(200);
      expect(await approved.json()).toMatchObject({ ok: true, token: approval, decision: 'approved' });
      expect(charges()).toBe(0);

      const resumed = await client.callTool({
        name: 'chargeOnce',
        arguments: { amount: 7 },
        _meta: { [approvalMetaKey]: approval },
      });
      expect(resumed.isError).toBeFalsy();
      expect(charges()).toBe(1);
      // The same approval delivered again gives back the run it had, and runs nothing.
      const again = await client.callTool({
        name: 'chargeOnce',
        arguments: { amount: 7 },
        _meta: { [approvalMetaKey]: approval },
      });
      expect(again.isError).toBeFalsy();
      expect(charges()).toBe(1);

      const after = await fetch(`${proxy.consoleUrl}/api/approvals`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(((await after.json()) as { items: unknown[] }).items).toEqual([]);
      const audit = await fetch(`${proxy.consoleUrl}/api/audit?token=${approval}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(((await audit.json()) as { items: unknown[] }).items).toEqual([
        expect.objectContaining({ token: approval, decision: 'approved', channel: 'console' }),
      ]);
    } finally {
      await client.close();
    }
  }, 30_000);

  it('answers 401 without the token and 403 to a Host that names another address (DNS rebinding)', async () => {
    const bare = await fetch(`${proxy.consoleUrl}/api/approvals`);
    expect(bare.status).toBe(401);
    const { port } = new URL(proxy.consoleUrl);
    const rebound = await new Promise<number>((resolve, reject) => {
      const request = httpRequest(
        {
          host: '127.0.0.1',
          port,
          path: '/console/api/approvals',
          headers: { host: `evil.example:${port}` },
        },
        (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        },
      );
      request.on('error', reject);
      request.end();
    });
    expect(rebound).toBe(403);
  });

  it('never prints the token', () => {
    expect(proxy.output()).not.toContain(token);
  });

  it('says so when the listener is not a loopback address', async () => {
    const open = await startProxy('http://0.0.0.0:0/mcp');
    try {
      expect(open.output()).toMatch(
        /^mcp-proxy console at http:\/\/0\.0\.0\.0:\d+\/console \(not a loopback address: reachable from other machines/m,
      );
      expect(open.output()).not.toContain(token);
    } finally {
      const exited = once(open.child, 'exit');
      open.child.kill('SIGTERM');
      await exited;
    }
  }, 30_000);
});

describe('mcp-proxy --console refuses', () => {
  const run = (args: string[], env: Record<string, string | undefined>) =>
    spawnSync(process.execPath, ['--import', 'tsx', cli, 'mcp-proxy', ...args, '--', ...upstreamCommand], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, TD_CONSOLE_TOKEN: undefined, ...env },
    });

  it('without --listen, with exit 2 and one line saying so', () => {
    const answer = run(['--console'], { TD_CONSOLE_TOKEN: token });
    expect(answer.status).toBe(2);
    expect(answer.stderr).toContain('tool-dispatcher: --console needs --listen');
    expect(answer.stdout + answer.stderr).not.toContain(token);
  });

  it('without TD_CONSOLE_TOKEN, with exit 2 naming the variable', () => {
    const answer = run(['--listen', 'http://127.0.0.1:0/mcp', '--console'], {});
    expect(answer.status).toBe(2);
    expect(answer.stderr).toContain(
      'tool-dispatcher: --console needs a token in the TD_CONSOLE_TOKEN environment variable',
    );
  });

  it('with a short token, with exit 2 and the value not shown', () => {
    const short = 'short-secret';
    const answer = run(['--listen', 'http://127.0.0.1:0/mcp', '--console'], { TD_CONSOLE_TOKEN: short });
    expect(answer.status).toBe(2);
    expect(answer.stderr).toContain('TD_CONSOLE_TOKEN must be at least 16 characters');
    expect(answer.stdout + answer.stderr).not.toContain(short);
  });

  it('mentions the token nowhere in the usage', () => {
    const answer = spawnSync(process.execPath, ['--import', 'tsx', cli, 'mcp-proxy', '--help'], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, TD_CONSOLE_TOKEN: token },
    });
    expect(answer.stdout).toContain('--console');
    expect(answer.stdout).not.toContain(token);
  });
});
