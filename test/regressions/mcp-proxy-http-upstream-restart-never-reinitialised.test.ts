// Regression (issue 19, item 6): after a Streamable HTTP upstream restarted, it answered every
// call of the proxy's old session with HTTP 404 "Session not found"; the proxy kept that session,
// so every call failed `transient` for ever and the breaker opened. The transport spec has the
// client start a new session on a 404.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { expect, it } from 'vitest';
import { createMcpProxy } from '../../integrations/mcp/proxy.js';
import { serveHttp } from '../integrations/mcp/fixtures/http-upstream.js';
import { buildOddServer } from '../integrations/mcp/fixtures/odd-upstream.js';

it('starts a new session when the restarted upstream no longer knows the old one, and the call succeeds', async () => {
  const upstream = await serveHttp(() => buildOddServer(), { sessions: true });
  const lines: string[] = [];
  const proxy = await createMcpProxy({
    upstream: { url: upstream.url },
    // A pooled keep-alive socket to the old process may fail one attempt before the 404 does.
    config: { defaults: { maxAttempts: 4 } },
    logLevel: 'info',
    log: (line) => lines.push(line),
  });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await proxy.server.connect(serverTransport);
  const client = new Client({ name: 'host', version: '1.0.0' });
  await client.connect(clientTransport);
  const sum = () => client.callTool({ name: 'get-sum', arguments: { a: 2, b: 3 } });
  try {
    expect((await sum()).structuredContent).toEqual({ sum: 5 });
    const before = proxy.imported.client;
    await upstream.restart();
    expect(upstream.sessions()).toBe(0);

    // An attempt meets the 404 and the retry runs on a new session. A write is retried too,
    // since a 404 means the request never ran.
    const after = await sum();
    expect(after.isError).toBeUndefined();
    expect(after.structuredContent).toEqual({ sum: 5 });
    expect(proxy.imported.client).not.toBe(before);
    expect(before.transport).toBeUndefined();
    expect(upstream.sessions()).toBe(1);
    expect(lines.join('\n')).toMatch(/dispatch\.retry tool=get-sum .*kind=transient/);
    expect((await sum()).structuredContent).toEqual({ sum: 5 });
  } finally {
    await client.close();
    await proxy.close();
    await upstream.close();
  }
});
