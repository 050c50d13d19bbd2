// importMcpTools reads a rate-limited isError result as a rate-limited transient failure.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../../index.js';
import { importMcpTools } from '../../integrations/mcp/index.js';

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((closable) => closable.close().catch(() => {})));
});

async function remoteAnswering(texts: string[]) {
  const server = new McpServer({ name: 'limited', version: '1.0.0' });
  let calls = 0;
  server.registerTool('search', { inputSchema: { q: z.string() } }, async () => {
    const text = texts[Math.min(calls, texts.length - 1)] as string;
    calls += 1;
    return text === 'ok'
      ? { content: [{ type: 'text', text: 'found' }] }
      : { isError: true, content: [{ type: 'text', text }] };
  });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await server.connect(serverTransport);
  const client = new Client({ name: 'importer', version: '1.0.0' });
  await client.connect(clientTransport);
  opened.push(client, server);
  return { client, calls: () => calls };
}

describe('importMcpTools and a rate-limited remote', () => {
  it('fails an isError "rate limit" result transient with its retry-after, and retries it', async () => {
    const remote = await remoteAnswering(['Rate limit exceeded, retry after 0.01 s', 'ok']);
    const registry = new ToolRegistry();
    await importMcpTools(remote.client, registry);
    const dispatcher = createDispatcher(
      defaultStack({ registry, retry: { random: () => 0, baseDelayMs: 1 } }),
    );
    expect(await dispatcher.dispatch('search', { q: 'x' })).toMatchObject({ ok: true, attempts: 2 });
    expect(remote.calls()).toBe(2);
  });

  it('keeps other isError results tool_error', async () => {
    const remote = await remoteAnswering(['no such index']);
    const registry = new ToolRegistry();
    await importMcpTools(remote.client, registry);
    const dispatcher = createDispatcher(defaultStack({ registry, retry: { maxAttempts: 1 } }));
    expect(await dispatcher.dispatch('search', { q: 'x' })).toMatchObject({ kind: 'tool_error' });
    const limited = await remoteAnswering(['429 Too Many Requests. Retry after 3 s']);
    const other = new ToolRegistry();
    await importMcpTools(limited.client, other);
    const limitedDispatcher = createDispatcher(defaultStack({ registry: other, retry: { maxAttempts: 1 } }));
    expect(await limitedDispatcher.dispatch('search', { q: 'x' })).toMatchObject({
      kind: 'transient',
      retryAfterMs: 3000,
    });
  });
});
