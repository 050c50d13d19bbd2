// Regression (issue 31, item 30): a tool imported from an MCP server (so every tool `mcp-proxy`
// serves) answered bad args in Ajv's words, `data/cents must be integer, data must have required
// property 'note'`, where the same tool served directly says `cents: …; note: …`.

import { expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry, type Outcome } from '../../index.js';
import { createMcpServerFactory, importMcpTools } from '../../integrations/mcp/index.js';
import { inMemoryClients } from '../helpers/mcp-clients.js';

const clients = inMemoryClients();

const pay = {
  name: 'pay',
  description: 'Pays an order.',
  inputSchema: z.object({
    cents: z.number().int(),
    note: z.object({ text: z.string() }),
    tags: z.array(z.string()),
  }),
  handler: () => 'paid',
};

const messageOf = (outcome: Outcome) => (outcome.ok ? '' : outcome.message);
// The paths a message names, in order: `cents`, `note.text`, `tags[0]`.
const pathsOf = (message: string) =>
  message
    .replace(/^Invalid args for "[^"]+": /, '')
    .split('; ')
    .map((issue) => issue.slice(0, issue.indexOf(': ')));

it('names a remote tool’s bad args by path, as a local tool’s, without Ajv’s data/ prefix', async () => {
  const local = new ToolRegistry().register(pay);
  const direct = createDispatcher(defaultStack({ registry: local }));
  const client = await clients.clientOf(
    createMcpServerFactory({ registry: local, dispatcher: direct, info: { name: 'shop', version: '1.0.0' } }),
    undefined,
  );
  const imported = new ToolRegistry();
  await importMcpTools(client, imported);
  const proxied = createDispatcher(defaultStack({ registry: imported }));

  const cases = [
    { cents: 1.5, note: { text: 'x' }, tags: [] },
    { cents: 1, note: { text: 3 }, tags: [1] },
    { cents: 1, note: {} },
  ];
  for (const args of cases) {
    const [near, far] = [
      messageOf(await direct.dispatch('pay', args)),
      messageOf(await proxied.dispatch('pay', args)),
    ];
    expect(far).not.toMatch(/data[/ ]|must have required/);
    expect(pathsOf(far).sort()).toEqual(pathsOf(near).sort());
  }
  expect(messageOf(await proxied.dispatch('pay', cases[0]))).toBe(
    'Invalid args for "pay": cents: expected integer',
  );
  expect(messageOf(await proxied.dispatch('pay', cases[2]))).toBe(
    'Invalid args for "pay": tags: required; note.text: required',
  );
});
