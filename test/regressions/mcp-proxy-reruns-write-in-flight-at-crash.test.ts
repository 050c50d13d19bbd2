// Regression (issue 19, item 7): a call of a non-idempotent tool in flight when the upstream
// crashed failed `transient`, so the proxy ran the write again on the restarted process, although
// its outcome was unknown (exactly as after a timeout, which is never retried for such a tool).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { expect, it } from 'vitest';
import { createMcpProxy } from '../../integrations/mcp/proxy.js';

const fixture = fileURLToPath(new URL('../integrations/mcp/fixtures/flaky-upstream.ts', import.meta.url));

it('fails a write in flight at a crash as outcome_unknown (connection_lost), and never runs it again', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-proxy-crash-write-'));
  const stateFile = join(dir, 'state.json');
  const proxy = await createMcpProxy({
    upstream: {
      command: process.execPath,
      args: ['--import', 'tsx', fixture],
      env: { ...(process.env as Record<string, string>), FLAKY_STATE: stateFile },
    },
    logLevel: 'silent',
  });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await proxy.server.connect(serverTransport);
  const client = new Client({ name: 'host', version: '1.0.0' });
  await client.connect(clientTransport);
  try {
    const result = await client.callTool({ name: 'crashFirst', arguments: { key: 'write', times: 1 } });
    expect(result).toMatchObject({
      isError: true,
      _meta: { 'tool-dispatcher/error': { kind: 'outcome_unknown', window: 'connection_lost', attempts: 1 } },
    });
    const { message } = (result._meta as { 'tool-dispatcher/error': { message: string } })[
      'tool-dispatcher/error'
    ];
    expect(message).toMatch(/"crashFirst" was running, so its outcome is unknown/);
    // The restarted upstream serves the next call; the write itself ran once.
    const echo = await client.callTool({ name: 'echoText', arguments: { text: 'after' } });
    expect(echo.content).toEqual([{ type: 'text', text: '{"echo":"after"}' }]);
    const state = JSON.parse(readFileSync(stateFile, 'utf8')) as { crashes: Record<string, number> };
    expect(state.crashes['write']).toBe(1);
  } finally {
    await client.close();
    await proxy.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
