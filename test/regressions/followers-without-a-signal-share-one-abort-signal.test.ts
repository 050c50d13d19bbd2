// Regression: a keyed call with no caller signal that followed another process's lead handed the
// store the one never-aborted signal every such flight shares, and the store listened to it; a
// dozen followers at once tripped MaxListenersExceededWarning (seen in the exactly-once fleet).

import { afterEach, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../../index.js';
import { memoryIdempotencyStore } from '../../middleware/index.js';

const warnings: Error[] = [];
const onWarning = (warning: Error) => warnings.push(warning);
afterEach(() => {
  process.off('warning', onWarning);
});

it('adds no listener to a shared signal when many unsignalled calls follow a lead', async () => {
  process.on('warning', onWarning);
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const registry = new ToolRegistry().register({
    name: 'payments.charge',
    inputSchema: z.object({ order: z.number() }),
    handler: async ({ order }) => {
      await gate;
      return `charged ${order}`;
    },
  });
  // Two dispatchers on one store are two processes: the second follows the first's leads.
  const store = memoryIdempotencyStore();
  const leader = createDispatcher(defaultStack({ registry, idempotency: { store } }));
  const follower = createDispatcher(defaultStack({ registry, idempotency: { store } }));
  const orders = Array.from({ length: 16 }, (_, order) => order);
  const led = orders.map((order) =>
    leader.dispatch('payments.charge', { order }, { idempotencyKey: `order-${order}` }),
  );
  await new Promise((resolve) => setTimeout(resolve, 10));
  const followed = orders.map((order) =>
    follower.dispatch('payments.charge', { order }, { idempotencyKey: `order-${order}` }),
  );
  await new Promise((resolve) => setTimeout(resolve, 10));
  open();
  const outcomes = await Promise.all([...led, ...followed]);
  await new Promise((resolve) => setImmediate(resolve));
  expect(outcomes.every((outcome) => outcome.ok)).toBe(true);
  expect(outcomes.slice(16).map((outcome) => outcome.ok && outcome.attempts)).toEqual(orders.map(() => 0));
  expect(warnings.filter((warning) => warning.name === 'MaxListenersExceededWarning')).toEqual([]);
});
