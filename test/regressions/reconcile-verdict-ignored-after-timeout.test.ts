// Regression (issue 31, item 18): a reconcile's verdict did not count where it was asked.
// `not_committed` for a timed-out charge still left the key `in_doubt` (so the same key was
// refused for good), `not_committed` for a handler's OutcomeUnknownError still answered
// outcome_unknown, and the evidence a reconcile gave after a timeout or an OutcomeUnknownError
// never reached the receipt.

import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createDispatcher,
  defaultStack,
  OutcomeUnknownError,
  ToolRegistry,
  type Outcome,
  type ReconcileVerdict,
} from '../../index.js';
import { memoryIdempotencyStore } from '../../middleware/index.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** A charge whose first run fails as `first` says, then succeeds; `verdict` answers reconcile. */
function charge(first: 'hang' | 'unknown', verdict: () => ReconcileVerdict) {
  let runs = 0;
  const registry = new ToolRegistry().register({
    name: 'payments.charge',
    inputSchema: z.object({ amount: z.number() }),
    timeoutMs: 1_000,
    handler: () => {
      runs += 1;
      if (runs > 1) return `ch_${runs}`;
      if (first === 'hang') return new Promise<never>(() => {});
      throw new OutcomeUnknownError('sent, no answer');
    },
    reconcile: () => verdict(),
  });
  const store = memoryIdempotencyStore();
  const dispatcher = createDispatcher(
    defaultStack({ registry, idempotency: { store }, retry: { random: () => 0 } }),
  );
  const call = async (): Promise<Outcome> => {
    const pending = dispatcher.dispatch('payments.charge', { amount: 5 }, { idempotencyKey: 'order-1' });
    await vi.runAllTimersAsync();
    return pending;
  };
  return { call, store, runs: () => runs };
}

it('counts not_committed after a timeout: a timeout, no in_doubt receipt, the evidence kept', async () => {
  const subject = charge('hang', () => ({ status: 'not_committed', evidence: { searched: 'ledger' } }));
  expect(await subject.call()).toMatchObject({ ok: false, kind: 'timeout', attempts: 1 });
  expect(subject.store.receipts.get('order-1')).toMatchObject({
    status: 'failed',
    attempts: 1,
    settledBy: 'reconcile',
    evidence: { searched: 'ledger' },
  });
  expect(subject.store.receipts.list({ inDoubt: true })).toEqual([]);
  // Nothing happened under the key, so it may run again.
  expect(await subject.call()).toMatchObject({ ok: true, result: 'ch_2' });
});

it("counts not_committed after a handler's OutcomeUnknownError: a transient failure, retried", async () => {
  const subject = charge('unknown', () => 'not_committed');
  expect(await subject.call()).toMatchObject({ ok: true, result: 'ch_2', attempts: 2 });
  expect(subject.store.receipts.get('order-1')).toMatchObject({ status: 'succeeded', attempts: 2 });
});

it('keeps the evidence of a reconcile that settled a timeout or an OutcomeUnknownError', async () => {
  const committed = charge('hang', () => ({ status: 'committed', result: 'ch_1', evidence: { id: 'ch_1' } }));
  expect(await committed.call()).toMatchObject({ ok: true, reconciled: { window: 'attempt_timeout' } });
  expect(committed.store.receipts.get('order-1')).toMatchObject({
    status: 'succeeded',
    settledBy: 'reconcile',
    evidence: { id: 'ch_1' },
  });
  const unknown = charge('unknown', () => ({ status: 'unknown', evidence: { bank: 'timed out' } }));
  expect(await unknown.call()).toMatchObject({
    ok: false,
    kind: 'outcome_unknown',
    window: 'handler_unknown',
  });
  expect(unknown.store.receipts.get('order-1')).toMatchObject({
    status: 'in_doubt',
    window: 'handler_unknown',
    evidence: { bank: 'timed out' },
  });
});
