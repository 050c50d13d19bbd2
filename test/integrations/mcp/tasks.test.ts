// MCP Tasks (2026-07-28, io.modelcontextprotocol/tasks) served by createMcpServerFactory, by raw
// JSON-RPC over Streamable HTTP: the handle stored before it returns, re-issue by key, tasks/get
// and tasks/cancel, and the synchronous answer for clients that do not declare the extension.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolError, ToolRegistry } from '../../../index.js';
import { createMcpServerFactory, memoryTaskStore } from '../../../integrations/mcp/index.js';
import { listenMcp, type McpListener } from '../../../integrations/mcp/listener.js';
import { McpTasks } from '../../../integrations/mcp/tasks.js';
import { type Gate, gate } from '../../helpers/gate.js';
import { type RpcAnswer, rpc as rawRpc } from '../../helpers/mcp-rpc.js';

let listener: McpListener;
const runs = { report: 0, aborts: [] as unknown[], slowAborts: [] as unknown[] };
let release: Gate<void>;

// One raw request to this file's listener, declaring the Tasks extension unless told otherwise.
const rpc = (method: string, params: Record<string, unknown>, capabilities?: object): Promise<RpcAnswer> =>
  rawRpc(listener.url, method, params, capabilities);

async function pollUntil(taskId: string, status: string): Promise<Record<string, unknown>> {
  for (let polls = 0; polls < 200; polls++) {
    const answer = await rpc('tasks/get', { taskId });
    if (answer.result?.['status'] === status) return answer.result;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`task ${taskId} never became ${status}`);
}

beforeAll(async () => {
  release = gate();
  const registry = new ToolRegistry()
    .register({
      name: 'report.build',
      inputSchema: z.object({ month: z.string() }),
      task: true,
      handler: async (args, ctx) => {
        runs.report += 1;
        ctx.signal.addEventListener('abort', () => runs.aborts.push(ctx.signal.reason));
        await release.promise;
        return { month: args.month, rows: 3 };
      },
    })
    .register({
      name: 'report.slow',
      inputSchema: z.object({}),
      timeoutMs: 120_000,
      handler: (_args, ctx) =>
        new Promise((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => {
            runs.slowAborts.push(ctx.signal.reason);
            reject(ctx.signal.reason);
          });
        }),
    })
    .register({
      name: 'report.refused',
      inputSchema: z.object({}),
      task: true,
      handler: () => {
        throw new ToolError('The month is closed');
      },
    })
    .register({ name: 'echo', inputSchema: z.object({ text: z.string() }), handler: (args) => args.text });
  const dispatcher = createDispatcher(defaultStack({ registry }));
  const factory = createMcpServerFactory({
    registry,
    dispatcher,
    info: { name: 'reports', version: '1.0.0' },
    tasks: { store: memoryTaskStore(), pollIntervalMs: 250, ttlMs: 60_000 },
  });
  listener = await listenMcp(factory, { url: 'http://127.0.0.1:0/mcp' });
});

afterAll(async () => {
  release.open();
  await listener.close();
});

describe('MCP Tasks', () => {
  it('answers a task tool with a stored handle, reports working, then completed with the result', async () => {
    const created = await rpc('tools/call', {
      name: 'report.build',
      arguments: { month: '2026-11' },
      _meta: { 'tool-dispatcher/idempotencyKey': 'nov-report' },
    });
    expect(created.result).toMatchObject({
      resultType: 'task',
      status: 'working',
      pollIntervalMs: 250,
      ttlMs: 60_000,
    });
    const taskId = created.result?.['taskId'] as string;
    expect(await rpc('tasks/get', { taskId })).toMatchObject({
      result: { status: 'working', resultType: 'complete' },
    });

    const again = await rpc('tools/call', {
      name: 'report.build',
      arguments: { month: '2026-11' },
      _meta: { 'tool-dispatcher/idempotencyKey': 'nov-report' },
    });
    expect(again.result?.['taskId']).toBe(taskId);

    release.open();
    const done = await pollUntil(taskId, 'completed');
    expect(done['result']).toMatchObject({ structuredContent: { month: '2026-11', rows: 3 } });
    expect(runs.report).toBe(1);
  });

  it('answers clients that do not declare the extension with the result itself', async () => {
    const plain = await rpc('tools/call', { name: 'report.build', arguments: { month: '2026-10' } }, {});
    expect(plain.result).toMatchObject({ structuredContent: { month: '2026-10', rows: 3 } });
    expect(plain.result?.['resultType']).not.toBe('task');

    const client = new Client({ name: 'legacy', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(listener.url)));
    try {
      const result = await client.callTool({ name: 'report.build', arguments: { month: '2026-09' } });
      expect(result.structuredContent).toEqual({ month: '2026-09', rows: 3 });
    } finally {
      await client.close();
    }
  });

  it('makes a task of a tool whose timeout passes the threshold, and cancels it', async () => {
    const created = await rpc('tools/call', { name: 'report.slow', arguments: {} });
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working' });
    const taskId = created.result?.['taskId'] as string;
    expect(await rpc('tasks/cancel', { taskId })).toMatchObject({ result: { resultType: 'complete' } });
    expect(await rpc('tasks/get', { taskId })).toMatchObject({ result: { status: 'cancelled' } });
    // The handler's signal aborted, as `notifications/cancelled` would have it.
    await expect.poll(() => runs.slowAborts.length).toBe(1);
    expect(String(runs.slowAborts[0])).toMatch(/cancelled/);
  });

  it('completes a task whose tool reports an error, with isError and the envelope', async () => {
    const created = await rpc('tools/call', { name: 'report.refused', arguments: {} });
    const done = await pollUntil(created.result?.['taskId'] as string, 'completed');
    expect(done['result']).toMatchObject({
      isError: true,
      _meta: { 'tool-dispatcher/error': { kind: 'tool_error', message: 'The month is closed' } },
    });
  });

  it('answers -32602 for an unknown task and -32021 without the client capability', async () => {
    expect((await rpc('tasks/get', { taskId: 'task-nope' })).error?.code).toBe(-32602);
    expect((await rpc('tasks/cancel', { taskId: 'task-nope' })).error?.code).toBe(-32602);
    expect((await rpc('tasks/get', { taskId: 'task-nope' }, {})).error?.code).toBe(-32021);
  });

  it('answers a plain tool synchronously, even for a client that declares Tasks', async () => {
    const answer = await rpc('tools/call', { name: 'echo', arguments: { text: 'hi' } });
    expect(answer.result).toMatchObject({ content: [{ type: 'text', text: 'hi' }] });
    expect(answer.result?.['resultType']).not.toBe('task');
  });

  it('makes a task of a tool whose idle timeout may run past the threshold', () => {
    const tasks = new McpTasks({ thresholdMs: 60_000 });
    const client = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
    const idle = (totalMs: number) => ({ timeoutMs: undefined, timeout: { totalMs } });
    expect(tasks.wants(idle(120_000), client)).toBe(true);
    expect(tasks.wants(idle(30_000), client)).toBe(false);
  });

  it('refuses a threshold that is not a positive integer with a TypeError', () => {
    const registry = new ToolRegistry();
    const dispatcher = createDispatcher(defaultStack({ registry }));
    const info = { name: 'x', version: '1' };
    expect(() => createMcpServerFactory({ registry, dispatcher, info, tasks: { thresholdMs: 0 } })).toThrow(
      /tasks\.thresholdMs must be a positive integer/,
    );
  });
});
