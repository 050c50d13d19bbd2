// Reconcile before retry (issue 24, items 1-3 and 8): an unknown outcome is asked about once
// before anything runs the tool again, and `outcome_unknown` explains itself.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createDispatcher,
  defaultStack,
  OutcomeUnknownError,
  ToolRegistry,
  toToolMessage,
  type DispatchError,
  type Outcome,
  type ReconcileContext,
  type ReconcileVerdict,
} from '../index.js';
import { gate } from './helpers/gate.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const schema = z.object({ amount: z.number() });

/** A charge tool whose handler never answers (a hung upstream) unless told otherwise. */
function bank(options: {
  idempotent?: boolean;
  handler?: () => unknown;
  reconcile?: (args: { amount: number }, ctx: ReconcileContext) => unknown;
  reconcileTimeoutMs?: number;
}) {
  const log: string[] = [];
  const registry = new ToolRegistry().register({
    name: 'payments.charge',
    inputSchema: schema,
    idempotent: options.idempotent ?? false,
    timeoutMs: 1_000,
    handler: () => {
      log.push('handler');
      return options.handler === undefined ? new Promise<never>(() => {}) : options.handler();
    },
    ...(options.reconcile === undefined
      ? {}
      : {
          reconcile: async (args: { amount: number }, ctx: ReconcileContext) => {
            log.push(`reconcile:${ctx.window}`);
            return (await options.reconcile?.(args, ctx)) as ReconcileVerdict;
          },
        }),
    ...(options.reconcileTimeoutMs === undefined ? {} : { reconcileTimeoutMs: options.reconcileTimeoutMs }),
  });
  const dispatcher = createDispatcher(defaultStack({ registry, retry: { random: () => 0 } }));
  return { dispatcher, log };
}

async function settle(promise: Promise<Outcome>): Promise<Outcome> {
  await vi.runAllTimersAsync();
  return promise;
}

function failure(outcome: Outcome): DispatchError {
  if (outcome.ok) throw new Error('expected a failure');
  return outcome;
}

