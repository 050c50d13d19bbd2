import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createBudget,
  createDispatcher,
  defaultStack,
  DispatchError,
  errorMapping,
  retry,
  timeout,
  ToolRegistry,
  toolLookup,
  TransientError,
  type Budget,
  type Middleware,
} from '../../index.js';
import { flush, gate, type Gate } from '../helpers/gate.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** A shared budget as a store would keep it: every take answers with a promise. */
function sharedBudget(limit: number, options: { hold?: boolean } = {}) {
  let remaining = limit;
  const takes: Array<{ units: number; attemptId: string | undefined }> = [];
  const held: Array<Gate<void>> = [];
  let down = false;
  const budget: Budget & { setDown(value: boolean): void } = {
    get remaining() {
      return remaining;
    },
    limit,
    async tryConsume(units = 1, attemptId?: string) {
      takes.push({ units, attemptId });
      if (options.hold === true) {
        const g = gate();
        held.push(g);
        await g.promise;
      }
      await Promise.resolve();
      if (down) throw new DispatchError('store_unavailable', 'the budget store did not answer');
      if (remaining < units) return false;
      remaining -= units;
      return true;
    },
    setDown(value) {
      down = value;
    },
  };
  return { budget, takes, held };
}

function setup(handler: () => unknown, stack: 'default' | 'onion' = 'default') {
  const registry = new ToolRegistry().register({
    name: 'step.run',
    inputSchema: z.object({}),
    handler,
  });
  const layers: Middleware[] =
    stack === 'default'
      ? defaultStack({ registry, retry: { random: () => 0, baseDelayMs: 10 } })
      : [errorMapping(), toolLookup(registry), retry({ random: () => 0, baseDelayMs: 10 }), timeout()];
  return createDispatcher(layers);
}

describe.each(['default', 'onion'] as const)('a budget that answers with promises (%s stack)', (stack) => {
  it('takes one unit per attempt and refuses once it is spent', async () => {
    const { budget, takes } = sharedBudget(2);
    let runs = 0;
    const dispatcher = setup(() => ++runs, stack);
    expect(await dispatcher.dispatch('step.run', {}, { budget })).toEqual({
      ok: true,
      result: 1,
      attempts: 1,
    });
    expect(await dispatcher.dispatch('step.run', {}, { budget })).toEqual({
      ok: true,
      result: 2,
      attempts: 1,
    });
    expect(await dispatcher.dispatch('step.run', {}, { budget })).toMatchObject({
      ok: false,
      kind: 'budget_exceeded',
      attempts: 0,
    });
    expect(runs).toBe(2);
    expect(takes.every((take) => take.units === 1)).toBe(true);
  });

  it('takes a unit for every retry', async () => {
    const { budget } = sharedBudget(5);
    let runs = 0;
    const dispatcher = setup(() => {
      runs += 1;
      if (runs < 3) throw new TransientError('flaky');
      return 'third time';
    }, stack);
    const outcome = dispatcher.dispatch('step.run', {}, { budget });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await outcome).toEqual({ ok: true, result: 'third time', attempts: 3 });
    expect(budget.remaining).toBe(2);
  });

  it('fails closed with store_unavailable before the handler runs when the store cannot answer', async () => {
    const { budget } = sharedBudget(5);
    budget.setDown(true);
    let runs = 0;
    const dispatcher = setup(() => ++runs, stack);
    const outcome = dispatcher.dispatch('step.run', {}, { budget });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await outcome).toMatchObject({ ok: false, kind: 'store_unavailable', attempts: 0 });
    expect(runs).toBe(0);
  });

  it('runs the attempt once the store is back within the retries', async () => {
    const { budget } = sharedBudget(5);
    budget.setDown(true);
    let runs = 0;
    const dispatcher = setup(() => ++runs, stack);
    const outcome = dispatcher.dispatch('step.run', {}, { budget });
    await flush();
    budget.setDown(false);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await outcome).toEqual({ ok: true, result: 1, attempts: 1 });
  });

  it('does not start the handler when the caller aborts while the unit is being taken', async () => {
    const { budget, held } = sharedBudget(5, { hold: true });
    let runs = 0;
    const dispatcher = setup(() => ++runs, stack);
    const controller = new AbortController();
    const outcome = dispatcher.dispatch('step.run', {}, { budget, signal: controller.signal });
    await flush();
    controller.abort();
    expect(await outcome).toMatchObject({ ok: false, kind: 'cancelled' });
    held[0]?.open();
    await flush();
    expect(runs).toBe(0);
  });

  it('times the attempt out while the store holds the take', async () => {
    const { budget, held } = sharedBudget(5, { hold: true });
    let runs = 0;
    const dispatcher = setup(() => ++runs, stack);
    const outcome = dispatcher.dispatch('step.run', {}, { budget, timeoutMs: 50 });
    await vi.advanceTimersByTimeAsync(51);
    for (const g of held) g.open();
    await vi.advanceTimersByTimeAsync(1_000);
    for (const g of held) g.open();
    await vi.advanceTimersByTimeAsync(1_000);
    const final = await outcome;
    expect(final.ok).toBe(false);
    expect(runs).toBe(0);
  });
});

describe('createBudget', () => {
  it('still answers tryConsume at once', () => {
    const budget = createBudget(1);
    expect(budget.tryConsume()).toBe(true);
    expect(budget.tryConsume(1)).toBe(false);
  });
});
