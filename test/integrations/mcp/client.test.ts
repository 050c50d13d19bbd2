// importMcpTools against a real SDK McpServer (and our own server), in memory and over stdio.

import { getEventListeners } from 'node:events';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ToolRegistry,
  circuitBreaker,
  createDispatcher,
  defaultStack,
  type Middleware,
} from '../../../index.js';
import { sdkTimeoutMs } from '../../../integrations/mcp/client.js';
import { createMcpServer, importMcpTools, registryNameOf } from '../../../integrations/mcp/index.js';
import { buildRemoteServer } from './fixtures/remote-server.js';

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((closable) => closable.close().catch(() => {})));
});

async function remote() {
  const { server, log } = buildRemoteServer();
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await server.connect(serverTransport);
  const client = new Client({ name: 'importer', version: '1.0.0' });
  await client.connect(clientTransport);
  opened.push(client, server);
  return { server, log, client };
}

function dispatcherFor(registry: ToolRegistry, extra: Middleware[] = []) {
  const stack = defaultStack({ registry, retry: { random: () => 0, baseDelayMs: 1 } });
  stack.splice(
    stack.findIndex((layer) => layer.name === 'concurrencyLimit'),
    0,
    ...extra,
  );
  return createDispatcher(stack);
}

describe('importMcpTools', () => {
  it('imports camelCase tools under prefixed registry names and keeps the name map', async () => {
    const { client } = await remote();
    const registry = new ToolRegistry();
    const imported = await importMcpTools(client, registry, { prefix: 'remote' });
    expect([...imported.names]).toEqual([
      ['remote.get_weather', 'getWeather'],
      ['remote.sum_tree', 'sumTree'],
      ['remote.charge_card', 'chargeCard'],
      ['remote.slow_tool', 'slowTool'],
      ['remote.crash_process', 'crashProcess'],
      ['remote.remote_log', 'remoteLog'],
    ]);
    expect(registry.get('remote.get_weather')?.description).toBe('The weather in a city.');
    const outcome = await dispatcherFor(registry).dispatch('remote.get_weather', { city: 'Oslo' });
    expect(outcome).toEqual({ ok: true, result: { city: 'Oslo', tempC: 21 }, attempts: 1 });
  });

  it('maps remote names to registry names', () => {
    expect(registryNameOf('getWeather')).toBe('get_weather');
    expect(registryNameOf('HTTPServerStatus')).toBe('http_server_status');
    expect(registryNameOf('files.read-all')).toBe('files.read-all');
    expect(registryNameOf('weird name/with:chars')).toBe('weird_name_with_chars');
    expect(registryNameOf('_private')).toBe('private');
  });

  it('sizes the SDK timeout a little past the deadline, never above 2^31-1 nor below 1 ms', () => {
    expect(sdkTimeoutMs(Infinity, 1_000)).toBe(2 ** 31 - 1);
    expect(sdkTimeoutMs(Date.now() + 10 * 2 ** 31, 0)).toBe(2 ** 31 - 1);
    expect(sdkTimeoutMs(Date.now() - 5_000, 1_000)).toBe(1);
    const timeout = sdkTimeoutMs(Date.now() + 300, 1_000);
    expect(timeout).toBeGreaterThan(1_000);
    expect(timeout).toBeLessThanOrEqual(1_300);
  });

  it('refuses two remote tools that map to one name, naming both', async () => {
    const { server, client } = await remote();
    server.registerTool('get_weather', { inputSchema: {} }, async () => ({ content: [] }));
    await expect(importMcpTools(client, new ToolRegistry())).rejects.toThrow(
      /getWeather.*get_weather|get_weather.*getWeather/,
    );
  });

  it('refuses a name the registry already has from elsewhere', async () => {
    const { client } = await remote();
    const registry = new ToolRegistry().register({
      name: 'get_weather',
      inputSchema: z.object({}),
      handler: () => 1,
    });
    await expect(importMcpTools(client, registry)).rejects.toThrow(
      /"get_weather", which the registry already has/,
    );
  });

  it('re-exports the remote JSON Schema, $refs included, in registry.list()', async () => {
    const { client } = await remote();
    const registry = new ToolRegistry();
    await importMcpTools(client, registry);
    const listing = registry.list().find((tool) => tool.name === 'sum_tree');
    expect(listing?.inputSchema).toMatchObject({
      type: 'object',
      properties: { node: { $ref: '#/definitions/__schema0' } },
      definitions: { __schema0: { type: 'object' } },
    });
  });

  it('validates args locally against the remote schema, $refs included, before any remote call', async () => {
    const { client, log } = await remote();
    const registry = new ToolRegistry();
    await importMcpTools(client, registry);
    const dispatcher = dispatcherFor(registry);
    const bad = await dispatcher.dispatch('sum_tree', {
      node: { value: 1, children: [{ value: 'x', children: [] }] },
    });
    expect(bad).toMatchObject({ ok: false, kind: 'schema', attempts: 0 });
    expect(bad.ok ? '' : bad.message).toMatch(
      /Invalid args for "sum_tree": .*node\.children\[0\]\.value: expected number/,
    );
    const good = await dispatcher.dispatch('sum_tree', {
      node: { value: 1, children: [{ value: 2, children: [] }] },
    });
    expect(good).toMatchObject({ ok: true, result: '3' });
    expect(log.calls['sumTree']).toBe(1);
  });

  it('reports a remote isError as tool_error: not retried, and never opening the breaker', async () => {
    const { client, log } = await remote();
    const registry = new ToolRegistry();
    await importMcpTools(client, registry, { configure: () => ({ idempotent: true }) });
    const breaker = circuitBreaker({ failureThreshold: 2 });
    const dispatcher = dispatcherFor(registry, [breaker]);
    for (let i = 0; i < 3; i++) {
      const outcome = await dispatcher.dispatch('charge_card', { amount: 5 });
      expect(outcome).toMatchObject({ ok: false, kind: 'tool_error', attempts: 1, message: 'card declined' });
    }
    expect(log.calls['chargeCard']).toBe(3);
    expect(breaker.state('charge_card')).toBe('closed');
  });

  it('makes a tool idempotent from the remote hints only when trustAnnotations is on', async () => {
    const { client } = await remote();
    const untrusted = new ToolRegistry();
    await importMcpTools(client, untrusted);
    expect(untrusted.get('get_weather')?.idempotent).toBe(false);
    const trusted = new ToolRegistry();
    await importMcpTools(client, trusted, { trustAnnotations: true });
    expect(trusted.get('get_weather')?.idempotent).toBe(true);
    expect(trusted.get('sum_tree')?.idempotent).toBe(false);
  });

  it('times a slow tool out with our deadline and cancels it remotely', async () => {
    const { client, log } = await remote();
    const registry = new ToolRegistry();
    await importMcpTools(client, registry, {
      configure: (tool) => (tool.name === 'slowTool' ? { timeoutMs: 50 } : undefined),
    });
    const outcome = await dispatcherFor(registry).dispatch('slow_tool', {});
    expect(outcome).toMatchObject({ ok: false, kind: 'timeout', attempts: 1 });
    await expect.poll(() => log.aborts).toEqual([expect.stringMatching(/timed out after 50 ms/)]);
  });

  it('cancels the remote call when the caller aborts', async () => {
    const { client, log } = await remote();
    const registry = new ToolRegistry();
    await importMcpTools(client, registry);
    const controller = new AbortController();
    const progress: unknown[] = [];
    const outcome = dispatcherFor(registry).dispatch(
      'slow_tool',
      {},
      {
        signal: controller.signal,
        onProgress: (update) => {
          progress.push(update);
          controller.abort(new Error('user pressed stop'));
        },
      },
    );
    expect(await outcome).toMatchObject({ ok: false, kind: 'cancelled' });
    expect(progress).toEqual([{ progress: 1, total: 2, message: 'started' }]);
    await expect.poll(() => log.aborts).toEqual([expect.stringContaining('user pressed stop')]);
  });

  it('asks the remote for progress only when the dispatch listens for it', async () => {
    const { client, log } = await remote();
    const registry = new ToolRegistry();
    await importMcpTools(client, registry);
    const dispatcher = dispatcherFor(registry);
    expect(await dispatcher.dispatch('slow_tool', { ms: 1 })).toMatchObject({ ok: true });
    const progress: unknown[] = [];
    const listened = await dispatcher.dispatch(
      'slow_tool',
      { ms: 1 },
      { onProgress: (update) => void progress.push(update) },
    );
    expect(listened).toMatchObject({ ok: true });
    expect(log.progressAsked).toEqual([false, true]);
    expect(progress).toEqual([{ progress: 1, total: 2, message: 'started' }]);
  });

  it('sends no cancellation for a finished call when its caller aborts later, with a deadline or without', async () => {
    const { client } = await remote();
    const sent: string[] = [];
    const transport = client.transport as NonNullable<typeof client.transport>;
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      if ('method' in message) sent.push(message.method);
      return send(message, options);
    };
    const registry = new ToolRegistry();
    await importMcpTools(client, registry, {
      configure: (tool) => (tool.name === 'getWeather' ? { timeoutMs: Infinity } : undefined),
    });
    const dispatcher = dispatcherFor(registry);
    for (const [name, args] of [
      ['slow_tool', { ms: 1 }],
      ['get_weather', { city: 'Oslo' }],
    ] as const) {
      const controller = new AbortController();
      expect(await dispatcher.dispatch(name, args, { signal: controller.signal })).toMatchObject({
        ok: true,
      });
      controller.abort(new Error('too late'));
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(sent.filter((method) => method === 'tools/call')).toHaveLength(2);
    expect(sent).not.toContain('notifications/cancelled');
  });

  it("never sizes the SDK timeout to Infinity, and leaves no listener on the caller's signal", async () => {
    const { client } = await remote();
    const registry = new ToolRegistry();
    await importMcpTools(client, registry, { configure: () => ({ timeoutMs: Infinity }) });
    const dispatcher = dispatcherFor(registry);
    const signal = new AbortController().signal;
    for (let i = 0; i < 12; i++) {
      expect(await dispatcher.dispatch('slow_tool', { ms: 1 }, { signal })).toMatchObject({
        ok: true,
        result: 'done',
      });
    }
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
  });

  it('forwards the idempotency key in _meta', async () => {
    const { client, log } = await remote();
    const registry = new ToolRegistry();
    await importMcpTools(client, registry);
    await dispatcherFor(registry).dispatch('get_weather', { city: 'Rome' }, { idempotencyKey: 'k-1' });
    expect(log.keys).toEqual(['k-1']);
  });

  it('refreshes on list_changed: a tool removed remotely is unregistered, one added is registered', async () => {
    const { server, client } = await remote();
    const registry = new ToolRegistry();
    let changed!: () => void;
    const change = new Promise<void>((resolve) => {
      changed = resolve;
    });
    const imported = await importMcpTools(client, registry, { onChange: () => changed() });
    server.registerTool('newTool', { inputSchema: { a: z.string() } }, async ({ a }) => ({
      content: [{ type: 'text', text: a }],
    }));
    await change;
    expect(imported.names.get('new_tool')).toBe('newTool');
    expect(registry.has('new_tool')).toBe(true);
    imported.dispose();
    expect(registry.list()).toEqual([]);
  });

  it('answers a tool the remote no longer has as not_found and refreshes', async () => {
    const { server, client } = await remote();
    const registry = new ToolRegistry();
    const imported = await importMcpTools(client, registry, { watchListChanged: false });
    const weather = (server as unknown as { _registeredTools: Record<string, { remove(): void }> })
      ._registeredTools['getWeather'];
    weather?.remove();
    const outcome = await dispatcherFor(registry).dispatch('get_weather', { city: 'Oslo' });
    expect(outcome).toMatchObject({ ok: false, kind: 'not_found' });
    expect(outcome.ok ? '' : outcome.message).toMatch(/Unknown tool: .*"getWeather"/);
    await expect.poll(() => imported.names.has('get_weather')).toBe(false);
  });

  it('lists every page of a paginated server', async () => {
    const source = new ToolRegistry();
    for (let i = 0; i < 7; i++)
      source.register({
        name: `tool.n${i}`,
        inputSchema: z.object({ x: z.number() }),
        handler: ({ x }) => ({ x }),
      });
    const server = createMcpServer({
      registry: source,
      dispatcher: dispatcherFor(source),
      info: { name: 'paged', version: '1' },
      pageSize: 3,
    });
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    await server.connect(serverTransport);
    const client = new Client({ name: 'importer', version: '1.0.0' });
    await client.connect(clientTransport);
    opened.push(client, server);
    const registry = new ToolRegistry();
    const imported = await importMcpTools(client, registry, { prefix: 'paged' });
    expect(imported.names.size).toBe(7);
    expect(await dispatcherFor(registry).dispatch('paged.tool.n6', { x: 4 })).toMatchObject({
      ok: true,
      result: { x: 4 },
    });
    expect(registry.list().find((tool) => tool.name === 'paged.tool.n0')?.inputSchema).toMatchObject({
      type: 'object',
      properties: { x: { type: 'number' } },
    });
  });

  it('fails an idempotent call transient when the connection closes, and reconnects for the next one', async () => {
    let connections = 0;
    let firstLog: ReturnType<typeof buildRemoteServer>['log'] | undefined;
    const connect = async () => {
      const { client, log } = await remote();
      connections += 1;
      firstLog ??= log;
      return client;
    };
    const registry = new ToolRegistry();
    const imported = await importMcpTools(await connect(), registry, {
      reconnect: connect,
      configure: () => ({ idempotent: true }),
    });
    const dispatcher = createDispatcher(defaultStack({ registry, retry: { maxAttempts: 1 } }));
    const running = dispatcher.dispatch('slow_tool', {});
    await expect.poll(() => firstLog?.calls['slowTool']).toBe(1);
    await imported.client.close();
    expect(await running).toMatchObject({
      ok: false,
      kind: 'transient',
      message: expect.stringMatching(/connection closed/i),
    });
    expect(await dispatcher.dispatch('get_weather', { city: 'Oslo' })).toMatchObject({ ok: true });
    expect(connections).toBe(2);
  });

  it('fails a non-idempotent call in flight when the connection closes as outcome_unknown (connection_lost)', async () => {
    const { client, log } = await remote();
    const registry = new ToolRegistry();
    await importMcpTools(client, registry);
    const dispatcher = createDispatcher(defaultStack({ registry }));
    const running = dispatcher.dispatch('slow_tool', {});
    await expect.poll(() => log.calls['slowTool']).toBe(1);
    await client.close();
    const outcome = await running;
    expect(outcome).toMatchObject({
      ok: false,
      kind: 'outcome_unknown',
      window: 'connection_lost',
      attempts: 1,
    });
    expect(outcome.ok ? '' : outcome.message).toMatch(/"slowTool" was running, so its outcome is unknown/);
    expect(log.calls['slowTool']).toBe(1);
  });

  it('rejects bad options with a TypeError naming the option', async () => {
    const { client } = await remote();
    await expect(importMcpTools(client, new ToolRegistry(), { prefix: 'Bad Prefix' })).rejects.toThrow(
      /prefix/,
    );
    await expect(importMcpTools(client, new ToolRegistry(), { output: 'raw' as never })).rejects.toThrow(
      /output/,
    );
    await expect(importMcpTools({} as never, new ToolRegistry())).rejects.toThrow(/Client/);
  });
});

describe('importMcpTools over stdio', () => {
  it('fails an idempotent call that crashes the remote process as transient, and serves again after a reconnect', async () => {
    const connect = async () => {
      const client = new Client({ name: 'importer', version: '1.0.0' });
      await client.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: ['--import', 'tsx', fileURLToPath(new URL('./fixtures/remote-server.ts', import.meta.url))],
          stderr: 'ignore',
        }),
      );
      opened.push(client);
      return client;
    };
    const registry = new ToolRegistry();
    await importMcpTools(await connect(), registry, {
      reconnect: connect,
      configure: () => ({ idempotent: true }),
    });
    const dispatcher = createDispatcher(defaultStack({ registry, retry: { maxAttempts: 1 } }));
    expect(await dispatcher.dispatch('crash_process', {})).toMatchObject({ ok: false, kind: 'transient' });
    expect(await dispatcher.dispatch('get_weather', { city: 'Lima' })).toMatchObject({
      ok: true,
      result: { city: 'Lima' },
    });
  });
});
