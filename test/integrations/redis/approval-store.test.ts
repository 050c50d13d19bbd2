// redisApprovalStore on its own redis-server: two workers share requests and answers, and an
// approved token delivered to both runs the handler once (its run is claimed in Redis).

import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { approvalGate, createDispatcher, defaultStack, ToolRegistry, type Outcome } from '../../../index.js';
import { redisApprovalStore, redisIdempotencyStore } from '../../../integrations/redis/index.js';
import { redisSuitesEnabled } from '../../helpers/redis-server.js';
import { redisSuite } from '../../helpers/redis-suite.js';
import { until } from '../../stores/contract.js';

const enabled = redisSuitesEnabled('redis approval store');

describe.runIf(enabled)('redisApprovalStore on a real server', () => {
  const redis = redisSuite();
  const connect = () => redis.node();

  // One worker: its own registry, gate, idempotency layer and connection, sharing Redis.
  async function worker(prefix: string, runs: string[], name: string, hold?: Promise<void>) {
    const { store } = await connect();
    const registry = new ToolRegistry().register({
      name: 'payments.refund',
      inputSchema: z.object({ amount: z.number() }),
      requiresApproval: true,
      handler: async ({ amount }) => {
        runs.push(name);
        await hold;
        return { refunded: amount };
      },
    });
    const gate = approvalGate({ registry, store: redisApprovalStore(store, { prefix }) });
    const dispatcher = createDispatcher(
      defaultStack({
        registry,
        approval: gate,
        idempotency: { store: redisIdempotencyStore(store, { prefix }) },
      }),
    );
    return { gate, dispatcher };
  }

  const tokenOf = (outcome: Outcome) => {
    if (outcome.ok || outcome.approval === undefined)
      throw new Error(`expected approval_required, got ${JSON.stringify(outcome)}`);
    return outcome.approval.token;
  };

  it('runs a token approved on one worker once, delivered to both at once and again later', async () => {
    const prefix = `t-${randomUUID()}`;
    const runs: string[] = [];
    let release = () => {};
    const hold = new Promise<void>((resolve) => (release = resolve));
    const a = await worker(prefix, runs, 'a', hold);
    const b = await worker(prefix, runs, 'b', hold);
    const token = tokenOf(await a.dispatcher.dispatch('payments.refund', { amount: 500 }, { callId: 'c-1' }));
    // The same call sent again to the other worker gets its token back.
    expect(tokenOf(await b.dispatcher.dispatch('payments.refund', { amount: 500 }, { callId: 'c-1' }))).toBe(
      token,
    );
    expect(await b.gate.approve(token, { by: 'ana' })).toBe(true);
    expect(await a.gate.approve(token, { by: 'ana' })).toBe(true);
    // The run is claimed in the store: a delivery to the other worker while it runs is refused.
    const onA = a.dispatcher.dispatch('payments.refund', { amount: 500 }, { approval: token });
    await until(() => runs.length === 1);
    const onB = await b.dispatcher.dispatch('payments.refund', { amount: 500 }, { approval: token });
    expect(onB.ok ? 'ran' : onB.kind).toBe('idempotency_result_unavailable');
    release();
    expect(await onA).toMatchObject({ ok: true, result: { refunded: 500 }, attempts: 1 });
    // Later deliveries, to either worker, get the recorded outcome.
    for (const { dispatcher } of [a, b]) {
      const later = await dispatcher.dispatch('payments.refund', { amount: 500 }, { approval: token });
      expect(later).toMatchObject({ ok: true, result: { refunded: 500 }, attempts: 0 });
    }
    expect(runs).toEqual(['a']);
  });

  it('keeps a deny final across workers and refuses a token bound to other args', async () => {
    const prefix = `t-${randomUUID()}`;
    const runs: string[] = [];
    const a = await worker(prefix, runs, 'a');
    const b = await worker(prefix, runs, 'b');
    const token = tokenOf(
      await a.dispatcher.dispatch('payments.refund', { amount: 900 }, { idempotencyKey: 'k-9' }),
    );
    const other = await b.dispatcher.dispatch(
      'payments.refund',
      { amount: 901 },
      { idempotencyKey: 'k-9', approval: token },
    );
    expect(other.ok === false && other.kind).toBe('idempotency_conflict');
    expect(await b.gate.deny(token, 'over the limit')).toBe(true);
    expect(await b.gate.deny(token, 'over the limit')).toBe(true);
    expect(await a.gate.approve(token)).toBe(false);
    const denied = await a.dispatcher.dispatch(
      'payments.refund',
      { amount: 900 },
      { idempotencyKey: 'k-9', approval: token },
    );
    expect(denied.ok === false && [denied.kind, denied.message.includes('over the limit')]).toEqual([
      'approval_denied',
      true,
    ]);
    // A denied call asks afresh: a new request, a new token.
    const again = tokenOf(
      await b.dispatcher.dispatch('payments.refund', { amount: 900 }, { idempotencyKey: 'k-9' }),
    );
    expect(again).not.toBe(token);
    expect(runs).toEqual([]);
  });
});
