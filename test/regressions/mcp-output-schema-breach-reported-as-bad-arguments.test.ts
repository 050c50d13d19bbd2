// Regression (issue 19, item 8): a remote tool answering with structuredContent that breaks its
// outputSchema failed as `schema`, "Invalid arguments for …", with the hint to fix the arguments,
// although the arguments were valid: the SDK client reports the breach with the code of bad params.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { expect, it } from 'vitest';
import { createDispatcher, defaultStack, ToolRegistry, toToolMessage } from '../../index.js';
import { importMcpTools } from '../../integrations/mcp/client.js';

it('reports a result that breaks the output schema as internal, naming the output schema', async () => {
  // A low-level Server: McpServer would check its own output and never send the breach.
  const server = new Server({ name: 'thermometer', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      {
        name: 'getTemp',
        inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        outputSchema: { type: 'object', properties: { celsius: { type: 'number' } }, required: ['celsius'] },
      },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async () => ({
    content: [{ type: 'text', text: 'hot' }],
    structuredContent: { celsius: 'hot' },
  }));
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await server.connect(serverTransport);
  const client = new Client({ name: 'agent', version: '1.0.0' });
  await client.connect(clientTransport);
  try {
    const registry = new ToolRegistry();
    await importMcpTools(client, registry);
    const dispatcher = createDispatcher(defaultStack({ registry }));
    const outcome = await dispatcher.dispatch('get_temp', { city: 'Quito' });
    expect(outcome).toMatchObject({ ok: false, kind: 'internal', attempts: 1 });
    expect(outcome.ok ? '' : outcome.message).toMatch(
      /^The MCP tool "getTemp" answered with structuredContent that breaks its output schema: /,
    );
    expect(toToolMessage(outcome)).not.toMatch(/Fix the arguments/);
  } finally {
    await client.close();
    await server.close();
  }
});
