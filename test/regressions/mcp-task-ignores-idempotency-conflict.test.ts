// An MCP Task ignored an idempotency conflict: the task id comes from the tool and the key only,
// so the same key with other args got the first call's task (and its result). It is refused as
// `idempotency_conflict`, as a synchronous call is, and the first task stands.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../../index.js';
import {
  createMcpServerFactory,
  errorMetaKey,
  idempotencyKeyMetaKey,
  listenMcp,
  type McpListener,
} from '../../integrations/mcp/index.js';
import { rpc } from '../helpers/mcp-rpc.js';

let listener: McpListener;
let builds = 0;

beforeAll(async () => {
  const registry = new ToolRegistry().register({
    name: 'report.build',
    inputSchema: z.object({ month: z.string(), rows: z.number().optional() }),
    task: true,
    handler: ({ month }) => {
      builds += 1;
      return { month };
    },
  });
  const dispatcher = createDispatcher(defaultStack({ registry }));
  const factory = createMcpServerFactory({
    registry,
    dispatcher,
    info: { name: 'reports', version: '1.0.0' },
    tasks: {},
  });
  listener = await listenMcp(factory, { url: 'http://127.0.0.1:0/mcp' });
});

afterAll(async () => {
  await listener.close();
});

const call = (args: Record<string, unknown>) =>
  rpc(listener.url, 'tools/call', {
    name: 'report.build',
    arguments: args,
    _meta: { [idempotencyKeyMetaKey]: 'report-nov' },
  });

describe('MCP Tasks and idempotency keys', () => {
  it('refuses the same key with other args as idempotency_conflict, not the first task', async () => {
    const first = await call({ month: '2026-11', rows: 3 });
    expect(first.result).toMatchObject({ resultType: 'task' });
    // The same args in another key order are the same call.
    expect((await call({ rows: 3, month: '2026-11' })).result?.['taskId']).toBe(first.result?.['taskId']);

    const other = await call({ month: '2026-12' });
    expect(other.result?.['resultType']).not.toBe('task');
    expect(other.result).toMatchObject({
      isError: true,
      _meta: { [errorMetaKey]: { kind: 'idempotency_conflict' } },
    });
    await expect.poll(() => builds).toBe(1);
  });
});
