// Every 2026-07-28 client that could elicit got a final "the user declined it" nobody said: the
// server asked by a push elicitation, which the SDK refuses on that revision, and recorded the
// failure as a decline (`mcp-proxy --require-approval` included). A 2026-07-28 client is now asked
// through `input_required` (MRTR); a client that cannot be asked leaves the call
// `approval_required` saying why; a failed ask is no one's decline.
import { Client, InMemoryTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { acceptedContent, inputRequired, McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { approvalGate, createDispatcher, defaultStack, ToolRegistry } from '../../index.js';
import {
  approvalMetaKey,
  createMcpProxy,
  createMcpServerFactory,
  errorMetaKey,
  idempotencyKeyMetaKey,
  listenMcp,
} from '../../integrations/mcp/index.js';

const closing: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((close) => close().catch(() => {})));
});

type Answer = { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, boolean> };

const modern = { versionNegotiation: { mode: { pin: '2026-07-28' as const } } };

// A v2 Client over an in-memory pair (or Streamable HTTP, as `mcp-proxy --listen` serves);
// `answer` (when given) is its elicitation handler.
async function clientOf(
  factory: Parameters<typeof serveStdio>[0],
  options: { modern: boolean; http?: boolean; answer?: (message: string) => Answer },
): Promise<Client> {
  let clientSide: InMemoryTransport | StreamableHTTPClientTransport;
  if (options.http === true) {
    const listener = await listenMcp(factory, { url: 'http://127.0.0.1:0/mcp' });
    closing.push(() => listener.close());
    clientSide = new StreamableHTTPClientTransport(new URL(listener.url));
  } else {
    const [inMemory, serverSide] = InMemoryTransport.createLinkedPair();
    const served = serveStdio(factory, { transport: serverSide });
    closing.push(() => served.close());
    clientSide = inMemory;
  }
  const client = new Client(
    { name: 'host', version: '1.0.0' },
    {
      ...(options.modern ? modern : {}),
      ...(options.answer === undefined ? {} : { capabilities: { elicitation: { form: {} } } }),
    },
  );
  const { answer } = options;
  if (answer !== undefined) {
    client.setRequestHandler('elicitation/create', async (request) => answer(request.params.message));
  }
  await client.connect(clientSide);
  closing.push(() => client.close());
  return client;
}

function billing() {
  let refunds = 0;
  const registry = new ToolRegistry().register({
    name: 'payments.refund',
    inputSchema: z.object({ cents: z.number().int() }),
    requiresApproval: true,
    handler: ({ cents }) => {
      refunds += 1;
      return { refunded: cents };
    },
  });
  const gate = approvalGate();
  const dispatcher = createDispatcher(defaultStack({ registry, approval: gate }));
  const factory = createMcpServerFactory({
    registry,
    dispatcher,
    info: { name: 'billing', version: '1.0.0' },
    approvals: gate,
  });
  return { gate, factory, refunds: () => refunds };
}

const refund = { name: 'payments.refund', arguments: { cents: 500 } };

function ticketOf(result: { _meta?: Record<string, unknown> | undefined }) {
  return result._meta?.[approvalMetaKey] as { token: string; notAsked?: string };
}

