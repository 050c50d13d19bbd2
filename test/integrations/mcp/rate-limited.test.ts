// MCP's rate-limit error (SEP-3304, `-32023`): our `rate_limited` answered as `-32023` with
// `data.retryAfterMs` to a 2026-07-28 client and as the `isError` envelope to a 2025-era one, by
// createMcpServerFactory and by the proxy; a remote `-32023` imported as `rate_limited` with its wait.
import { type Client, ProtocolError } from '@modelcontextprotocol/client';
import { Server as V1Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { Server } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolError, ToolRegistry } from '../../../index.js';
import { createMcpProxy, createMcpServerFactory, importMcpTools } from '../../../integrations/mcp/index.js';
import { eras, inMemoryClients } from '../../helpers/mcp-clients.js';
import { serveHttp } from './fixtures/http-upstream.js';

const { closing, clientOf } = inMemoryClients();

// A clock that never moves: the refused call's wait is the whole interval, exactly.
const stoppedClock = { now: () => 1_000_000, setTimeout, clearTimeout };

// One call a minute: the second is refused at once with `rate_limited` and a 60 s wait.
function limitedServer() {
  const registry = new ToolRegistry().register({
    name: 'search.web',
    inputSchema: z.object({ query: z.string() }),
    handler: (args) => `results for ${args.query}`,
  });
  const dispatcher = createDispatcher(
    defaultStack({
      registry,
      rateLimit: { rate: 1, intervalMs: 60_000, maxWaitMs: 0, clock: stoppedClock },
    }),
  );
  return createMcpServerFactory({ registry, dispatcher, info: { name: 'limited', version: '1.0.0' } });
}

describe.each(eras)('our rate_limited to a %s client', (era, options) => {
  it(era === 'modern' ? 'is the -32023 error with retryAfterMs' : 'is the isError envelope', async () => {
    const client = await clientOf(limitedServer(), options);
    const first = await client.callTool({ name: 'search.web', arguments: { query: 'mcp' } });
    expect(first.isError).not.toBe(true);
    const second = await client
      .callTool({ name: 'search.web', arguments: { query: 'mcp' } })
      .catch((error: unknown) => error);
    if (era === 'modern') {
      expect(second).toBeInstanceOf(ProtocolError);
      expect(second).toMatchObject({
        code: -32023,
        message: expect.stringContaining('"search.web" is rate limited'),
        data: { retryAfterMs: 60_000, kind: 'rate_limited', attempts: 0 },
      });
    } else {
      expect(second).toMatchObject({
        isError: true,
        _meta: { 'tool-dispatcher/error': { kind: 'rate_limited', retryAfterMs: 60_000 } },
      });
    }
  });
});

describe('a remote -32023', () => {
  it('is rate_limited with the wait the remote sent, not retried', async () => {
    const remote = new Server({ name: 'busy', version: '1.0.0' }, { capabilities: { tools: {} } });
    let calls = 0;
    remote.setRequestHandler('tools/list', () => ({
      tools: [{ name: 'lookup', inputSchema: { type: 'object' }, annotations: { idempotentHint: true } }],
    }));
    remote.setRequestHandler('tools/call', () => {
      calls += 1;
      throw new ProtocolError(-32023, 'Too many requests', { retryAfterMs: 2_500 });
    });
    const client = await clientOf(() => remote, eras[1][1]);
    const registry = new ToolRegistry();
    await importMcpTools(client, registry, { trustAnnotations: true });
    const dispatcher = createDispatcher(defaultStack({ registry, retry: { random: () => 0 } }));
    const outcome = await dispatcher.dispatch('lookup', {});
    expect(outcome).toMatchObject({ ok: false, kind: 'rate_limited', attempts: 1, retryAfterMs: 2_500 });
    expect(outcome.ok ? '' : outcome.message).toContain('Too many requests');
    expect(calls).toBe(1);
  });

  it.each(eras)('reaches a %s client of the proxy as our rate_limited', async (era, options) => {
    // A 2025-era upstream on the v1 SDK, refusing with McpError as a v1 server does.
    const upstream = await serveHttp(() => {
      const server = new V1Server({ name: 'busy', version: '1.0.0' }, { capabilities: { tools: {} } });
      server.setRequestHandler(ListToolsRequestSchema, () => ({
        tools: [{ name: 'lookup', inputSchema: { type: 'object' as const } }],
      }));
      server.setRequestHandler(CallToolRequestSchema, () => {
        throw new McpError(-32023, 'Too many requests', { retryAfterMs: 1_500 });
      });
      return server;
    });
    const proxy = await createMcpProxy({ upstream: { url: upstream.url }, logLevel: 'silent' });
    closing.push(
      () => proxy.close(),
      () => upstream.close(),
    );
    const client: Client = await clientOf(proxy.serverFactory, options);
    const answer = await client
      .callTool({ name: 'lookup', arguments: { id: 'a' } })
      .catch((error: unknown) => error);
    if (era === 'modern') {
      expect(answer).toMatchObject({ code: -32023, data: { retryAfterMs: 1_500, kind: 'rate_limited' } });
    } else {
      expect(answer).toMatchObject({
        isError: true,
        _meta: { 'tool-dispatcher/error': { kind: 'rate_limited', retryAfterMs: 1_500 } },
      });
    }
  });
});

describe("ToolError's rate_limited", () => {
  it('carries its wait into the envelope and refuses a wait below 0', async () => {
    const registry = new ToolRegistry().register({
      name: 'front',
      inputSchema: z.object({}),
      handler: () => {
        throw new ToolError('the backend asks us to wait', { kind: 'rate_limited', retryAfterMs: 750 });
      },
    });
    const outcome = await createDispatcher(defaultStack({ registry })).dispatch('front', {});
    expect(outcome).toMatchObject({ ok: false, kind: 'rate_limited', attempts: 1, retryAfterMs: 750 });
    expect(() => new ToolError('x', { kind: 'rate_limited', retryAfterMs: -1 })).toThrow(TypeError);
  });
});
