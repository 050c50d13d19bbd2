// The MCP server with the policy layers, against the real SDK client in memory: cut results,
// output schemas with structuredContent, and approval tokens carried in _meta only.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  approvalGate,
  createDispatcher,
  defaultStack,
  memorySpillStore,
  outputGuard,
  ToolRegistry,
} from '../../../index.js';
import { approvalMetaKey, createMcpServer, type registerMcpTools } from '../../../integrations/mcp/index.js';

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((closable) => closable.close().catch(() => {})));
});

async function connected(
  server: Parameters<typeof registerMcpTools>[0],
  elicit?: (message: string) => { action: 'accept' | 'decline'; content?: Record<string, boolean> },
): Promise<Client> {
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await server.connect(serverTransport);
  const client = new Client(
    { name: 'test-client', version: '1.0.0' },
    elicit === undefined ? {} : { capabilities: { elicitation: {} } },
  );
  if (elicit !== undefined)
    client.setRequestHandler(ElicitRequestSchema, async (request) => elicit(request.params.message));
  await client.connect(clientTransport);
  opened.push(client, server);
  return client;
}

function setup(withApprovals = false) {
  let refunds = 0;
  const registry = new ToolRegistry()
    .register({
      name: 'logs.read',
      inputSchema: z.object({}),
      annotations: { readOnlyHint: true },
      outputSchema: z.object({ lines: z.array(z.string()) }),
      handler: () => ({ lines: Array.from({ length: 2_000 }, (_, i) => `line ${i}`) }),
    })
    .register({
      name: 'payments.refund',
      inputSchema: z.object({ amount: z.number() }),
      annotations: { destructiveHint: true },
      handler: ({ amount }) => {
        refunds += 1;
        return { refunded: amount };
      },
    });
  const gate = approvalGate({ registry });
  const dispatcher = createDispatcher(
    defaultStack({
      registry,
      approval: gate,
      output: outputGuard({ maxChars: 1_000, spill: memorySpillStore() }),
    }),
  );
  const server = createMcpServer({
    registry,
    dispatcher,
    info: { name: 'policy', version: '1.0.0' },
    ...(withApprovals ? { approvals: gate } : {}),
  });
  return { gate, server, refunds: () => refunds };
}

describe('createMcpServer with the policy layers', () => {
  it('lists the output schema and annotations, and sends the model copy with the whole structuredContent', async () => {
    const client = await connected(setup().server);
    const { tools } = await client.listTools();
    const logs = tools.find((tool) => tool.name === 'logs.read');
    expect(logs?.outputSchema).toMatchObject({ type: 'object', required: ['lines'] });
    expect(logs?.annotations).toMatchObject({ readOnlyHint: true });
    const result = await client.callTool({ name: 'logs.read', arguments: {} });
    const [content] = result.content as Array<{ type: string; text: string }>;
    expect(content?.text.length).toBeLessThanOrEqual(1_000);
    expect(content?.text).toContain('Narrow the query');
    expect((result.structuredContent as { lines: string[] }).lines).toHaveLength(2_000);
  });

  it('answers a destructive call with isError and the token in _meta only, and resumes it with the token', async () => {
    const { gate, server, refunds } = setup();
    const client = await connected(server);
    const paused = await client.callTool({ name: 'payments.refund', arguments: { amount: 5 } });
    expect(paused.isError).toBe(true);
    const meta = paused._meta?.[approvalMetaKey] as { token: string; reason: string; expiresAt: number };
    expect(meta).toMatchObject({ token: expect.any(String), reason: expect.any(String) });
    expect(JSON.stringify(paused.content)).not.toContain(meta.token);
    await gate.approve(meta.token, { by: 'ana' });
    const resumed = await client.callTool({
      name: 'payments.refund',
      arguments: { amount: 5 },
      _meta: { [approvalMetaKey]: meta.token },
    });
    expect(resumed.isError).toBeFalsy();
    expect(resumed.structuredContent).toEqual({ refunded: 5 });
    expect(refunds()).toBe(1);
  });

  it('asks a client that can elicit, and runs the call once the user approves', async () => {
    const { server, refunds } = setup(true);
    const asked: string[] = [];
    const client = await connected(server, (message) => {
      asked.push(message);
      return { action: 'accept', content: { approve: true } };
    });
    const result = await client.callTool({ name: 'payments.refund', arguments: { amount: 5 } });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ refunded: 5 });
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('payments.refund');
    expect(refunds()).toBe(1);
  });

  it('answers approval_denied when the user declines', async () => {
    const { server, refunds } = setup(true);
    const client = await connected(server, () => ({ action: 'decline' }));
    const result = await client.callTool({ name: 'payments.refund', arguments: { amount: 5 } });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toContain('approval_denied');
    expect(refunds()).toBe(0);
  });
});