describe('a paused call on a 2026-07-28 client', () => {
  it('is asked through input_required over HTTP and runs once the user approves', async () => {
    const { factory, refunds } = billing();
    const asked: string[] = [];
    const client = await clientOf(factory, {
      modern: true,
      http: true,
      answer: (message) => {
        asked.push(message);
        return { action: 'accept', content: { approve: true } };
      },
    });
    const result = await client.callTool({ ...refund, _meta: { [idempotencyKeyMetaKey]: 'refund-1' } });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ refunded: 500 });
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('payments.refund');
    expect(refunds()).toBe(1);
  });

  it('is approval_denied when the user declines, keyless', async () => {
    const { factory, refunds } = billing();
    const client = await clientOf(factory, { modern: true, answer: () => ({ action: 'decline' }) });
    const result = await client.callTool(refund);
    expect(result._meta?.[errorMetaKey]).toMatchObject({ kind: 'approval_denied' });
    expect(JSON.stringify(result.content)).toContain('the user declined it');
    expect(refunds()).toBe(0);
  });

  it('stays approval_required, saying why, when the client declares no elicitation', async () => {
    const { gate, factory, refunds } = billing();
    const client = await clientOf(factory, { modern: true });
    const result = await client.callTool(refund);
    expect(result._meta?.[errorMetaKey]).toMatchObject({ kind: 'approval_required' });
    expect(JSON.stringify(result.content)).toContain('It was not put to the user');
    expect(JSON.stringify(result.content)).not.toContain('declined');
    const ticket = ticketOf(result);
    expect(ticket.notAsked).toMatch(/no form elicitation/);
    // Still pending: a person can approve it, and the documented resume runs it.
    expect(await gate.approve(ticket.token, { by: 'ana' })).toBe(true);
    const resumed = await client.callTool({ ...refund, _meta: { [approvalMetaKey]: ticket.token } });
    expect(resumed.structuredContent).toEqual({ refunded: 500 });
    expect(refunds()).toBe(1);
  });

  it('refuses a forged answer naming another call’s token, asking anew', async () => {
    const { factory, refunds } = billing();
    const client = await clientOf(factory, { modern: true });
    const other = ticketOf(await client.callTool({ ...refund, arguments: { cents: 1 } }));
    const forged = (await client.callTool(
      {
        ...refund,
        inputResponses: { 'tool-dispatcher/approve': { action: 'accept', content: { approve: true } } },
        requestState: `tool-dispatcher/approval:${other.token}`,
      } as typeof refund,
      { allowInputRequired: true },
    )) as Record<string, unknown>;
    expect((forged['_meta'] as Record<string, unknown>)[errorMetaKey]).toMatchObject({
      kind: 'idempotency_conflict',
    });
    expect(refunds()).toBe(0);
  });
});

describe('a paused call on a 2025-era client', () => {
  it('stays approval_required, not declined, when the elicitation request fails', async () => {
    const { gate, factory, refunds } = billing();
    const client = await clientOf(factory, {
      modern: false,
      answer: () => {
        throw new Error('the host lost its window');
      },
    });
    const result = await client.callTool(refund);
    expect(result._meta?.[errorMetaKey]).toMatchObject({ kind: 'approval_required' });
    expect(ticketOf(result).notAsked).toMatch(/elicitation request to the client failed/);
    expect(await gate.approve(ticketOf(result).token)).toBe(true);
    expect(refunds()).toBe(0);
  });
});

describe('mcp-proxy with requireApproval, to a 2026-07-28 client', () => {
  it('asks for approval, then passes the upstream’s own question on, and deploys once', async () => {
    let deployed = 0;
    const confirmation = z.object({ confirm: z.boolean() });
    const upstream = await listenMcp(
      () => {
        const server = new McpServer({ name: 'deployer', version: '1.0.0' });
        server.registerTool(
          'deploy',
          { inputSchema: z.object({ env: z.string() }) },
          async ({ env }, ctx) => {
            if (acceptedContent(ctx.mcpReq.inputResponses, 'confirm', confirmation)?.confirm !== true) {
              return inputRequired({
                inputRequests: {
                  confirm: inputRequired.elicit({
                    message: `Deploy to ${env}?`,
                    requestedSchema: confirmation,
                  }),
                },
                requestState: `asked-${env}`,
              });
            }
            deployed += 1;
            return { content: [{ type: 'text', text: `deployed to ${env}` }] };
          },
        );
        return server;
      },
      { url: 'http://127.0.0.1:0/mcp' },
    );
    closing.push(() => upstream.close());
    const proxy = await createMcpProxy({
      upstream: { url: upstream.url },
      config: { requireApproval: 'all' },
      logLevel: 'silent',
    });
    closing.push(() => proxy.close());
    const asked: string[] = [];
    const client = await clientOf(proxy.serverFactory, {
      modern: true,
      answer: (message) => {
        asked.push(message);
        return message.startsWith('Allow')
          ? { action: 'accept', content: { approve: true } }
          : { action: 'accept', content: { confirm: true } };
      },
    });
    const result = await client.callTool({
      name: 'deploy',
      arguments: { env: 'prod' },
      _meta: { [idempotencyKeyMetaKey]: 'deploy-1' },
    });
    expect(result.content).toEqual([{ type: 'text', text: 'deployed to prod' }]);
    expect(asked).toEqual([expect.stringContaining('Allow "deploy" to run?'), 'Deploy to prod?']);
    expect(deployed).toBe(1);
  }, 30_000);
});
