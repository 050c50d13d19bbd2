// Regression: an approval's reason (from a `decide` or a rule that quotes the args) reached
// `outcome.approval.reason`, `toJSON()`, the MCP `_meta` approval object and the elicitation
// prompt unredacted; only the envelope's message and the events were redacted.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  approvalGate,
  createDispatcher,
  createRedactor,
  defaultStack,
  DispatchError,
  memoryApprovalStore,
  ToolRegistry,
  type DispatchEvent,
} from '../../index.js';
import { approvalMetaKey, createMcpServer } from '../../integrations/mcp/index.js';
import { secrets } from '../helpers/secrets.js';

const secret = secrets.api_key;
const core = 'AbCdEfGhIjKlMnOpQrStUvWx';

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((closable) => closable.close().catch(() => {})));
});

function setup() {
  const registry = new ToolRegistry().register({
    name: 'payments.refund',
    inputSchema: z.object({ note: z.string() }),
    handler: ({ note }) => ({ refunded: note.length }),
  });
  const store = memoryApprovalStore();
  // A policy whose reason quotes the args, secret and all.
  const gate = approvalGate({
    registry,
    store,
    decide: (call) => ({ action: 'require', reason: `note says ${(call.args as { note: string }).note}` }),
  });
  const events: DispatchEvent[] = [];
  const dispatcher = createDispatcher(defaultStack({ registry, approval: gate }), {
    redact: createRedactor(),
    onEvent: (event) => events.push(event),
  });
  return { registry, gate, store, dispatcher, events };
}

async function connected(
  server: ReturnType<typeof createMcpServer>,
  elicit?: (message: string) => { action: 'decline' },
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

describe('an approval reason holding a secret', () => {
  it('is redacted in the outcome, toJSON, the stored request and the events', async () => {
    const { dispatcher, store, events } = setup();
    const paused = await dispatcher.dispatch('payments.refund', { note: `key ${secret}` });
    if (paused.ok || paused.approval === undefined) throw new Error('expected approval_required');
    expect(paused.approval.reason).toBe('note says key [REDACTED:api_key]');
    expect(JSON.stringify(paused.toJSON())).not.toContain(core);
    expect(JSON.stringify(paused.toJsonRpcError())).not.toContain(core);
    expect(paused.message).not.toContain(core);
    expect((await store.get(paused.approval.token))?.reason).not.toContain(core);
    expect(JSON.stringify(events)).not.toContain(core);
  });

  it('is redacted in the MCP _meta approval object and in the elicitation prompt', async () => {
    const { registry, gate, dispatcher } = setup();
    const info = { name: 'policy', version: '1.0.0' };
    const plain = await connected(createMcpServer({ registry, dispatcher, info }));
    const paused = await plain.callTool({ name: 'payments.refund', arguments: { note: `key ${secret}` } });
    expect(paused.isError).toBe(true);
    const meta = paused._meta?.[approvalMetaKey] as { reason: string };
    expect(meta.reason).toBe('note says key [REDACTED:api_key]');
    expect(JSON.stringify(paused)).not.toContain(core);

    const asked: string[] = [];
    const eliciting = await connected(
      createMcpServer({ registry, dispatcher, info, approvals: gate }),
      (message) => {
        asked.push(message);
        return { action: 'decline' };
      },
    );
    await eliciting.callTool({ name: 'payments.refund', arguments: { note: `again ${secret}` } });
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('[REDACTED:api_key]');
    expect(asked[0]).not.toContain(core);
  });

  it('is redacted by the redactor in an envelope any layer made', () => {
    const approval = { token: 't', tool: 'x', callId: 'c', reason: `asks ${secret}`, expiresAt: 0 };
    const redacted = createRedactor().redactValue(
      new DispatchError('approval_required', 'paused', { approval }),
    );
    expect(redacted.approval?.reason).toBe('asks [REDACTED:api_key]');
    expect(redacted.approval?.token).toBe('t');
  });
});
