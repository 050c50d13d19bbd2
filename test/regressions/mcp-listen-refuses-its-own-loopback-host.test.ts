// `mcp-proxy --listen http://127.0.0.2:…` printed a URL it then refused: the DNS-rebinding Host
// check allowed only localhost, 127.0.0.1 and [::1], so every request to 127.0.0.2 got 403
// "Invalid Host". The listener (the one `--listen` runs, `listenMcp` in code) allows the host it
// is bound to and still refuses foreign ones.
import { request as httpRequest } from 'node:http';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../../index.js';
import { createMcpServerFactory, listenMcp, type McpListener } from '../../integrations/mcp/index.js';

const listeners: McpListener[] = [];
afterEach(async () => {
  await Promise.all(listeners.splice(0).map((listener) => listener.close()));
});

async function listening(url: string): Promise<McpListener> {
  const registry = new ToolRegistry().register({
    name: 'echo',
    inputSchema: z.object({ text: z.string() }),
    handler: ({ text }) => text,
  });
  const dispatcher = createDispatcher(defaultStack({ registry }));
  const factory = createMcpServerFactory({ registry, dispatcher, info: { name: 'echo', version: '1.0.0' } });
  const listener = await listenMcp(factory, { url });
  listeners.push(listener);
  return listener;
}

// A POST whose Host header names `host`, as a browser led there by DNS rebinding would send.
function statusWithHost(url: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      url,
      {
        method: 'POST',
        headers: { host, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    outgoing.once('error', reject);
    outgoing.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }));
  });
}

describe('a listener on a loopback address other than 127.0.0.1', () => {
  it('serves the URL it prints, on 127.0.0.2, and refuses a foreign Host', async () => {
    const listener = await listening('http://127.0.0.2:0/mcp');
    expect(listener.url).toMatch(/^http:\/\/127\.0\.0\.2:\d+\/mcp$/);
    const client = new Client({ name: 'host', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(listener.url)));
    try {
      const answer = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
      expect(answer.content).toEqual([{ type: 'text', text: 'hi' }]);
    } finally {
      await client.close();
    }
    expect(await statusWithHost(listener.url, 'evil.example')).toBe(403);
    expect(await statusWithHost(listener.url, '127.0.0.3')).toBe(403);
  });
});
