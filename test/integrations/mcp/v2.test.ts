// The v2 MCP packages: a v2 Client on the 2025 era (`legacy`) and pinned to 2026-07-28 against
// createMcpServerFactory (served by the SDK's own era selection), importMcpTools over a v2 Client,
// registerMcpTools on a v2 Server, the proxy's factory re-serving an upstream's hints on both
// revisions, and the `protocol` kind for a remote's protocol-level refusal.
import { Client, InMemoryTransport, ProtocolError } from '@modelcontextprotocol/client';
import { Server } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { circuitBreaker, createDispatcher, defaultStack, ToolRegistry } from '../../../index.js';
import {
  createMcpProxy,
  createMcpServer,
  createMcpServerFactory,
  importMcpTools,
  registerMcpTools,
} from '../../../integrations/mcp/index.js';
import { eras, inMemoryClients } from '../../helpers/mcp-clients.js';
import { serveHttp } from './fixtures/http-upstream.js';
import { buildOddServer } from './fixtures/odd-upstream.js';

const { closing, clientOf } = inMemoryClients();

function billing() {
  const seen = { keys: [] as unknown[] };
  const registry = new ToolRegistry()
    .register({
      name: 'pay.charge',
      description: 'Charges a card',
      inputSchema: z.object({ cents: z.number() }),
      handler: (args, ctx) => {
        seen.keys.push(ctx.idempotencyKey);
        return { charged: args.cents };
      },
    })
    .register({
      name: 'search.web',
      inputSchema: z.object({ query: z.string() }),
      idempotent: true,
      handler: (args) => `results for ${args.query}`,
    });
  const dispatcher = createDispatcher(defaultStack({ registry }));
  return { registry, dispatcher, seen, info: { name: 'billing', version: '2.0.0' } };
}

describe.each(eras)('a v2 Client on the %s era against createMcpServerFactory', (era, options) => {
  it('lists the tools and runs a keyed call through the dispatcher', async () => {
    const { seen, ...server } = billing();
    const client = await clientOf(createMcpServerFactory(server), options);
    expect(client.getProtocolEra()).toBe(era);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => [tool.name, tool.annotations?.idempotentHint])).toEqual([
      ['pay.charge', false],
      ['search.web', true],
    ]);
    const result = await client.callTool({
      name: 'pay.charge',
      arguments: { cents: 250 },
      _meta: { 'tool-dispatcher/idempotencyKey': 'order-42' },
    });
    expect(result.structuredContent).toEqual({ charged: 250 });
    expect(seen.keys).toEqual(['order-42']);
  });

  it('answers an unknown tool with -32602 and a failing call with the envelope', async () => {
    const { seen: _seen, ...server } = billing();
    const client = await clientOf(createMcpServerFactory(server), options);
    const unknown = await client.callTool({ name: 'nope', arguments: {} }).catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(ProtocolError);
    expect(unknown).toMatchObject({ code: -32602, message: expect.stringMatching(/Unknown tool: nope/) });
    const bad = await client.callTool({ name: 'pay.charge', arguments: { cents: 'x' } });
    expect(bad.isError).toBe(true);
    expect(bad._meta?.['tool-dispatcher/error']).toMatchObject({ kind: 'schema', attempts: 0 });
  });

  it('imports the served tools with importMcpTools, forwarding the key', async () => {
    const { seen, ...server } = billing();
    const client = await clientOf(createMcpServerFactory(server), options);
    const registry = new ToolRegistry();
    const imported = await importMcpTools(client, registry, { prefix: 'remote' });
    expect([...imported.names.keys()]).toEqual(['remote.pay.charge', 'remote.search.web']);
    const outcome = await createDispatcher(defaultStack({ registry })).dispatch(
      'remote.pay.charge',
      { cents: 7 },
      { idempotencyKey: 'k-7' },
    );
    expect(outcome).toMatchObject({ ok: true, result: { charged: 7 } });
    expect(seen.keys).toEqual(['k-7']);
  });
});

describe('v2 objects without the era selection', () => {
  it('connects createMcpServer to one v2 transport for a 2025-era client', async () => {
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const { seen: _seen, ...options } = billing();
    const server = createMcpServer(options);
    await server.connect(serverSide);
    const client = new Client({ name: 'host', version: '1.0.0' });
    await client.connect(clientSide);
    closing.push(
      () => client.close(),
      () => server.close(),
    );
    expect(client.getProtocolEra()).toBe('legacy');
    expect(await client.callTool({ name: 'search.web', arguments: { query: 'mcp' } })).toMatchObject({
      content: [{ type: 'text', text: 'results for mcp' }],
    });
  });

  it('registers the tools on a v2 low-level Server you already have', async () => {
    const server = new Server({ name: 'own', version: '1.0.0' }, { capabilities: {} });
    const { seen: _seen, info: _info, ...options } = billing();
    registerMcpTools(server, options);
    const client = await clientOf(() => server, eras[1][1]);
    expect((await client.listTools()).tools).toHaveLength(2);
  });
});

describe('the proxy on the v2 packages', () => {
  it.each(eras)(
    "re-serves the upstream's title, annotations and output schema unchanged (%s)",
    async (_era, options) => {
      const upstream = await serveHttp(() => buildOddServer());
      const proxy = await createMcpProxy({ upstream: { url: upstream.url }, logLevel: 'silent' });
      closing.push(
        () => proxy.close(),
        () => upstream.close(),
      );
      const client = await clientOf(proxy.serverFactory, options);
      const own = (await proxy.imported.client.listTools()).tools.find((tool) => tool.name === 'get-sum');
      const served = (await client.listTools()).tools.find((tool) => tool.name === 'get-sum');
      expect(own?.annotations?.idempotentHint).toBe(true);
      expect(served?.annotations).toEqual(own?.annotations);
      expect(served?.title).toBe(own?.title);
      expect(served?.outputSchema).toEqual(own?.outputSchema);
      const sum = await client.callTool({ name: 'get-sum', arguments: { a: 2, b: 3 } });
      expect(sum.structuredContent).toEqual({ sum: 5 });
    },
  );
});

describe('the protocol kind', () => {
  it.each([-32020, -32021, -32022])(
    'fails a call the remote refuses with %i as protocol: attempts 1, never retried, never a breaker failure',
    async (code) => {
      const remote = new Server({ name: 'strict', version: '1.0.0' }, { capabilities: { tools: {} } });
      let calls = 0;
      remote.setRequestHandler('tools/list', () => ({
        tools: [{ name: 'sync', inputSchema: { type: 'object' }, annotations: { idempotentHint: true } }],
      }));
      remote.setRequestHandler('tools/call', () => {
        calls += 1;
        throw new ProtocolError(code, 'refused by the server');
      });
      const client = await clientOf(() => remote, eras[1][1]);
      const registry = new ToolRegistry();
      await importMcpTools(client, registry, { trustAnnotations: true });
      const dispatcher = createDispatcher(
        defaultStack({
          registry,
          breaker: circuitBreaker({ failureThreshold: 1 }),
          retry: { random: () => 0 },
        }),
      );
      const first = await dispatcher.dispatch('sync', {});
      expect(first).toMatchObject({ ok: false, kind: 'protocol', attempts: 1 });
      expect(first.ok ? '' : first.message).toContain(`(${code})`);
      const second = await dispatcher.dispatch('sync', {});
      expect(second).toMatchObject({ ok: false, kind: 'protocol' });
      // The SDK client itself re-lists and sends once more after a header mismatch; we never do.
      expect(calls).toBe(code === -32020 ? 4 : 2);
    },
  );
});
