// Regression (issue 9, item 1): a keyed call whose caller aborted while an async validator ran
// still led, ran its handler and spent a budget unit; the same key sent again then ran it twice.
import { expect, it } from 'vitest';
import {
  createBudget,
  createDispatcher,
  defaultStack,
  ToolRegistry,
  type StandardSchemaV1,
} from '../../index.js';
import { flush, gate } from '../helpers/gate.js';

it('never starts an attempt for a keyed call whose caller aborted before it began', async () => {
  const validation = gate();
  const asyncSchema: StandardSchemaV1<{ amount: number }> = {
    '~standard': {
      version: 1,
      vendor: 'test',
      validate: async (value) => {
        await validation.promise;
        return { value: value as { amount: number } };
      },
    },
  };
  let charges = 0;
  const registry = new ToolRegistry().register({
    name: 'payments.charge',
    inputSchema: asyncSchema,
    handler: () => ++charges,
  });
  const dispatcher = createDispatcher(defaultStack({ registry }));
  const budget = createBudget(5);
  const controller = new AbortController();
  const first = dispatcher.dispatch(
    'payments.charge',
    { amount: 10 },
    {
      idempotencyKey: 'order-1',
      signal: controller.signal,
      budget,
    },
  );
  controller.abort();
  validation.open();
  await expect(first).resolves.toMatchObject({ ok: false, kind: 'cancelled' });
  await flush();
  expect(charges).toBe(0);
  expect(budget.remaining).toBe(5);

  const again = await dispatcher.dispatch(
    'payments.charge',
    { amount: 10 },
    { idempotencyKey: 'order-1', budget },
  );
  expect(again).toEqual({ ok: true, result: 1, attempts: 1 });
  expect(charges).toBe(1);
});
