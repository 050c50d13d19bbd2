// Regression: importMcpTools set a tools/list_changed handler but never opened a
// subscriptions/listen stream, so a 2026-07-28 upstream's tool changes never reached the import
// (or the proxy built on it). The stream is opened on a modern connection and ends with the client.
import { fileURLToPath } from 'node:url';
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { McpServer } from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ToolRegistry } from '../../../index.js';
import { createMcpProxy, importMcpTools } from '../../../integrations/mcp/index.js';

const growing = fileURLToPath(new URL('./fixtures/growing-modern-upstream.ts', import.meta.url));
const closing: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((close) => close().catch(() => {})));
});

function changed(onChange: (fire: () => void) => void): Promise<void> {
  return new Promise((resolve) => onChange(resolve));
}

describe('tool list changes of a 2026-07-28 upstream', () => {
  it('reach importMcpTools through a subscriptions/listen stream', async () => {
    const client = new Client(
      { name: 'host', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(
      new StdioClientTransport({ command: process.execPath, args: ['--import', 'tsx', growing] }),
    );
    closing.push(() => client.close());
    expect(client.getProtocolEra()).toBe('modern');
    const registry = new ToolRegistry();
    let fire = () => {};
    const refreshed = changed((resolve) => {
      fire = resolve;
    });
    const imported = await importMcpTools(client, registry, { onChange: () => fire() });
    closing.push(async () => imported.dispose());
    expect([...imported.names.keys()]).toEqual(['grow']);
    await client.callTool({ name: 'grow', arguments: {} });
    await refreshed;
    expect([...imported.names.keys()].sort()).toEqual(['grow', 'grown']);
  }, 30_000);

  it('reach a client of the proxy, the upstream probed as 2026-07-28', async () => {
    const proxy = await createMcpProxy({
      upstream: { command: process.execPath, args: ['--import', 'tsx', growing] },
      logLevel: 'silent',
    });
    closing.push(() => proxy.close());
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const served = serveStdio(proxy.serverFactory, { transport: serverSide });
    const client = new Client({ name: 'host', version: '1.0.0' });
    await client.connect(clientSide);
    closing.push(
      () => client.close(),
      () => served.close(),
    );
    const heard = new Promise<void>((resolve) => {
      client.setNotificationHandler('notifications/tools/list_changed', () => resolve());
    });
    await client.callTool({ name: 'grow', arguments: {} });
    await heard;
    const names = (await client.listTools()).tools.map((tool) => tool.name).sort();
    expect(names).toEqual(['grow', 'grown']);
  }, 30_000);

  it('ends the listen stream on dispose(): the client cancels its subscriptions/listen request', async () => {
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const served = serveStdio(
      () => {
        const server = new McpServer({ name: 'listed', version: '1.0.0' });
        server.registerTool('a', { description: 'A.' }, async () => ({ content: [] }));
        return server;
      },
      { transport: serverSide },
    );
    const sent: Array<{ method?: string; id?: unknown; params?: { requestId?: unknown } }> = [];
    const send = clientSide.send.bind(clientSide);
    clientSide.send = (message, options) => {
      sent.push(message as (typeof sent)[number]);
      return send(message, options);
    };
    const client = new Client(
      { name: 'host', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(clientSide);
    closing.push(
      () => client.close(),
      () => served.close(),
    );
    const imported = await importMcpTools(client, new ToolRegistry());
    await vi.waitFor(() =>
      expect(sent.some((message) => message.method === 'subscriptions/listen')).toBe(true),
    );
    const listenId = sent.find((message) => message.method === 'subscriptions/listen')?.id;
    imported.dispose();
    await vi.waitFor(() =>
      expect(
        sent.some(
          (message) => message.method === 'notifications/cancelled' && message.params?.requestId === listenId,
        ),
      ).toBe(true),
    );
  });
});
