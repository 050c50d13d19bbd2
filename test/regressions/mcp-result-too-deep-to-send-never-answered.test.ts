// Regression (issue 19, item 5): a result that no transport could write (an upstream's
// structuredContent nested thousands of levels deep; JSON.stringify overflows the stack a few
// thousand levels down) was logged as a success, then its response was never sent, and the
// client waited until its own timeout. Every call now gets an answer: `internal`, saying why.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../../index.js';
import { createMcpServer } from '../../integrations/mcp/server.js';
import { serveHttp } from '../integrations/mcp/fixtures/http-upstream.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const fixture = fileURLToPath(new URL('../integrations/mcp/fixtures/odd-upstream.ts', import.meta.url));
// Deep enough that JSON.stringify overflows Node's default stack (it does near 4 000 levels).
const depth = 8_000;
// A client that waits no longer than this has no answer: the bug's symptom.
const answerWithinMs = 5_000;

const nested = (levels: number): Record<string, unknown> => {
  let value: Record<string, unknown> = { leaf: true };
  for (let level = 1; level < levels; level++) value = { next: value };
  return value;
};
const errorOf = (result: unknown) =>
  (result as { _meta: Record<string, { kind: string; message: string }> })._meta['tool-dispatcher/error'];

it('answers internal when formatResult returns what no transport can write, or throws', async () => {
  const registry = new ToolRegistry()
    .register({ name: 'deep.tree', inputSchema: z.object({}), handler: () => 'tree' })
    .register({ name: 'bad.format', inputSchema: z.object({}), handler: () => 'x' });
  const dispatcher = createDispatcher(defaultStack({ registry }));
  const http = await serveHttp(() =>
    createMcpServer({
      registry,
      dispatcher,
      info: { name: 'deep', version: '1.0.0' },
      formatResult: (result, toolName) => {
        if (toolName === 'bad.format') throw new Error('no renderer for x');
        return { content: [{ type: 'text', text: String(result) }], structuredContent: nested(depth) };
      },
    }),
  );
  const client = new Client({ name: 'host', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
  try {
    const deep = await client.callTool({ name: 'deep.tree', arguments: {} }, undefined, {
      timeout: answerWithinMs,
    });
    expect(deep.isError).toBe(true);
    expect(errorOf(deep)).toMatchObject({
      kind: 'internal',
      message: 'The result of "deep.tree" cannot be sent: it is nested more than 1000 levels deep',
    });
    const bad = await client.callTool({ name: 'bad.format', arguments: {} }, undefined, {
      timeout: answerWithinMs,
    });
    expect(errorOf(bad)).toMatchObject({
      kind: 'internal',
      message: 'The result of "bad.format" cannot be sent: formatting it failed (no renderer for x)',
    });
  } finally {
    await client.close();
    await http.close();
  }
});

it('answers a proxied result nested too deep to send as internal, and logs a failure', async () => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [
      '--import',
      'tsx',
      join(root, 'integrations/mcp/cli.ts'),
      'mcp-proxy',
      '--log-level',
      'info',
      '--',
      // The upstream gets a stack big enough to write what the proxy's cannot.
      process.execPath,
      '--stack-size=4000',
      '--import',
      'tsx',
      fixture,
    ],
    cwd: root,
    stderr: 'pipe',
  });
  let logged = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    logged += chunk.toString();
  });
  const client = new Client({ name: 'host', version: '1.0.0' });
  await client.connect(transport);
  try {
    const result = await client.callTool({ name: 'deepResult', arguments: { depth } }, undefined, {
      timeout: answerWithinMs,
    });
    expect(result.isError).toBe(true);
    expect(errorOf(result)).toMatchObject({
      kind: 'internal',
      attempts: 1,
      message:
        'The MCP tool "deepResult" answered with a result that cannot be sent on: it is nested more than 1000 levels deep',
    });
    expect(logged).toMatch(/dispatch\.failure tool=deepResult .*kind=internal/);
    expect(logged).not.toMatch(/dispatch\.success tool=deepResult/);
    const shallow = await client.callTool({ name: 'deepResult', arguments: { depth: 900 } });
    expect(shallow.isError).toBeUndefined();
  } finally {
    await client.close();
  }
});
