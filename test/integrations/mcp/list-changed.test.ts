// notifications/tools/list_changed from the upstream, re-served by the proxy to a v2 Client on both
// revisions: a 2025-11-25 connection hears it unsolicited, a 2026-07-28 one on its
// subscriptions/listen stream (stdio, and Streamable HTTP through the listener's bus).
import { fileURLToPath } from 'node:url';
import { Client, InMemoryTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { afterEach, describe, expect, it } from 'vitest';
import { createMcpProxy, type McpProxy } from '../../../integrations/mcp/index.js';
import { listenMcp } from '../../../integrations/mcp/listener.js';

const growing = fileURLToPath(new URL('./fixtures/growing-upstream.ts', import.meta.url));
const closing: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((close) => close().catch(() => {})));
});

async function proxyOfGrowing(): Promise<McpProxy> {
  const proxy = await createMcpProxy({
    upstream: { command: process.execPath, args: ['--import', 'tsx', growing] },
    logLevel: 'silent',
  });
  closing.push(() => proxy.close());
  return proxy;
}

function heard(client: Client): Promise<void> {
  return new Promise((resolve) => {
    client.setNotificationHandler('notifications/tools/list_changed', () => resolve());
  });
}

async function grownAfterChange(client: Client, caller: Client = client): Promise<string[]> {
  const changed = heard(client);
  await caller.callTool({ name: 'grow', arguments: {} });
  await changed;
  return (await client.listTools()).tools.map((tool) => tool.name).sort();
}

describe('the proxy re-serves tools/list_changed', () => {
  it.each([
    ['legacy', undefined],
    ['modern', { versionNegotiation: { mode: { pin: '2026-07-28' as const } } }],
  ] as const)(
    'to a v2 Client on the %s era over stdio',
    async (era, options) => {
      const proxy = await proxyOfGrowing();
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      const served = serveStdio(proxy.serverFactory, { transport: serverSide });
      const client = new Client({ name: 'host', version: '1.0.0' }, options);
      await client.connect(clientSide);
      closing.push(
        () => client.close(),
        () => served.close(),
      );
      expect(client.getProtocolEra()).toBe(era);
      if (era === 'modern') {
        const subscription = await client.listen({ toolsListChanged: true });
        closing.push(() => subscription.close());
      }
      expect(await grownAfterChange(client)).toEqual(['grow', 'grown']);
    },
    30_000,
  );

  it('to a 2026-07-28 client listening over Streamable HTTP (the listener given proxy.events)', async () => {
    const proxy = await proxyOfGrowing();
    const listener = await listenMcp(proxy.serverFactory, {
      url: 'http://127.0.0.1:0/mcp',
      bus: proxy.events,
    });
    closing.push(() => listener.close());
    const client = new Client(
      { name: 'host', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(new StreamableHTTPClientTransport(new URL(listener.url)));
    closing.push(() => client.close());
    const subscription = await client.listen({ toolsListChanged: true });
    closing.push(() => subscription.close());
    expect(await grownAfterChange(client)).toEqual(['grow', 'grown']);
  }, 30_000);
});
