// A gated tool served as an MCP Task could never run: the task run dropped the caller's approval
// token (and ran under a key of its own, to which a keyless pause's token was then bound), so
// every resume paused again with a new token. The run carries the token and the caller's key;
// a keyed resume is a task of its own, and a keyless one resumes by the token alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { approvalGate, createDispatcher, defaultStack, ToolRegistry } from '../../index.js';
import {
  approvalMetaKey,
  createMcpServerFactory,
  errorMetaKey,
  idempotencyKeyMetaKey,
  listenMcp,
  type McpListener,
} from '../../integrations/mcp/index.js';
import { rpc } from '../helpers/mcp-rpc.js';

let listener: McpListener;
let refunds = 0;
const gate = approvalGate();

beforeAll(async () => {
  const registry = new ToolRegistry().register({
    name: 'payments.refund',
    inputSchema: z.object({ cents: z.number().int() }),
    task: true,
    requiresApproval: true,
    handler: ({ cents }) => {
      refunds += 1;
      return { refunded: cents };
    },
  });
  const dispatcher = createDispatcher(defaultStack({ registry, approval: gate }));
  const factory = createMcpServerFactory({
    registry,
    dispatcher,
    info: { name: 'billing', version: '1.0.0' },
    tasks: { pollIntervalMs: 50 },
  });
  listener = await listenMcp(factory, { url: 'http://127.0.0.1:0/mcp' });
});

afterAll(async () => {
  await listener.close();
});

// Calls the refund as a task and polls it to its end; resolves to the task id and its result.
async function refundTask(
  meta: Record<string, unknown>,
): Promise<{ taskId: string; result: Record<string, unknown> }> {
  const created = await rpc(listener.url, 'tools/call', {
    name: 'payments.refund',
    arguments: { cents: 500 },
    _meta: meta,
  });
  expect(created.result).toMatchObject({ resultType: 'task' });
  const taskId = created.result?.['taskId'] as string;
  for (let polls = 0; polls < 400; polls++) {
    const task = (await rpc(listener.url, 'tasks/get', { taskId })).result;
    if (task?.['status'] === 'completed')
      return { taskId, result: task['result'] as Record<string, unknown> };
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`task ${taskId} never completed`);
}

function tokenOf(result: Record<string, unknown>): string {
  const meta = result['_meta'] as Record<string, { kind?: string; token?: string }>;
  expect(meta[errorMetaKey]?.kind).toBe('approval_required');
  return meta[approvalMetaKey]?.token as string;
}

describe('a gated tool served as an MCP Task', () => {
  it('runs once approved, resumed with the token under the same key, and a redelivery runs nothing', async () => {
    refunds = 0;
    const key = { [idempotencyKeyMetaKey]: 'refund-77' };
    const paused = await refundTask(key);
    const token = tokenOf(paused.result);
    expect(await gate.approve(token, { by: 'ana' })).toBe(true);

    const resumed = await refundTask({ ...key, [approvalMetaKey]: token });
    expect(resumed.taskId).not.toBe(paused.taskId);
    expect(resumed.result).toMatchObject({ structuredContent: { refunded: 500 } });
    const again = await refundTask({ ...key, [approvalMetaKey]: token });
    expect(again.taskId).toBe(resumed.taskId);
    expect(refunds).toBe(1);
  });

  it('runs a keyless call once approved, resumed with the token alone', async () => {
    refunds = 0;
    const token = tokenOf((await refundTask({})).result);
    await gate.approve(token, { by: 'ana' });
    const resumed = await refundTask({ [approvalMetaKey]: token });
    expect(resumed.result).toMatchObject({ structuredContent: { refunded: 500 } });
    await refundTask({ [approvalMetaKey]: token });
    expect(refunds).toBe(1);
  });
});
