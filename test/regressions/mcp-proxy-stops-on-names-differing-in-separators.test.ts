// Regression (issue 19, item 3): upstream tools named `searchDocs` and `search_docs` (distinct,
// valid MCP names) both became the registry name `search_docs`, and the proxy stopped at start
// with a TypeError that the command line reported as the upstream having not started.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { expect, it } from 'vitest';
import { createMcpProxy, localNameOf } from '../../integrations/mcp/proxy.js';
import { serveHttp } from '../integrations/mcp/fixtures/http-upstream.js';
import { buildOddServer } from '../integrations/mcp/fixtures/odd-upstream.js';

it('serves upstream names that differ only in separators, each as it is', async () => {
  const upstream = await serveHttp(() => buildOddServer({ twins: true }));
  const proxy = await createMcpProxy({ upstream: { url: upstream.url }, logLevel: 'silent' });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await proxy.server.connect(serverTransport);
  const client = new Client({ name: 'host', version: '1.0.0' });
  await client.connect(clientTransport);
  try {
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['searchDocs', 'search_docs']));
    for (const name of ['searchDocs', 'search_docs']) {
      const result = await client.callTool({ name, arguments: {} });
      expect(result.content).toEqual([{ type: 'text', text: name }]);
    }
  } finally {
    await client.close();
    await proxy.close();
    await upstream.close();
  }
});

it('gives every upstream name a registry name of its own', () => {
  const names = [
    'searchDocs',
    'search_docs',
    'search-docs',
    'search.docs',
    'SearchDocs',
    'search__docs',
    'search_Docs',
    'a/b',
    'a_47_b',
    '',
  ];
  const local = names.map(localNameOf);
  expect(new Set(local).size).toBe(names.length);
  for (const name of local) expect(name).toMatch(/^[a-z0-9][a-z0-9_-]*$/);
  expect(localNameOf('x'.repeat(300))).toMatch(/^h[0-9a-f]{64}$/);
});
