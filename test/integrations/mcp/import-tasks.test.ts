// MCP Tasks on the importing side: importMcpTools over a v2 Client pinned to 2026-07-28 against
// createMcpServerFactory with a `task: true` tool. The call declares the extension on our own
// JSON-RPC path, polls tasks/get at the server's pollIntervalMs (read again from every answer),
// returns the CallToolResult, and sends tasks/cancel on our timeout or the caller's abort.
import { Client, InMemoryTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolError, ToolRegistry } from '../../../index.js';
import {
  createMcpProxy,
  createMcpServerFactory,
  importMcpTools,
  memoryTaskStore,
  type ImportMcpToolsOptions,
  type McpTaskRecord,
  type McpTaskStore,
} from '../../../integrations/mcp/index.js';
import { listenMcp } from '../../../integrations/mcp/listener.js';
import { flush, type Gate, gate } from '../../helpers/gate.js';

const closing: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(closing.splice(0).map((close) => close().catch(() => {})));
});
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
});

interface Upstream {
  store: McpTaskStore;
  gets: number[];
  creates: number;
  aborts: unknown[];
  release: Gate<void>;
  // Poll intervals the next tasks/get answers name, in order (then the stored one).
  intervals: number[];
  // What the next tasks/get answers report instead of the stored state, when set.
  override?: Partial<McpTaskRecord>;
}

// A store that records when each tasks/get reaches the server and can name another interval.
function watchedStore(upstream: Upstream): McpTaskStore {
  const inner = memoryTaskStore();
  return {
    create: (record) => {
      upstream.creates += 1;
      return inner.create(record);
    },
    get: async (taskId) => {
      upstream.gets.push(Date.now());
      const record = await inner.get(taskId);
      const interval = upstream.intervals.shift();
      if (record === undefined) return record;
      return {
        ...record,
        ...(interval === undefined ? {} : { pollIntervalMs: interval }),
        ...upstream.override,
      };
    },
    settle: (taskId, final: McpTaskRecord) => inner.settle(taskId, final),
  };
}

function upstreamServer(pollIntervalMs = 250): {
  upstream: Upstream;
  factory: ReturnType<typeof createMcpServerFactory>;
} {
  const upstream = {
    gets: [],
    creates: 0,
    aborts: [],
    release: gate(),
    intervals: [],
  } as unknown as Upstream;
  upstream.store = watchedStore(upstream);
  const registry = new ToolRegistry()
    .register({
      name: 'report.build',
      inputSchema: z.object({ month: z.string() }),
      outputSchema: z.object({ month: z.string(), rows: z.number() }),
      task: true,
      timeoutMs: 600_000,
      handler: async (args, ctx) => {
        ctx.signal.addEventListener('abort', () => upstream.aborts.push(ctx.signal.reason));
        await Promise.race([
          upstream.release.promise,
          new Promise((_resolve, reject) =>
            ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)),
          ),
        ]);
        return { month: args.month, rows: 3 };
      },
    })
    .register({
      name: 'report.refused',
      inputSchema: z.object({}),
      task: true,
      handler: () => {
        throw new ToolError('The month is closed');
      },
    });
  const dispatcher = createDispatcher(defaultStack({ registry }));
  const factory = createMcpServerFactory({
    registry,
    dispatcher,
    info: { name: 'reports', version: '1.0.0' },
    tasks: { store: upstream.store, pollIntervalMs, ttlMs: 60_000 },
  });
  return { upstream, factory };
}

