// Receipts (issue 24, items 3-4): every keyed execution leaves one, and a receipt in doubt keeps
// its key from running again.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createDispatcher,
  defaultStack,
  OutcomeUnknownError,
  ToolRegistry,
  type DefaultStackOptions,
  type Outcome,
  type ReconcileVerdict,
} from '../../index.js';
import { memoryIdempotencyStore, memoryReceiptStore } from '../../middleware/index.js';
import { lapsingIdempotencyStore } from '../helpers/lapsing-idempotency-store.js';
import { fingerprint } from '../../src/fingerprint.js';
import type { Receipt, ReceiptStore } from '../../index.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const key = { idempotencyKey: 'order-1' };

function charge(options: {
  handler: () => unknown;
  reconcile?: () => ReconcileVerdict;
  idempotency?: DefaultStackOptions['idempotency'];
}) {
  let runs = 0;
  const registry = new ToolRegistry().register({
    name: 'payments.charge',
    inputSchema: z.object({ amount: z.number() }),
    timeoutMs: 1_000,
    handler: () => {
      runs += 1;
      return options.handler();
    },
    ...(options.reconcile === undefined ? {} : { reconcile: options.reconcile }),
  });
  const store = memoryIdempotencyStore();
  const dispatcher = createDispatcher(
    defaultStack({ registry, idempotency: options.idempotency ?? { store } }),
  );
  const send = async (): Promise<Outcome> => {
    const pending = dispatcher.dispatch('payments.charge', { amount: 5 }, key);
    await vi.runAllTimersAsync();
    return pending;
  };
  return { send, store, runs: () => runs };
}

const hang = () => new Promise<never>(() => {});

describe('receipts in the memory store', () => {
  it('leaves a succeeded receipt per execution, and none for a hit', async () => {
    const { send, store } = charge({ handler: () => 'ch_1' });
    await send();
    const first = store.receipts.get('order-1');
    expect(first).toMatchObject({
      key: 'order-1',
      tool: 'payments.charge',
      status: 'succeeded',
      attempts: 1,
      settledBy: 'handler',
    });
    await send();
    expect(store.receipts.get('order-1')).toBe(first);
  });

  it('marks a timed-out charge in doubt, and answers the same key with outcome_unknown without running it', async () => {
    const { send, store, runs } = charge({ handler: hang });
    expect(await send()).toMatchObject({ ok: false, kind: 'timeout' });
    expect(store.receipts.list({ inDoubt: true })).toEqual([
      expect.objectContaining({ key: 'order-1', status: 'in_doubt', window: 'attempt_timeout' }),
    ]);
    expect(await send()).toMatchObject({ ok: false, kind: 'outcome_unknown', window: 'attempt_timeout' });
    expect(runs()).toBe(1);
  });

  it('marks an OutcomeUnknownError in doubt with its window', async () => {
    const { send, store, runs } = charge({
      handler: () => {
        throw new OutcomeUnknownError('sent, no answer');
      },
    });
    expect(await send()).toMatchObject({ kind: 'outcome_unknown', window: 'handler_unknown' });
    expect(store.receipts.get('order-1')).toMatchObject({ status: 'in_doubt', window: 'handler_unknown' });
    expect(await send()).toMatchObject({ kind: 'outcome_unknown', window: 'handler_unknown' });
    expect(runs()).toBe(1);
  });

  it('reconciles a key left in doubt before running it again', async () => {
    let verdict: ReconcileVerdict = 'unknown';
    const { send, store, runs } = charge({ handler: hang, reconcile: () => verdict });
    expect(await send()).toMatchObject({ kind: 'outcome_unknown', window: 'attempt_timeout' });
    verdict = { status: 'committed', result: 'ch_1', evidence: { id: 'ch_1' } };
    expect(await send()).toEqual({
      ok: true,
      result: 'ch_1',
      attempts: 0,
      reconciled: { window: 'attempt_timeout' },
    });
    expect(store.receipts.get('order-1')).toMatchObject({
      status: 'succeeded',
      settledBy: 'reconcile',
      evidence: { id: 'ch_1' },
    });
    expect(runs()).toBe(1);
  });

  it("reconciles a crashed leader's running receipt (window leader_crashed) once its lease ends", async () => {
    const store = lapsingIdempotencyStore({ leaseMs: 300 });
    // A leader that claimed the key, left its running receipt and crashed.
    store.claim('order-1', fingerprint('payments.charge', { amount: 5 }), { tool: 'payments.charge' });
    let runs = 0;
    const registry = new ToolRegistry().register({
      name: 'payments.charge',
      inputSchema: z.object({ amount: z.number() }),
      handler: () => `run ${++runs}`,
      reconcile: () => ({ status: 'committed', result: 'charged before the crash' }),
    });
    const dispatcher = createDispatcher(defaultStack({ registry, idempotency: { store } }));
    const pending = dispatcher.dispatch('payments.charge', { amount: 5 }, key);
    await vi.advanceTimersByTimeAsync(301);
    expect(await pending).toMatchObject({
      ok: true,
      result: 'charged before the crash',
      reconciled: { window: 'leader_crashed' },
    });
    expect(runs).toBe(0);
  });
});

describe('an attached receipt store', () => {
  it('gets one record per settled keyed call, none for a hit, never before the handler', async () => {
    const inner = memoryReceiptStore();
    const records: Receipt[] = [];
    const receipts: ReceiptStore = {
      get: (k) => inner.get(k),
      list: (query) => inner.list(query),
      record: (receipt) => {
        records.push(receipt);
        return Promise.resolve();
      },
    };
    const { send } = charge({ handler: () => 'ch_1', idempotency: { receipts } });
    await send();
    await send();
    expect(records).toEqual([expect.objectContaining({ status: 'succeeded', attempts: 1 })]);
  });

  it('keeps a key in doubt with an attached receipt store: the same key is outcome_unknown, not run again', async () => {
    const receipts = memoryReceiptStore();
    const { send, runs } = charge({ handler: hang, idempotency: { receipts } });
    expect(await send()).toMatchObject({ kind: 'timeout' });
    expect(await send()).toMatchObject({ kind: 'outcome_unknown', window: 'attempt_timeout' });
    expect(runs()).toBe(1);
    expect(receipts.list({ inDoubt: true })).toEqual([expect.objectContaining({ key: 'order-1' })]);
  });

  it('rejects bad options with a TypeError naming them', () => {
    expect(() => memoryReceiptStore({ ttlMs: 0 })).toThrow(/ttlMs/);
    expect(() => memoryReceiptStore({ maxEntries: 0 })).toThrow(/maxEntries/);
    expect(() => charge({ handler: () => 1, idempotency: { receipts: {} as never } })).toThrow(/receipts/);
  });
});

describe('memoryReceiptStore', () => {
  it('keeps the latest receipt per key, most recent first, within ttlMs and maxEntries', async () => {
    const receipts = memoryReceiptStore({ ttlMs: 1_000, maxEntries: 2 });
    const receipt = (k: string, status: Receipt['status']): Receipt => ({
      key: k,
      tool: 't.x',
      status,
      attempts: 1,
      startedAt: 0,
    });
    receipts.record(receipt('a', 'running'));
    receipts.record(receipt('a', 'in_doubt'));
    receipts.record(receipt('b', 'succeeded'));
    expect(receipts.list().map((r) => `${r.key}:${r.status}`)).toEqual(['b:succeeded', 'a:in_doubt']);
    receipts.record(receipt('c', 'failed'));
    expect(receipts.get('a')).toBeUndefined();
    expect(receipts.list({ status: 'failed', tool: 't.x' })).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(receipts.list()).toEqual([]);
  });
});
