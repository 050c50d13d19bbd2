// mcp-proxy --require-approval over stdio: a gated call reaches a client that cannot elicit as an
// isError result and stays refused; a tool the config lets through runs.

import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, describe, expect, it } from 'vitest';
import { parseProxyArgs } from '../../../integrations/mcp/proxy-args.js';
import { approvalMetaKey } from '../../../integrations/mcp/index.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const cli = join(root, 'integrations/mcp/cli.ts');
const upstream = fileURLToPath(new URL('./fixtures/flaky-upstream.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'mcp-proxy-approval-'));
const clients: Client[] = [];
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => {})));
  rmSync(dir, { recursive: true, force: true });
});

describe('mcp-proxy --require-approval', () => {
  it('parses the flag and the config setting, and refuses a bad mode', () => {
    expect(parseProxyArgs(['--require-approval', 'all', '--', 'x']).config.requireApproval).toBe('all');
    expect(() => parseProxyArgs(['--require-approval', 'some', '--', 'x'])).toThrow(/requireApproval/);
  });

  it('refuses a gated call to a client that cannot elicit, and runs a tool the config allows', async () => {
    const configFile = join(dir, 'config.json');
    const stateFile = join(dir, 'state.json');
    writeFileSync(configFile, JSON.stringify({ tools: { echoText: { requiresApproval: false } } }));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        '--import',
        'tsx',
        cli,
        'mcp-proxy',
        '--config',
        configFile,
        '--require-approval',
        'destructive',
        '--',
        process.execPath,
        '--import',
        'tsx',
        upstream,
      ],
      env: { ...(process.env as Record<string, string>), FLAKY_STATE: stateFile },
      cwd: root,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'proxy-approval-test', version: '1.0.0' });
    clients.push(client);
    await client.connect(transport);
    const charge = await client.callTool({ name: 'chargeOnce', arguments: { amount: 5 } });
    expect(charge.isError).toBe(true);
    expect(JSON.stringify(charge.content)).toContain('approval_required');
    const token = (charge._meta?.[approvalMetaKey] as { token: string } | undefined)?.token ?? 'missing';
    expect(JSON.stringify(charge.content)).not.toContain(token);
    // Nobody can approve inside the proxy: resuming with the token is refused again.
    const again = await client.callTool({
      name: 'chargeOnce',
      arguments: { amount: 5 },
      _meta: { [approvalMetaKey]: token },
    });
    expect(again.isError).toBe(true);
    const echo = await client.callTool({ name: 'echoText', arguments: { text: 'hi' } });
    expect(echo.isError).toBeFalsy();
    const charges = existsSync(stateFile)
      ? (JSON.parse(readFileSync(stateFile, 'utf8')) as { charges: number }).charges
      : 0;
    expect(charges).toBe(0);
  }, 30_000);
});
