import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createBudget,
  createDispatcher,
  errorMapping,
  retry,
  timeout,
  ToolRegistry,
  toolLookup,
  TransientError,
  type DispatchEvent,
  type RetryOptions,
  type ToolHandler,
} from '../../index.js';
import { flush } from '../helpers/gate.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

function withRetry(
  handler: ToolHandler<Record<string, never>>,
  options: RetryOptions = {},
  idempotent = false,
) {
  const events: DispatchEvent[] = [];
  const startedAt: number[] = [];
  const registry = new ToolRegistry().register({
    name: 'flaky.op',
    inputSchema: z.object({}),
    idempotent,
    handler: (args, ctx) => {
      startedAt.push(Date.now());
      return handler(args, ctx);
    },
  });
  const dispatcher = createDispatcher(
    [errorMapping(), toolLookup(registry), retry(options), timeout({ defaultMs: 1_000 })],
    {
      onEvent: (event) => events.push(event),
    },
  );
  return { dispatcher, events, startedAt };
}

const alwaysTransient = () => {
  throw new TransientError('busy');
};

describe('retry', () => {
  it.each([
    [0, [0, 100, 500]],
    [0.999_999, [0, 149.999_95, 749.999_8]],
  ])('waits 100 ms × 4^(n−1) × (1 + U × 0.5) with U = %s', async (u, expected) => {
    const { dispatcher, startedAt } = withRetry(alwaysTransient, { random: () => u });
    const t0 = Date.now();
    const pending = dispatcher.dispatch('flaky.op', {});
    await vi.runAllTimersAsync();
    await pending;
    startedAt.forEach((t, i) => expect(t - t0).toBeCloseTo(Math.floor(expected[i] ?? 0), -1));
  });

  it('reports delayMs and kind in dispatch.retry', async () => {
    const { dispatcher, events } = withRetry(alwaysTransient, { random: () => 0.5 });
    const pending = dispatcher.dispatch('flaky.op', {});
    await vi.runAllTimersAsync();
    await pending;
    expect(events.filter((e) => e.type === 'dispatch.retry').map((e) => [e.delayMs, e.kind])).toEqual([
      [125, 'transient'],
      [500, 'transient'],
    ]);
  });

  it('counts maxAttempts as attempts, not retries', async () => {
    const { dispatcher, startedAt } = withRetry(alwaysTransient, { maxAttempts: 5, baseDelayMs: 0 });
    const outcome = await dispatcher.dispatch('flaky.op', {});
    expect(outcome).toMatchObject({ kind: 'transient', attempts: 5 });
    expect(startedAt).toHaveLength(5);
  });

  it('waits at least a TransientError’s retryAfterMs, capped by maxDelayMs', async () => {
    let calls = 0;
    const { dispatcher, events } = withRetry(
      () => {
        calls += 1;
        throw new TransientError('slow down', { retryAfterMs: calls === 1 ? 2_000 : 90_000 });
      },
      { random: () => 0, maxDelayMs: 10_000 },
    );
    const pending = dispatcher.dispatch('flaky.op', {});
    await vi.runAllTimersAsync();
    await pending;
    expect(events.filter((e) => e.type === 'dispatch.retry').map((e) => e.delayMs)).toEqual([2_000, 10_000]);
  });

  it('caps every wait at maxDelayMs', async () => {
    const { dispatcher, events } = withRetry(alwaysTransient, {
      maxAttempts: 4,
      baseDelayMs: 1_000,
      factor: 10,
      maxDelayMs: 5_000,
      random: () => 0,
    });
    const pending = dispatcher.dispatch('flaky.op', {});
    await vi.runAllTimersAsync();
    await pending;
    expect(events.filter((e) => e.type === 'dispatch.retry').map((e) => e.delayMs)).toEqual([
      1_000, 5_000, 5_000,
    ]);
  });

  it.each([
    [
      'internal',
      () => {
        throw new Error('bug');
      },
    ],
    [
      'internal',
      () => {
        throw 'a string';
      },
    ],
  ])('does not retry %s failures', async (kind, handler) => {
    const { dispatcher, startedAt } = withRetry(handler);
    expect(await dispatcher.dispatch('flaky.op', {})).toMatchObject({ kind, attempts: 1 });
    expect(startedAt).toHaveLength(1);
  });

  it('retries timeouts of idempotent tools only', async () => {
    const hang = () => new Promise<never>(() => {});
    const write = withRetry(hang, {}, false);
    const read = withRetry(hang, {}, true);
    const a = write.dispatcher.dispatch('flaky.op', {});
    const b = read.dispatcher.dispatch('flaky.op', {});
    await vi.runAllTimersAsync();
    expect(await a).toMatchObject({ kind: 'timeout', attempts: 1 });
    expect(await b).toMatchObject({ kind: 'timeout', attempts: 3 });
  });

  it('takes a custom shouldRetry', async () => {
    const { dispatcher, startedAt } = withRetry(
      () => {
        throw new Error('retry me anyway');
      },
      {
        baseDelayMs: 0,
        shouldRetry: (error) => error.kind === 'internal',
      },
    );
    await dispatcher.dispatch('flaky.op', {});
    expect(startedAt).toHaveLength(3);
  });

  it('stops before a retry the budget cannot pay for', async () => {
    const { dispatcher, startedAt, events } = withRetry(alwaysTransient);
    const budget = createBudget(2);
    const pending = dispatcher.dispatch('flaky.op', {}, { budget });
    await vi.runAllTimersAsync();
    expect(await pending).toMatchObject({ kind: 'budget_exceeded', attempts: 2 });
    expect(startedAt).toHaveLength(2);
    expect(events.filter((e) => e.type === 'dispatch.retry')).toHaveLength(1);
  });

  it('ends the backoff at once when the caller aborts', async () => {
    const { dispatcher, startedAt } = withRetry(alwaysTransient);
    const caller = new AbortController();
    const pending = dispatcher.dispatch('flaky.op', {}, { signal: caller.signal });
    await flush();
    caller.abort(new Error('user pressed stop'));
    expect(await pending).toMatchObject({ kind: 'cancelled', attempts: 1 });
    expect(startedAt).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it.each([
    ['maxAttempts', { maxAttempts: 0 }],
    ['maxAttempts', { maxAttempts: 1.5 }],
    ['maxAttempts', { maxAttempts: Number.NaN }],
    ['baseDelayMs', { baseDelayMs: -1 }],
    ['factor', { factor: 0.5 }],
    ['jitter', { jitter: -0.1 }],
    ['maxDelayMs', { maxDelayMs: -5 }],
    ['random', { random: 0.5 }],
    ['shouldRetry', { shouldRetry: true }],
    ['clock', { clock: {} }],
  ])('rejects a bad %s with a TypeError naming it', (name, options) => {
    expect(() => retry(options as never)).toThrow(TypeError);
    expect(() => retry(options as never)).toThrow(new RegExp(name));
  });

  it('is a named async function', () => {
    expect(retry().name).toBe('retry');
  });
});
