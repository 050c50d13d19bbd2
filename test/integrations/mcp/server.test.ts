// createMcpServer / registerMcpTools against the real SDK Client, in memory and over stdio.

import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ToolError,
  ToolRegistry,
  TransientError,
  createDispatcher,
  defaultStack,
  type DispatchEvent,
  type StandardSchemaV1,
} from '../../../index.js';
import {
  createMcpServer,
  registerMcpTools,
  toCallToolResult,
  toMcpTools,
} from '../../../integrations/mcp/index.js';
import { gate } from '../../helpers/gate.js';

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((closable) => closable.close().catch(() => {})));
});

// A validator that cannot describe itself: the registry lists `{}` for it.
const opaque: StandardSchemaV1<unknown> = {
  '~standard': { version: 1, vendor: 'test', validate: (value) => ({ value }) },
};

function setup(options: { pageSize?: number; names?: Map<string, string> } = {}) {
  const events: DispatchEvent[] = [];
  const seen = { charges: 0, flaky: 0, aborts: [] as unknown[] };
  const running = gate();
  const registry = new ToolRegistry()
    .register({
      name: 'search.web',
      description: 'Searches the web.',
      inputSchema: z.object({ query: z.string().min(1), limit: z.number().int().optional() }),
      idempotent: true,
      handler: ({ query }) => ({ hits: [`${query} result`] }),
    })
    .register({ name: 'list.items', inputSchema: z.object({}), handler: () => [1, 2, 3] })
    .register({
      name: 'pay.charge',
      inputSchema: z.object({ amount: z.number() }),
      handler: ({ amount }) => {
        seen.charges += 1;
        return { charged: amount, n: seen.charges };
      },
    })
    .register({
      name: 'flaky.once',
      inputSchema: z.object({}),
      handler: () => {
        seen.flaky += 1;
        if (seen.flaky === 1) throw new TransientError('backend busy');
        return { ok: true };
      },
    })
    .register({
      name: 'card.decline',
      inputSchema: z.object({}),
      handler: () => {
        throw new ToolError('The card was declined');
      },
    })
    .register({
      name: 'db.explode',
      inputSchema: z.object({}),
      handler: () => {
        throw new Error('database exploded\n    at secret (/srv/db.js:1:1)');
      },
    })
    .register({
      name: 'work.long',
      inputSchema: z.object({}),
      timeoutMs: Infinity,
      handler: (_args, ctx) =>
        new Promise((resolve) => {
          ctx.progress(1, 3, 'started');
          running.open();
          ctx.signal.addEventListener('abort', () => {
            seen.aborts.push(ctx.signal.reason);
            resolve('stopped');
          });
        }),
    })
    .register({
      name: 'shape.union',
      inputSchema: z.discriminatedUnion('kind', [
        z.object({ kind: z.literal('a'), a: z.string() }),
        z.object({ kind: z.literal('b'), b: z.number() }),
      ]),
      handler: (args) => args,
    })
    .register({ name: 'shape.opaque', inputSchema: opaque, handler: () => 'ok' });
  const dispatcher = createDispatcher(
    defaultStack({ registry, retry: { random: () => 0, baseDelayMs: 1 } }),
    {
      onEvent: (event) => events.push(event),
    },
  );
  const server = createMcpServer({
    registry,
    dispatcher,
    info: { name: 'test-server', version: '1.0.0' },
    hints: { 'pay.charge': { title: 'Charge a card', destructiveHint: true, openWorldHint: true } },
    ...(options.pageSize === undefined ? {} : { pageSize: options.pageSize }),
    ...(options.names === undefined ? {} : { names: options.names }),
  });
  return { registry, dispatcher, server, events, seen, running };
}

async function connected(server: Parameters<typeof registerMcpTools>[0]): Promise<Client> {
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await server.connect(serverTransport);
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  await client.connect(clientTransport);
  opened.push(client, server);
  return client;
}