async function imported(options: ImportMcpToolsOptions = {}, over: 'memory' | 'http' = 'memory') {
  const { upstream, factory } = upstreamServer(over === 'memory' ? 250 : 20);
  const client = new Client(
    { name: 'agent', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  if (over === 'memory') {
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const served = serveStdio(factory, { transport: serverSide });
    await client.connect(clientSide);
    closing.push(
      () => client.close(),
      () => served.close(),
    );
  } else {
    const listener = await listenMcp(factory, { url: 'http://127.0.0.1:0/mcp' });
    await client.connect(new StreamableHTTPClientTransport(new URL(listener.url)));
    closing.push(
      () => client.close(),
      () => listener.close(),
    );
  }
  const registry = new ToolRegistry();
  await importMcpTools(client, registry, { configure: () => ({ task: true, timeoutMs: 5_000 }), ...options });
  return { upstream, dispatcher: createDispatcher(defaultStack({ registry, retry: { maxAttempts: 1 } })) };
}

// Lets the in-memory hops and the store settle between timer steps.
async function settle(): Promise<void> {
  await vi.advanceTimersByTimeAsync(0);
  await flush(50);
}

describe('importMcpTools against a server answering with task handles', () => {
  it('polls tasks/get at the pollIntervalMs each answer names and returns the completed result', async () => {
    const { upstream, dispatcher } = await imported();
    // The first poll answers with 400 ms, the second with 100 ms: each wait is the last one named.
    upstream.intervals.push(400, 100);
    const started = Date.now();
    const call = dispatcher.dispatch('report.build', { month: '2026-11' });
    await settle();
    expect(upstream.creates).toBe(1);
    expect(upstream.gets).toEqual([]);

    await vi.advanceTimersByTimeAsync(249);
    expect(upstream.gets).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    await settle();
    expect(upstream.gets.map((at) => at - started)).toEqual([250]);

    await vi.advanceTimersByTimeAsync(399);
    expect(upstream.gets).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    await settle();
    expect(upstream.gets.map((at) => at - started)).toEqual([250, 650]);

    upstream.release.open();
    await settle();
    await vi.advanceTimersByTimeAsync(100);
    await settle();
    const outcome = await call;
    expect(upstream.gets.map((at) => at - started)).toEqual([250, 650, 750]);
    expect(outcome).toMatchObject({ ok: true, result: { month: '2026-11', rows: 3 } });
  });

  it('reports a tool error of a completed task as the tool error it is', async () => {
    const { upstream, dispatcher } = await imported();
    const call = dispatcher.dispatch('report.refused', {});
    await settle();
    await vi.advanceTimersByTimeAsync(250);
    await settle();
    const outcome = await call;
    expect(upstream.creates).toBe(1);
    expect(outcome).toMatchObject({ ok: false, kind: 'tool_error' });
    expect(outcome.ok ? '' : outcome.message).toContain('The month is closed');
  });

  it("reports a failed task with the task's JSON-RPC error", async () => {
    const { upstream, dispatcher } = await imported();
    upstream.override = { status: 'failed', error: { code: -32603, message: 'The report store is full' } };
    const call = dispatcher.dispatch('report.build', { month: '2026-09' });
    await settle();
    await vi.advanceTimersByTimeAsync(250);
    await settle();
    const outcome = await call;
    expect(upstream.gets).toHaveLength(1);
    expect(outcome.ok).toBe(false);
    expect(outcome.ok ? '' : outcome.message).toContain('The report store is full');
    upstream.release.open();
  });

  it('sends tasks/cancel when our deadline ends the wait, and the upstream run stops', async () => {
    const { upstream, dispatcher } = await imported();
    const call = dispatcher.dispatch('report.build', { month: '2026-12' });
    await settle();
    expect(upstream.creates).toBe(1);
    await vi.advanceTimersByTimeAsync(5_000);
    await settle();
    expect(await call).toMatchObject({ ok: false, kind: 'timeout' });
    await settle();
    expect(upstream.aborts).toHaveLength(1);
    expect(String(upstream.aborts[0])).toContain('tasks/cancel');
    // Polls stayed within the deadline, at the server's interval.
    expect(upstream.gets.length).toBeGreaterThan(0);
    expect(upstream.gets.length).toBeLessThanOrEqual(20);
  });

  it("sends tasks/cancel when the caller aborts, and the caller's abort is what it reports", async () => {
    const { upstream, dispatcher } = await imported();
    const controller = new AbortController();
    const call = dispatcher.dispatch('report.build', { month: '2027-01' }, { signal: controller.signal });
    await settle();
    await vi.advanceTimersByTimeAsync(300);
    await settle();
    controller.abort(new Error('the user went away'));
    await settle();
    expect(await call).toMatchObject({ ok: false, kind: 'cancelled' });
    await settle();
    expect(upstream.aborts).toHaveLength(1);
  });

  it('declares no Tasks on calls below the threshold: the server answers them synchronously', async () => {
    const { upstream, dispatcher } = await imported({
      configure: () => ({ timeoutMs: 5_000 }),
      taskThresholdMs: 60_000,
    });
    upstream.release.open();
    const outcome = await dispatcher.dispatch('report.build', { month: '2027-02' });
    expect(outcome).toMatchObject({ ok: true, result: { month: '2027-02', rows: 3 } });
    expect(upstream.creates).toBe(0);
  });

  it('rejects a taskThresholdMs that is not a positive number', async () => {
    await expect(imported({ taskThresholdMs: 0 })).rejects.toThrow(/taskThresholdMs/);
  });
});

describe('importMcpTools against task handles over Streamable HTTP', () => {
  beforeEach(() => {
    vi.useRealTimers();
  });

  it('runs the call as a task and returns its result', async () => {
    const { upstream, dispatcher } = await imported({}, 'http');
    const call = dispatcher.dispatch('report.build', { month: '2027-03' });
    await vi.waitFor(() => expect(upstream.gets.length).toBeGreaterThan(0));
    upstream.release.open();
    expect(await call).toMatchObject({ ok: true, result: { month: '2027-03', rows: 3 } });
    expect(upstream.creates).toBe(1);
  });

  it('sends tasks/cancel when the caller aborts', async () => {
    const { upstream, dispatcher } = await imported({}, 'http');
    const controller = new AbortController();
    const call = dispatcher.dispatch('report.build', { month: '2027-04' }, { signal: controller.signal });
    await vi.waitFor(() => expect(upstream.gets.length).toBeGreaterThan(0));
    controller.abort(new Error('the user went away'));
    expect(await call).toMatchObject({ ok: false, kind: 'cancelled' });
    await vi.waitFor(() => expect(upstream.aborts).toHaveLength(1));
    expect(String(upstream.aborts[0])).toContain('tasks/cancel');
  });
});

describe('mcp-proxy in front of a server answering with task handles', () => {
  beforeEach(() => {
    vi.useRealTimers();
  });

  it('runs a tool configured "task" as a task upstream and answers its own client with the result', async () => {
    const { upstream, factory } = upstreamServer(20);
    const listener = await listenMcp(factory, { url: 'http://127.0.0.1:0/mcp' });
    const proxy = await createMcpProxy({
      upstream: { url: listener.url },
      config: { tools: { 'report.build': { task: true } } },
      logLevel: 'silent',
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const served = serveStdio(proxy.serverFactory, { transport: serverSide });
    const client = new Client(
      { name: 'host', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(clientSide);
    closing.push(
      () => client.close(),
      () => served.close(),
      () => proxy.close(),
      () => listener.close(),
    );
    const call = client.callTool({ name: 'report.build', arguments: { month: '2027-05' } });
    await vi.waitFor(() => expect(upstream.gets.length).toBeGreaterThan(0));
    upstream.release.open();
    expect(await call).toMatchObject({ structuredContent: { month: '2027-05', rows: 3 } });
    expect(upstream.creates).toBe(1);
  });
});
