// One test per bug of the lesson's reference design (SPEC §8), named after what broke there.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createBudget,
  createDispatcher,
  defaultStack,
  DispatchError,
  idempotency,
  ToolRegistry,
  TransientError,
} from '../../index.js';
import { flush, gate } from '../helpers/gate.js';
import { setup } from '../helpers/dispatcher.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('SPEC §8 regressions', () => {
  it('1: same-key calls queued behind a full semaphore run the handler once', async () => {
    const blocker = gate<string>();
    const { dispatcher, calls } = setup({
      stack: { concurrency: { max: 1 } },
      handler: ({ query }) => (query === 'block' ? blocker.promise : 'charged'),
    });
    const busy = dispatcher.dispatch('search.web', { query: 'block' });
    const first = dispatcher.dispatch('search.web', { query: 'pay' }, { idempotencyKey: 'charge-1' });
    const second = dispatcher.dispatch('search.web', { query: 'pay' }, { idempotencyKey: 'charge-1' });
    await flush();
    blocker.open('unblocked');
    const outcomes = await Promise.all([busy, first, second]);
    expect(calls.filter((c) => c.query === 'pay')).toHaveLength(1);
    expect(outcomes.map((o) => o.ok && o.attempts)).toEqual([1, 1, 0]);
  });

  it('2: a cancelled leader does not leave its followers waiting', async () => {
    const release = gate<string>();
    const { dispatcher } = setup({ handler: () => release.promise });
    const leaderCaller = new AbortController();
    const leader = dispatcher.dispatch(
      'search.web',
      { query: 'x' },
      { idempotencyKey: 'k', signal: leaderCaller.signal },
    );
    const follower = dispatcher.dispatch('search.web', { query: 'x' }, { idempotencyKey: 'k' });
    await flush();
    leaderCaller.abort();
    await leader;
    release.open('done');
    await expect(follower).resolves.toMatchObject({ ok: true, result: 'done' });
  });

  it('3: a handler that throws a timeout error itself is not a dispatcher timeout', async () => {
    const timeoutLike = Object.assign(new Error('socket timeout'), { name: 'TimeoutError' });
    for (const thrown of [
      timeoutLike,
      new DOMException('upstream', 'TimeoutError'),
      new DispatchError('timeout', 'x'),
    ]) {
      const { dispatcher, calls } = setup({
        idempotent: true,
        handler: () => {
          throw thrown;
        },
      });
      const outcome = await dispatcher.dispatch('search.web', { query: 'x' });
      expect(outcome.ok ? 'ok' : outcome.kind).toBe('internal');
      expect(calls).toHaveLength(1);
    }
  });

  it('4: the budget is decremented per attempt, so the retry loop respects it', async () => {
    const { dispatcher, calls } = setup({
      handler: () => {
        throw new TransientError('busy');
      },
    });
    const budget = createBudget(1);
    const pending = dispatcher.dispatch('search.web', { query: 'x' }, { budget });
    await vi.runAllTimersAsync();
    const outcome = await pending;
    expect(outcome.ok ? 'ok' : [outcome.kind, outcome.attempts]).toEqual(['budget_exceeded', 1]);
    expect(budget.remaining).toBe(0);
    expect(calls).toHaveLength(1);
  });

  it('5: expired cache entries are evicted, so memory stays bounded', async () => {
    const layer = idempotency({ ttlMs: 10, maxEntries: 1_000 });
    const registry = new ToolRegistry().register({
      name: 'a.b',
      inputSchema: z.object({}),
      handler: () => 1,
    });
    const stack = defaultStack({ registry });
    stack.splice(4, 1, layer);
    const dispatcher = createDispatcher(stack);
    for (let i = 0; i < 5_000; i++) {
      await dispatcher.dispatch('a.b', {}, { idempotencyKey: `k${i}` });
      if (i % 100 === 0) await vi.advanceTimersByTimeAsync(10);
    }
    expect(layer.size().cached).toBeLessThanOrEqual(100);
  });

  it('6: timeouts are tested on a fake clock, never by racing real sleeps', async () => {
    const { dispatcher } = setup({
      idempotent: false,
      timeoutMs: 5,
      handler: () => new Promise<never>(() => {}),
    });
    const pending = dispatcher.dispatch('search.web', { query: 'x' });
    await vi.advanceTimersByTimeAsync(4);
    let settled = false;
    void pending.then(() => {
      settled = true;
    });
    await flush();
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await expect(pending).resolves.toMatchObject({ kind: 'timeout' });
  });
});