describe('createMcpServer over InMemoryTransport', () => {
  it('lists every tool with a root object schema the client accepts, and idempotentHint from the registry', async () => {
    const { server } = setup();
    const client = await connected(server);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual([
      'search.web',
      'list.items',
      'pay.charge',
      'flaky.once',
      'card.decline',
      'db.explode',
      'work.long',
      'shape.union',
      'shape.opaque',
    ]);
    for (const tool of tools) expect(tool.inputSchema.type).toBe('object');
    const search = tools.find((tool) => tool.name === 'search.web');
    expect(search?.annotations?.idempotentHint).toBe(true);
    expect(search?.inputSchema).not.toHaveProperty('$schema');
    expect(search?.inputSchema.required).toEqual(['query']);
    const charge = tools.find((tool) => tool.name === 'pay.charge');
    expect(charge).toMatchObject({
      title: 'Charge a card',
      annotations: { idempotentHint: false, destructiveHint: true, openWorldHint: true },
    });
  });

  it('pages the list with nextCursor beyond the page size', async () => {
    const { server } = setup({ pageSize: 4 });
    const client = await connected(server);
    const names: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await client.listTools(cursor === undefined ? undefined : { cursor });
      names.push(...page.tools.map((tool) => tool.name));
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor !== undefined);
    expect(pages).toBe(3);
    expect(names).toHaveLength(9);
    await expect(client.listTools({ cursor: 'bm9wZQ' })).rejects.toThrow(/Invalid cursor/);
  });

  it('answers a success with JSON text and structuredContent for a plain object only', async () => {
    const { server } = setup();
    const client = await connected(server);
    expect(await client.callTool({ name: 'search.web', arguments: { query: 'mcp' } })).toEqual({
      content: [{ type: 'text', text: '{"hits":["mcp result"]}' }],
      structuredContent: { hits: ['mcp result'] },
    });
    expect(await client.callTool({ name: 'list.items', arguments: {} })).toEqual({
      content: [{ type: 'text', text: '[1,2,3]' }],
    });
  });

  it('answers invalid args with isError, the model-facing text and the envelope in _meta', async () => {
    const { server } = setup();
    const client = await connected(server);
    const result = await client.callTool({ name: 'search.web', arguments: { query: '', limit: 'x' } });
    expect(result.isError).toBe(true);
    const [block] = result.content as Array<{ type: string; text: string }>;
    expect(block?.text).toMatch(/^error \(schema\): Invalid args for "search\.web": query: .*limit: /);
    expect(result._meta?.['tool-dispatcher/error']).toMatchObject({
      ok: false,
      kind: 'schema',
      attempts: 0,
      jsonrpcCode: -32602,
    });
  });

  it('answers an unknown tool with JSON-RPC -32602 "Unknown tool" and data.kind', async () => {
    const { server } = setup();
    const client = await connected(server);
    const error = await client
      .callTool({ name: 'nope.tool', arguments: {} })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(-32602);
    expect((error as McpError).message).toBe('MCP error -32602: Unknown tool: nope.tool');
    expect((error as McpError).data).toEqual({ kind: 'not_found', attempts: 0 });
  });

  it('retries a transient failure inside the server, so the client sees one success', async () => {
    const { server, seen } = setup();
    const client = await connected(server);
    expect(await client.callTool({ name: 'flaky.once', arguments: {} })).toMatchObject({
      structuredContent: { ok: true },
    });
    expect(seen.flaky).toBe(2);
  });

  it('answers a ToolError with isError kind tool_error and a failure with no stack frame', async () => {
    const { server } = setup();
    const client = await connected(server);
    const declined = await client.callTool({ name: 'card.decline', arguments: {} });
    expect(declined).toMatchObject({
      isError: true,
      _meta: { 'tool-dispatcher/error': { kind: 'tool_error' } },
    });
    expect(JSON.stringify(declined.content)).toContain('The card was declined');
    const exploded = await client.callTool({ name: 'db.explode', arguments: {} });
    expect(exploded).toMatchObject({
      isError: true,
      _meta: { 'tool-dispatcher/error': { kind: 'internal' } },
    });
    expect(JSON.stringify(exploded)).not.toContain('/srv/db.js');
  });

  it('runs the handler once for two calls with the same _meta idempotency key', async () => {
    const { server, seen } = setup();
    const client = await connected(server);
    const call = () =>
      client.callTool({
        name: 'pay.charge',
        arguments: { amount: 5 },
        _meta: { 'tool-dispatcher/idempotencyKey': 'order-1' },
      });
    const [first, second] = await Promise.all([call(), call()]);
    // One run: the same answer, but only one of them ran (the receipt says which).
    expect(first.content).toEqual(second.content);
    const replayed = [first, second].map(
      (result) => (result._meta?.['tool-dispatcher/receipt'] as { replayed: boolean } | undefined)?.replayed,
    );
    expect(replayed.sort()).toEqual([false, true]);
    expect(seen.charges).toBe(1);
    const conflict = await client.callTool({
      name: 'pay.charge',
      arguments: { amount: 6 },
      _meta: { 'tool-dispatcher/idempotencyKey': 'order-1' },
    });
    expect(conflict).toMatchObject({
      isError: true,
      _meta: { 'tool-dispatcher/error': { kind: 'idempotency_conflict' } },
    });
  });

  it('never uses request ids as keys, and refuses a malformed key as a schema error', async () => {
    const { server, seen, events } = setup();
    const client = await connected(server);
    await client.callTool({ name: 'pay.charge', arguments: { amount: 1 } });
    await client.callTool({ name: 'pay.charge', arguments: { amount: 1 } });
    expect(seen.charges).toBe(2);
    expect(events.filter((event) => event.type === 'dispatch.attempt').map((event) => event.callId)).toEqual([
      expect.stringMatching(/^mcp-\d+$/),
      expect.stringMatching(/^mcp-\d+$/),
    ]);
    const refused = await client.callTool({
      name: 'pay.charge',
      arguments: { amount: 1 },
      _meta: { 'tool-dispatcher/idempotencyKey': '' },
    });
    expect(refused).toMatchObject({ isError: true, _meta: { 'tool-dispatcher/error': { kind: 'schema' } } });
    expect(seen.charges).toBe(2);
  });

  it('aborts the running handler when the client cancels, and sends no response', async () => {
    const { server, seen, running, events } = setup();
    const client = await connected(server);
    const controller = new AbortController();
    const call = client.callTool({ name: 'work.long', arguments: {} }, undefined, {
      signal: controller.signal,
    });
    await running.promise;
    controller.abort(new Error('user pressed stop'));
    await expect(call).rejects.toThrow(/user pressed stop/);
    await expect.poll(() => seen.aborts.length).toBe(1);
    await expect
      .poll(() => events.some((event) => event.type === 'dispatch.failure' && event['kind'] === 'cancelled'))
      .toBe(true);
  });

  it('aborts the running handler when the connection closes', async () => {
    const { server, seen, running } = setup();
    const client = await connected(server);
    const call = client.callTool({ name: 'work.long', arguments: {} }).catch((error: unknown) => error);
    await running.promise;
    await client.close();
    expect(await call).toMatchObject({ code: -32000 });
    await expect.poll(() => seen.aborts.length).toBe(1);
  });

  it("sends a handler's progress as notifications/progress when the request has a progressToken", async () => {
    const { server, running } = setup();
    const client = await connected(server);
    const updates: unknown[] = [];
    const controller = new AbortController();
    const call = client
      .callTool({ name: 'work.long', arguments: {} }, undefined, {
        signal: controller.signal,
        onprogress: (update) => updates.push(update),
      })
      .catch(() => {});
    await running.promise;
    await expect.poll(() => updates).toEqual([{ progress: 1, total: 3, message: 'started' }]);
    controller.abort();
    await call;
  });

  it('serves tools under the wire names it is given, and not under their registry names', async () => {
    const { server } = setup({ names: new Map([['search.web', 'webSearch']]) });
    const client = await connected(server);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toContain('webSearch');
    expect(tools.map((tool) => tool.name)).not.toContain('search.web');
    const result = await client.callTool({ name: 'webSearch', arguments: { query: '' } });
    expect((result.content as Array<{ text: string }>)[0]?.text).toContain('Invalid args for "webSearch"');
    await expect(client.callTool({ name: 'search.web', arguments: { query: 'x' } })).rejects.toThrow(
      'Unknown tool: search.web',
    );
  });
});

