// The Restate service the restateRun suite registers: run as a process of its own (so a test can
// SIGKILL it) with `node --import tsx`, on the shared checkout fixture.

import * as restate from '@restatedev/restate-sdk';
import { restateRun } from '../../../integrations/restate/index.js';
import { checkoutFixture, type Order } from '../durable/checkout-fixture.js';

const { registry, dispatcher } = await checkoutFixture();

const checkout = restate.service({
  name: 'Checkout',
  handlers: {
    charge: (ctx: restate.Context, input: Order) =>
      restateRun(ctx, dispatcher, 'payments.charge', input, { name: 'charge' }),
    decline: (ctx: restate.Context, input: Order) =>
      restateRun(ctx, dispatcher, 'payments.decline', input, { name: 'decline' }),
    declineAsData: (ctx: restate.Context, input: Order) =>
      restateRun(ctx, dispatcher, 'payments.decline', input, { name: 'decline', failures: 'return' }),
    check: (ctx: restate.Context, input: Order) =>
      restateRun(ctx, dispatcher, registry.get('inventory.check')!, input, {
        name: 'check',
        keyTtlMs: 3_600_000,
      }),
  },
});

await restate.serve({ services: [checkout], port: Number(process.env.TD_SERVICE_PORT) });
process.stdout.write('ready\n');
