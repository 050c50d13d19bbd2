// Regression (issue 19, item 2): the proxy served every tool with `idempotentHint` from its own
// registry (false unless configured), although the upstream said `idempotentHint: true`, and
// dropped a title given as `annotations.title` (as the SDK's McpServer writes it).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createMcpProxy, type McpProxy } from '../../integrations/mcp/proxy.js';
import { serveHttp, type HttpUpstream } from '../integrations/mcp/fixtures/http-upstream.js';
import { buildOddServer } from '../integrations/mcp/fixtures/odd-upstream.js';

let upstream: HttpUpstream;
let proxy: McpProxy;
let client: Client;

beforeAll(async () => {
  upstream = await serveHttp(() => buildOddServer());
  proxy = await createMcpProxy({
    upstream: { url: upstream.url },
    config: { tools: { echo: { idempotent: false } } },
    logLevel: 'silent',
  });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await proxy.server.connect(serverTransport);
  client = new Client({ name: 'host', version: '1.0.0' });
  await client.connect(clientTransport);
});

afterAll(async () => {
  await client.close();
  await proxy.close();
  await upstream.close();
});

it("serves the upstream's title, annotations and output schema as they are", async () => {
  const direct = new Client({ name: 'direct', version: '1.0.0' });
  await direct.connect(new StreamableHTTPClientTransport(new URL(upstream.url)));
  const own = (await direct.listTools()).tools.find((tool) => tool.name === 'get-sum');
  await direct.close();

  const served = (await client.listTools()).tools.find((tool) => tool.name === 'get-sum');
  expect(own?.annotations).toEqual({
    title: 'Add two numbers',
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  });
  expect(served?.annotations).toEqual(own?.annotations);
  expect(served?.title).toBe(own?.title);
  expect(served?.outputSchema).toEqual(own?.outputSchema);
});

it('serves an idempotent setting of its own config as the hint, since it retries by it', async () => {
  const echo = (await client.listTools()).tools.find((tool) => tool.name === 'echo');
  expect(echo?.title).toBe('Echo');
  expect(echo?.annotations).toEqual({ readOnlyHint: true, idempotentHint: false });
});