describe('registerMcpTools', () => {
  it('adds the tools to a low-level Server you already have', async () => {
    const { registry, dispatcher } = setup();
    const server = new Server({ name: 'mine', version: '1.0.0' }, { capabilities: {} });
    registerMcpTools(server, { registry, dispatcher });
    const client = await connected(server);
    expect((await client.listTools()).tools).toHaveLength(9);
    expect(await client.callTool({ name: 'search.web', arguments: { query: 'q' } })).toMatchObject({
      structuredContent: { hits: ['q result'] },
    });
  });

  it('refuses a server that is already connected, and bad options, with a TypeError naming them', async () => {
    const { registry, dispatcher, server } = setup();
    await connected(server);
    expect(() => registerMcpTools(server, { registry, dispatcher })).toThrow(/before server\.connect/);
    const fresh = new Server({ name: 'x', version: '1' }, { capabilities: {} });
    expect(() => registerMcpTools(fresh, { registry, dispatcher, pageSize: 0 })).toThrow(/pageSize/);
    expect(() => registerMcpTools(fresh, { registry: {} as never, dispatcher })).toThrow(/registry/);
    expect(() => createMcpServer({ registry, dispatcher, info: {} as never })).toThrow(/info/);
  });
});

describe('toMcpTools and toCallToolResult', () => {
  it('gives each tool a root object schema, even for a union and an opaque validator', () => {
    const { registry } = setup();
    const tools = toMcpTools({ registry });
    expect(tools.find((tool) => tool.name === 'shape.opaque')?.inputSchema).toEqual({
      type: 'object',
      properties: {},
    });
    expect(tools.find((tool) => tool.name === 'shape.union')?.inputSchema.type).toBe('object');
  });

  it("serves hints.annotations as they are, their idempotentHint over the registry's", () => {
    const { registry } = setup();
    const tools = toMcpTools({
      registry,
      hints: {
        'search.web': { annotations: { title: 'Web search', idempotentHint: false }, readOnlyHint: true },
        'list.items': { annotations: {} },
      },
    });
    expect(tools.find((tool) => tool.name === 'search.web')?.annotations).toEqual({
      title: 'Web search',
      idempotentHint: false,
      readOnlyHint: true,
    });
    expect(tools.find((tool) => tool.name === 'list.items')?.annotations).toBeUndefined();
    expect(tools.find((tool) => tool.name === 'pay.charge')?.annotations).toEqual({ idempotentHint: false });
  });

  it('turns an outcome into a CallToolResult', async () => {
    const { dispatcher } = setup();
    expect(toCallToolResult(await dispatcher.dispatch('search.web', { query: 'a' }))).toEqual({
      content: [{ type: 'text', text: '{"hits":["a result"]}' }],
      structuredContent: { hits: ['a result'] },
    });
    const missing = toCallToolResult(await dispatcher.dispatch('ghost', {}));
    expect(missing).toMatchObject({
      isError: true,
      _meta: { 'tool-dispatcher/error': { kind: 'not_found' } },
    });
  });
});

