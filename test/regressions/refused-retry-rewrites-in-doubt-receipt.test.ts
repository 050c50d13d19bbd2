// Regression (issue 31, item 16): a retry of a key left in doubt was refused, as it should be, but
// the refusal wrote its own receipt over the earlier one: `attempts` dropped to 0 and the times
// moved to the refusal, so the operator lost when the action was sent.

import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry, type DefaultStackOptions } from '../../index.js';
import { memoryIdempotencyStore } from '../../middleware/index.js';
import { postgresReceiptStore } from '../../integrations/postgres/index.js';
import { createTestDatabase, postgresSuitesEnabled, type TestDatabase } from '../helpers/postgres.js';

/** A charge whose first call hangs past its timeout; later calls would succeed. */
function hangingCharge(idempotency: NonNullable<DefaultStackOptions['idempotency']>, timeoutMs: number) {
  let runs = 0;
  const registry = new ToolRegistry().register({
    name: 'payments.charge',
    inputSchema: z.object({ amount: z.number() }),
    timeoutMs,
    handler: () => (++runs === 1 ? new Promise<never>(() => {}) : 'ch_2'),
  });
  const dispatcher = createDispatcher(defaultStack({ registry, idempotency }));
  const call = () => dispatcher.dispatch('payments.charge', { amount: 5 }, { idempotencyKey: 'order-1' });
  return { call, runs: () => runs };
}

describe('in memory', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('leaves the in-doubt receipt as it was when a retry of its key is refused', async () => {
    vi.useFakeTimers();
    const store = memoryIdempotencyStore();
    const charge = hangingCharge({ store }, 1_000);
    const first = charge.call();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await first).toMatchObject({ ok: false, kind: 'timeout' });
    const inDoubt = store.receipts.get('order-1');
    expect(inDoubt).toMatchObject({ status: 'in_doubt', attempts: 1, window: 'attempt_timeout' });
    await vi.advanceTimersByTimeAsync(60_000);
    expect(await charge.call()).toMatchObject({ ok: false, kind: 'outcome_unknown' });
    expect(store.receipts.get('order-1')).toEqual(inDoubt);
    expect(charge.runs()).toBe(1);
  });
});

const enabled = await postgresSuitesEnabled('refused retry receipt');

describe.runIf(enabled)('in PostgreSQL', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase('refused_retry');
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('leaves the in-doubt row as it was when a retry of its key is refused', async () => {
    const receipts = postgresReceiptStore(database.pool, { createTable: true });
    await receipts.ready();
    const charge = hangingCharge({ receipts }, 20);
    expect(await charge.call()).toMatchObject({ ok: false, kind: 'timeout' });
    const inDoubt = await receipts.get('order-1');
    expect(inDoubt).toMatchObject({ status: 'in_doubt', attempts: 1, window: 'attempt_timeout' });
    // Time passes between the two calls, so a refusal that wrote its own times would show.
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await charge.call()).toMatchObject({ ok: false, kind: 'outcome_unknown' });
    expect(await receipts.get('order-1')).toEqual(inDoubt);
    expect(charge.runs()).toBe(1);
  });
});