describe('reconcile before retry', () => {
  it('turns a timed-out charge that the bank committed into a success, with reconciled', async () => {
    const seen: ReconcileContext[] = [];
    const { dispatcher, log } = bank({
      reconcile: (_args, ctx) => {
        seen.push(ctx);
        return { status: 'committed', result: { id: 'ch_1' }, evidence: { id: 'ch_1' } };
      },
    });
    const outcome = await settle(
      dispatcher.dispatch('payments.charge', { amount: 5 }, { idempotencyKey: 'order-1', callId: 'c1' }),
    );
    expect(outcome).toEqual({
      ok: true,
      result: { id: 'ch_1' },
      attempts: 1,
      reconciled: { window: 'attempt_timeout' },
    });
    expect(log).toEqual(['handler', 'reconcile:attempt_timeout']);
    expect(seen[0]).toMatchObject({ idempotencyKey: 'order-1', callId: 'c1', attempt: 1 });
    expect(seen[0]?.signal.aborted).toBe(false);
  });

  it('serves a reconciled success again for its key, as any success', async () => {
    const { dispatcher, log } = bank({ reconcile: () => 'committed' });
    const key = { idempotencyKey: 'order-2' };
    expect(await settle(dispatcher.dispatch('payments.charge', { amount: 5 }, key))).toMatchObject({
      ok: true,
      result: undefined,
    });
    expect(await dispatcher.dispatch('payments.charge', { amount: 5 }, key)).toMatchObject({ attempts: 0 });
    expect(log).toEqual(['handler', 'reconcile:attempt_timeout']);
  });

  it('asks before it retries an idempotent tool, and retries on not_committed', async () => {
    let runs = 0;
    const { dispatcher, log } = bank({
      idempotent: true,
      handler: () => (++runs === 1 ? new Promise<never>(() => {}) : 'charged'),
      reconcile: () => 'not_committed',
    });
    const outcome = await settle(dispatcher.dispatch('payments.charge', { amount: 5 }));
    expect(outcome).toEqual({ ok: true, result: 'charged', attempts: 2 });
    expect(log).toEqual(['handler', 'reconcile:attempt_timeout', 'handler']);
  });

  it('keeps a non-idempotent timeout a timeout when the bank says not_committed', async () => {
    const { dispatcher, log } = bank({ reconcile: () => ({ status: 'not_committed' }) });
    const outcome = failure(await settle(dispatcher.dispatch('payments.charge', { amount: 5 })));
    expect(outcome).toMatchObject({ kind: 'timeout', attempts: 1 });
    expect(log).toEqual(['handler', 'reconcile:attempt_timeout']);
  });

  it.each([
    ['answers unknown', () => 'unknown', /reconcile answered unknown/],
    [
      'throws',
      () => {
        throw new Error('bank API down');
      },
      /reconcile failed: bank API down/,
    ],
    ['never answers', () => new Promise(() => {}), /no answer within 500 ms/],
  ])('fails with outcome_unknown, never retried, when reconcile %s', async (_name, reconcile, message) => {
    const { dispatcher, log } = bank({ idempotent: true, reconcile, reconcileTimeoutMs: 500 });
    const outcome = failure(await settle(dispatcher.dispatch('payments.charge', { amount: 5 })));
    expect(outcome).toMatchObject({ kind: 'outcome_unknown', window: 'attempt_timeout', attempts: 1 });
    expect(outcome.message).toMatch(message);
    expect(log).toEqual(['handler', 'reconcile:attempt_timeout']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('gives reconcile a signal that aborts when the caller does', async () => {
    const asked = gate<void>();
    let signal: AbortSignal | undefined;
    const { dispatcher } = bank({
      reconcile: (_args, ctx) => {
        signal = ctx.signal;
        asked.open();
        return new Promise(() => {});
      },
    });
    const caller = new AbortController();
    const pending = dispatcher.dispatch('payments.charge', { amount: 5 }, { signal: caller.signal });
    await vi.advanceTimersByTimeAsync(1_000);
    await asked.promise;
    caller.abort();
    expect(signal?.aborted).toBe(true);
    expect(failure(await settle(pending)).kind).toBe('cancelled');
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('OutcomeUnknownError', () => {
  it('fails at once with outcome_unknown (window handler_unknown), never retried', async () => {
    const { dispatcher, log } = bank({
      idempotent: true,
      handler: () => {
        throw new OutcomeUnknownError('sent, no answer');
      },
    });
    const outcome = failure(await settle(dispatcher.dispatch('payments.charge', { amount: 5 })));
    expect(outcome).toMatchObject({
      kind: 'outcome_unknown',
      window: 'handler_unknown',
      attempts: 1,
      jsonrpcCode: -32603,
      message: 'sent, no answer',
    });
    expect(log).toEqual(['handler']);
    expect(outcome.toJSON()).toMatchObject({ kind: 'outcome_unknown', window: 'handler_unknown' });
    expect(outcome.toJsonRpcError().data).toEqual({
      kind: 'outcome_unknown',
      attempts: 1,
      window: 'handler_unknown',
    });
    expect(toToolMessage(outcome)).toMatch(/may have happened: do not repeat it, not even under a new/);
  });

  it('is reconciled first when the tool has reconcile', async () => {
    const { dispatcher, log } = bank({
      handler: () => Promise.reject(new OutcomeUnknownError('connection reset after the write')),
      reconcile: () => ({ status: 'committed', result: 'ch_9' }),
    });
    const outcome = await settle(dispatcher.dispatch('payments.charge', { amount: 5 }));
    expect(outcome).toEqual({
      ok: true,
      result: 'ch_9',
      attempts: 1,
      reconciled: { window: 'handler_unknown' },
    });
    expect(log).toEqual(['handler', 'reconcile:handler_unknown']);
  });
});

describe('bad input', () => {
  it('rejects a bad reconcile or reconcileTimeoutMs with a TypeError naming it', () => {
    const base = { name: 'a.b', inputSchema: schema, handler: () => 1 };
    expect(() => new ToolRegistry().register({ ...base, reconcile: 'yes' as never })).toThrow(/reconcile of/);
    expect(() =>
      new ToolRegistry().register({ ...base, reconcile: () => 'unknown', reconcileTimeoutMs: 0 }),
    ).toThrow(/reconcileTimeoutMs/);
  });

  it('fails a bad idempotencyTtlMs with a schema envelope', async () => {
    const { dispatcher } = bank({ handler: () => 1 });
    const outcome = failure(
      await dispatcher.dispatch(
        'payments.charge',
        { amount: 5 },
        { idempotencyKey: 'k', idempotencyTtlMs: -1 },
      ),
    );
    expect(outcome).toMatchObject({ kind: 'schema', attempts: 0 });
    expect(outcome.message).toMatch(/idempotencyTtlMs/);
  });
});

describe('idempotencyTtlMs', () => {
  it('serves the success for the call’s own TTL instead of the layer’s', async () => {
    let runs = 0;
    const { dispatcher } = bank({ handler: () => ++runs });
    const options = { idempotencyKey: 'long', idempotencyTtlMs: 3_600_000 };
    await dispatcher.dispatch('payments.charge', { amount: 5 }, options);
    await vi.advanceTimersByTimeAsync(3_000_000); // past the layer's 60 s
    expect(await dispatcher.dispatch('payments.charge', { amount: 5 }, options)).toMatchObject({
      attempts: 0,
    });
    await vi.advanceTimersByTimeAsync(600_000);
    expect(await dispatcher.dispatch('payments.charge', { amount: 5 }, options)).toMatchObject({
      attempts: 1,
    });
    expect(runs).toBe(2);
  });
});
