// A few dispatches through the default stack: success, retry, timeout, schema error and dedupe.

import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry, TransientError, type Outcome } from '../index.js';

let searchFailures = 2;
let charges = 0;

const registry = new ToolRegistry()
  .register({
    name: 'search.web',
    description: 'Search the web',
    inputSchema: z.object({ query: z.string(), limit: z.number().int().default(3) }),
    idempotent: true,
    handler: async ({ query, limit }) => {
      if (searchFailures-- > 0) throw new TransientError('search backend busy');
      return Array.from({ length: limit }, (_, i) => `${query} result ${i + 1}`);
    },
  })
  .register({
    name: 'db.write',
    description: 'Write a row (slow, not idempotent)',
    inputSchema: z.object({ row: z.string() }),
    timeoutMs: 200,
    handler: (_args, { signal }) =>
      new Promise((resolve) => {
        const timer = setTimeout(() => resolve('written'), 1_000);
        signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
      }),
  })
  .register({
    name: 'payments.charge',
    description: 'Charge a card',
    inputSchema: z.object({ cents: z.number().int().positive() }),
    handler: async ({ cents }) => `charge #${++charges} of ${cents} cents`,
  });

const dispatcher = createDispatcher(defaultStack({ registry, retry: { baseDelayMs: 50 } }), {
  onEvent: (event) => {
    if (event.type === 'dispatch.retry') {
      console.log(`    ↻ retry after ${Math.round(Number(event.delayMs))} ms (${String(event.kind)})`);
    }
  },
});

function show(label: string, outcome: Outcome): void {
  const text = outcome.ok
    ? `ok after ${outcome.attempts} attempt(s): ${JSON.stringify(outcome.result)}`
    : `${outcome.kind} (code ${outcome.jsonrpcCode}, ${outcome.attempts} attempt(s)): ${outcome.message}`;
  console.log(`${label.padEnd(28)} → ${text}`);
}

console.log('tool-dispatcher quick start\n');
show('search.web (flaky)', await dispatcher.dispatch('search.web', { query: 'agents' }));
show('db.write (slow)', await dispatcher.dispatch('db.write', { row: 'r1' }));
show('search.web { query: 42 }', await dispatcher.dispatch('search.web', { query: 42 }));
const charge = { cents: 500 };
const [first, second] = await Promise.all([
  dispatcher.dispatch('payments.charge', charge, { idempotencyKey: 'order-17' }),
  dispatcher.dispatch('payments.charge', charge, { idempotencyKey: 'order-17' }),
]);
show('payments.charge (key 1st)', first);
show('payments.charge (key 2nd)', second);
console.log(`\ncards charged: ${charges}`);
