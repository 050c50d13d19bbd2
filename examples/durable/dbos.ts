// DBOS: a charge as a checkpointed step. DBOS records the step's outcome in Postgres and a
// recovered workflow gets it back; the key `dbos:<workflowID>:<stepID>` covers a crash between
// the charge and the checkpoint.
//
//   DBOS_SYSTEM_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/dbos_example npx tsx examples/durable/dbos.ts
//
// It runs one workflow id twice: the second run is served from DBOS's checkpoint, and the
// card is charged once. One process here, so the memory idempotency store; a fleet passes
// `redisIdempotencyStore` (see docs/exactly-once.md).

import { randomUUID } from 'node:crypto';
import { DBOS } from '@dbos-inc/dbos-sdk';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../../index.js';
import { dbosStep } from '../../integrations/dbos/index.js';

const charges: string[] = [];
const order = z.object({ orderId: z.string(), amountCents: z.number().int().positive() });
const registry = new ToolRegistry().register({
  name: 'payments.charge',
  description: 'Charge the card on file for an order',
  inputSchema: order,
  handler: ({ orderId, amountCents }) => {
    charges.push(orderId);
    return { chargeId: `ch_${orderId}`, amountCents };
  },
});
const dispatcher = createDispatcher(defaultStack({ registry }));

// DBOS retries the step (3 runs, 1 s then 2 s apart) only for what engineVerdict gives the
// engine; a decline is recorded and its envelope thrown from the workflow.
const checkout = DBOS.registerWorkflow(
  async (input: z.infer<typeof order>) =>
    dbosStep<{ chargeId: string }>(dispatcher, 'payments.charge', input, { name: 'charge', maxAttempts: 3 }),
  { name: 'checkout' },
);

DBOS.setConfig({
  name: 'tool-dispatcher-example',
  systemDatabaseUrl:
    process.env.DBOS_SYSTEM_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/dbos_example',
  logLevel: 'error',
});
await DBOS.launch();
const workflowID = `order-1042-${randomUUID().slice(0, 8)}`;
try {
  for (const run of ['first run', 'same workflow id again']) {
    const handle = await DBOS.startWorkflow(checkout, { workflowID })({
      orderId: '1042',
      amountCents: 2_500,
    });
    console.log(`${run}: ${JSON.stringify(await handle.getResult())}`);
  }
  console.log(`cards charged: ${charges.length}`);
} finally {
  await DBOS.shutdown();
}
