// The control room over an approval gate: three refunds wait for a person at
// http://127.0.0.1:8787/console (log in with TD_CONSOLE_TOKEN). Approve, deny or edit them there;
// each approved refund then runs, once. `--smoke` answers them through the JSON API instead, as a
// script would, and exits.
//
//   TD_CONSOLE_TOKEN=$(openssl rand -hex 16) npm run demo:console

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { approvalGate, createDispatcher, defaultStack, ToolRegistry } from '../index.js';
import { controlRoom } from '../integrations/console/index.js';

const token = process.env['TD_CONSOLE_TOKEN'];
if (token === undefined || token.length < 16) {
  console.error('set TD_CONSOLE_TOKEN to a secret of at least 16 characters');
  process.exit(1);
}
const smoke = process.argv.includes('--smoke');

const refundArgs = z.object({ amount: z.number().positive().max(1_000), note: z.string().optional() });
type RefundArgs = z.infer<typeof refundArgs>;
const registry = new ToolRegistry().register({
  name: 'payments.refund',
  description: 'Refunds an order',
  inputSchema: refundArgs,
  requiresApproval: ({ amount }) => amount > 100,
  handler: async ({ amount }) => {
    console.log(`refunded ${amount}`);
    return { refunded: amount };
  },
});
const gate = approvalGate({ registry });
const dispatcher = createDispatcher(defaultStack({ registry, approval: gate }));

// Three calls pause; the gate keeps a redacted preview of each (the key in the note never shows).
const paused = new Map<string, RefundArgs>();
for (const [args, tenant] of [
  [{ amount: 250, note: 'customer sent key sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123 by mistake' }, 'acme'],
  [{ amount: 900 }, 'globex'],
  [{ amount: 120, note: 'late delivery' }, 'acme'],
] as const) {
  const outcome = await dispatcher.dispatch('payments.refund', args, { tenant });
  if (!outcome.ok && outcome.approval) paused.set(outcome.approval.token, args);
}

// The agent's side: an approved call runs with its token (edited args, as the reviewer set them).
const resumed: Promise<unknown>[] = [];
const stop = gate.subscribe((decided) => {
  const asked = paused.get(decided.token);
  if (asked === undefined || (decided.decision !== 'approved' && decided.decision !== 'edited')) return;
  const run = async () => {
    const record = await gate.store.get(decided.token);
    const args = decided.decision === 'edited' ? JSON.parse(record?.preview ?? '{}') : asked;
    await dispatcher.dispatch('payments.refund', args, { approval: decided.token });
  };
  resumed.push(run());
});

const room = controlRoom({ token, gate });
const server = createServer(room.handler);
await new Promise<void>((resolve) =>
  server.listen(smoke ? 0 : Number(process.env['PORT'] ?? 8787), '127.0.0.1', resolve),
);
const { port } = server.address() as AddressInfo;
const origin = `http://127.0.0.1:${port}`;

if (!smoke) {
  console.log(`console: ${origin}/console (log in with TD_CONSOLE_TOKEN); Ctrl-C to stop`);
  process.once('SIGINT', () => {
    stop();
    void room.close().then(() => server.close());
  });
} else {
  const api = async (path: string, body?: unknown) => {
    const response = await fetch(`${origin}/console/api${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  };
  const listed = await api('/approvals');
  const items = listed.json['items'] as Array<{
    token: string;
    tool: string;
    preview: string;
    tenant: string;
  }>;
  console.log(`pending: ${items.length}`);
  for (const item of items) console.log(`  ${item.tool} for ${item.tenant}: ${item.preview}`);
  const [first, second, third] = items;
  if (first === undefined || second === undefined || third === undefined)
    throw new Error('expected 3 pending');
  console.log(
    `approve twice: ${(await api(`/approvals/${first.token}/approve`, {})).status}, ${(await api(`/approvals/${first.token}/approve`, {})).status}`,
  );
  console.log(
    `deny: ${JSON.stringify((await api(`/approvals/${second.token}/deny`, { reason: 'too large' })).json)}`,
  );
  const invalid = await api(`/approvals/${third.token}/approve`, { args: { amount: -5 } });
  console.log(`edit with invalid args: ${invalid.status} ${String(invalid.json['message'])}`);
  console.log(
    `edit to 100: ${JSON.stringify((await api(`/approvals/${third.token}/approve`, { args: { amount: 100 } })).json)}`,
  );
  await Promise.all(resumed);
  console.log(`pending after: ${((await api('/approvals')).json['items'] as unknown[]).length}`);
  stop();
  await room.close();
  server.close();
}
