// One trace across the proxy hop, with no OpenTelemetry provider: `traceparent`, `tracestate` and
// `baggage` in a call's `_meta` reach the upstream unchanged; a traceparent that fails the W3C
// syntax is dropped (and its tracestate with it).
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import { Server } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createMcpProxy, type McpProxy } from '../../../integrations/mcp/index.js';
import { listenMcp, type McpListener } from '../../../integrations/mcp/listener.js';

const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const tracestate = 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE';
const baggage = 'userId=alice,serverNode=DF%2028';

let upstream: McpListener;
let proxy: McpProxy;
const clients: Client[] = [];

// An upstream that answers every call with the `_meta` it received.
function echoServer(): Server {
  const server = new Server({ name: 'echo-meta', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler('tools/list', () => ({
    tools: [{ name: 'whoami', inputSchema: { type: 'object' } }],
  }));
  server.setRequestHandler('tools/call', (request) => {
    const { traceparent: parent, tracestate: state, baggage: bag } = request.params._meta ?? {};
    const seen = { traceparent: parent ?? null, tracestate: state ?? null, baggage: bag ?? null };
    return { content: [{ type: 'text', text: JSON.stringify(seen) }], structuredContent: seen };
  });
  return server;
}

async function clientOfProxy(options?: ConstructorParameters<typeof Client>[1]): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  serveStdio(proxy.serverFactory, { transport: serverSide });
  const client = new Client({ name: 'host', version: '1.0.0' }, options);
  await client.connect(clientSide);
  clients.push(client);
  return client;
}

beforeAll(async () => {
  upstream = await listenMcp(() => echoServer(), { url: 'http://127.0.0.1:0/mcp' });
  proxy = await createMcpProxy({ upstream: { url: upstream.url }, logLevel: 'silent' });
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => {})));
  await proxy.close();
  await upstream.close();
});

it.each([
  ['legacy', undefined],
  ['modern', { versionNegotiation: { mode: { pin: '2026-07-28' as const } } }],
] as const)('passes the trace keys through to the upstream unchanged (%s client)', async (_era, options) => {
  const client = await clientOfProxy(options);
  const result = await client.callTool({
    name: 'whoami',
    arguments: {},
    _meta: { traceparent, tracestate, baggage },
  });
  expect(result.structuredContent).toEqual({ traceparent, tracestate, baggage });
});

it('drops a traceparent that fails the W3C syntax, and its tracestate', async () => {
  const client = await clientOfProxy();
  for (const bad of [
    'garbage',
    `ff-${traceparent.slice(3)}`,
    '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
  ]) {
    const result = await client.callTool({
      name: 'whoami',
      arguments: {},
      _meta: { traceparent: bad, tracestate, baggage },
    });
    expect(result.structuredContent).toEqual({ traceparent: null, tracestate: null, baggage });
  }
});

it('sends no trace keys upstream when the call has none', async () => {
  const client = await clientOfProxy();
  const result = await client.callTool({ name: 'whoami', arguments: {} });
  expect(result.structuredContent).toEqual({ traceparent: null, tracestate: null, baggage: null });
});
