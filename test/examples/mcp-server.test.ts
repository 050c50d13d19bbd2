// examples/mcp-server.ts serves our registry over stdio to a real SDK Client.

import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
let client: Client | undefined;
afterEach(async () => {
  await client?.close();
});

describe('examples/mcp-server.ts', () => {
  it('lists and runs its tools over stdio, with progress, and logs only to stderr', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', 'examples/mcp-server.ts'],
      cwd: root,
      stderr: 'pipe',
    });
    let logged = '';
    transport.stderr?.on('data', (chunk: Buffer) => {
      logged += chunk.toString();
    });
    client = new Client({ name: 'example-test', version: '1.0.0' });
    const protocolErrors: Error[] = [];
    client.onerror = (error) => protocolErrors.push(error);
    await client.connect(transport);

    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['docs.search', 'billing.charge', 'reports.build']);
    expect(tools[0]?.annotations).toMatchObject({ readOnlyHint: true, idempotentHint: true });

    for (let i = 0; i < 3; i++) {
      // The third search fails once inside the server and is retried there.
      expect(
        await client.callTool({ name: 'docs.search', arguments: { query: 'mcp', limit: 1 } }),
      ).toMatchObject({
        structuredContent: { hits: ['mcp: page 1'] },
      });
    }
    const charge = () =>
      client!.callTool({
        name: 'billing.charge',
        arguments: { customer: 'c1', cents: 100 },
        _meta: { 'tool-dispatcher/idempotencyKey': 'order-7' },
      });
    expect((await charge()).structuredContent).toEqual((await charge()).structuredContent);

    const progress: unknown[] = [];
    const report = await client.callTool({ name: 'reports.build', arguments: { steps: 2 } }, undefined, {
      onprogress: (update) => progress.push(update),
    });
    expect(report.structuredContent).toEqual({ report: 'built in 2 steps' });
    expect(progress).toEqual([
      { progress: 0, total: 2, message: 'step 1 of 2' },
      { progress: 1, total: 2, message: 'step 2 of 2' },
    ]);

    const invalid = await client.callTool({
      name: 'billing.charge',
      arguments: { customer: 'c1', cents: -1 },
    });
    expect(invalid.isError).toBe(true);
    expect(protocolErrors).toEqual([]);
    expect(logged).toContain('dispatch.retry');
  });
});
