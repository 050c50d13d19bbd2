// Restate: a charge as a journaled step. The journal dedupes a replay; the idempotency key
// `restate:<invocationId>:charge` covers a crash between the charge and the journal write.
//
//   npx @restatedev/restate-server                     (in another terminal: the dev server)
//   npx tsx examples/durable/restate.ts                serves the Checkout service on :9080
//   curl localhost:9070/deployments -H 'content-type: application/json' -d '{"uri":"http://localhost:9080"}'
//   curl localhost:8080/Checkout/charge -H 'content-type: application/json' -d '{"orderId":"1042","amountCents":2500}'
//
// One process here, so the memory idempotency store; a fleet passes `redisIdempotencyStore` (see
// docs/exactly-once.md), whose keys outlive the process that died.

import { fileURLToPath } from 'node:url';
import * as restate from '@restatedev/restate-sdk';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolError, ToolRegistry } from '../../index.js';
import { restateRun } from '../../integrations/restate/index.js';

const order = z.object({ orderId: z.string(), amountCents: z.number().int().positive() });

/** The Checkout service, its dispatcher and the charges its fake bank made. */
export function createCheckout() {
  const charges: string[] = [];
  const registry = new ToolRegistry().register({
    name: 'payments.charge',
    description: 'Charge the card on file for an order',
    inputSchema: order,
    handler: ({ orderId, amountCents }) => {
      if (amountCents > 100_000) throw new ToolError('The card was declined');
      charges.push(orderId);
      return { chargeId: `ch_${orderId}`, amountCents };
    },
  });
  const dispatcher = createDispatcher(defaultStack({ registry }));
  const service = restate.service({
    name: 'Checkout',
    handlers: {
      // A decline is a TerminalError naming its kind; a flaky bank, once the stack's own retries
      // are spent, a RetryableError that Restate retries with its backoff.
      charge: (ctx: restate.Context, input: z.infer<typeof order>) =>
        restateRun(ctx, dispatcher, 'payments.charge', input, { name: 'charge', keyTtlMs: 24 * 60 * 60_000 }),
      // For an agent loop: the envelope comes back as data, the same text on every replay.
      chargeForModel: (ctx: restate.Context, input: z.infer<typeof order>) =>
        restateRun(ctx, dispatcher, 'payments.charge', input, { name: 'charge', failures: 'return' }),
    },
  });
  return { service, dispatcher, charges };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const port = await restate.serve({ services: [createCheckout().service], port: 9080 });
  console.log(
    `Checkout serving on :${port}; register it with the Restate server, then call /Checkout/charge`,
  );
}