describe('createMcpServer over stdio', () => {
  it('serves a child process registry with nothing but protocol on stdout', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', fileURLToPath(new URL('./fixtures/registry-server.ts', import.meta.url))],
      stderr: 'pipe',
    });
    let logged = '';
    transport.stderr?.on('data', (chunk: Buffer) => {
      logged += chunk.toString();
    });
    const client = new Client({ name: 'stdio-test', version: '1.0.0' });
    const protocolErrors: Error[] = [];
    client.onerror = (error) => protocolErrors.push(error);
    await client.connect(transport);
    opened.push(client);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['echo.say']);
    expect(await client.callTool({ name: 'echo.say', arguments: { text: 'hi' } })).toMatchObject({
      structuredContent: { said: 'hi' },
    });
    const controller = new AbortController();
    const slow = client.callTool(
      { name: 'echo.say', arguments: { text: 'slow', waitMs: 60_000 } },
      undefined,
      {
        signal: controller.signal,
      },
    );
    await expect.poll(() => logged.split('dispatch.attempt').length - 1).toBe(2);
    controller.abort(new Error('stop please'));
    await expect(slow).rejects.toThrow(/stop please/);
    await expect.poll(() => logged).toContain('"kind":"cancelled"');
    expect(protocolErrors).toEqual([]);
  });
});
