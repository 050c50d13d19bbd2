// The DBOS worker the dbosStep kill test runs as a process of its own (`node --import tsx`), so
// the test can have it SIGKILL itself between the side effect and the checkpoint, on the shared
// checkout fixture. The first worker starts the workflow, a restarted one resumes it through
// DBOS's recovery, and whichever sees it finish writes its result to Redis.

import { DBOS } from '@dbos-inc/dbos-sdk';
import { dbosStep } from '../../../integrations/dbos/index.js';
import { checkoutFixture, type Order } from '../durable/checkout-fixture.js';

const workflowID = process.env.TD_WORKFLOW_ID ?? 'order';
const { client, prefix, dispatcher } = await checkoutFixture();

const checkout = DBOS.registerWorkflow(
  async (input: Order) => dbosStep(dispatcher, 'payments.charge', input, { name: 'charge' }),
  { name: 'checkout' },
);

DBOS.setConfig({
  name: 'td-dbos-kill',
  systemDatabaseUrl: process.env.TD_DATABASE_URL ?? '',
  logLevel: 'error',
});
await DBOS.launch();
process.stdout.write('ready\n');

const first = (await client.set(`${prefix}:started:${workflowID}`, '1', { NX: true })) === 'OK';
const handle = first
  ? await DBOS.startWorkflow(checkout, { workflowID })({ orderId: workflowID, amount: 25 })
  : DBOS.retrieveWorkflow(workflowID);
const result = await handle.getResult();
await client.set(`${prefix}:result:${workflowID}`, JSON.stringify(result));
