// The lesson's reference test cases, re-expressed on a fake clock with gated handlers.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TransientError, type Outcome } from '../index.js';
import { flush, gate } from './helpers/gate.js';
import { setup } from './helpers/dispatcher.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const kindOf = (outcome: Outcome) => (outcome.ok ? 'ok' : outcome.kind);
const hang = () => new Promise<never>(() => {});

describe('the lesson’s reference cases', () => {
  it('1. a handler slower than its timeout fails with timeout', async () => {
    const { dispatcher } = setup({ idempotent: false, timeoutMs: 5_000, handler: hang });
    const pending = dispatcher.dispatch('search.web', { query: 'x' });
    await vi.advanceTimersByTimeAsync(5_000);
    expect(kindOf(await pending)).toBe('timeout');
  });

  it('2. a transient error is retried and then succeeds', async () => {
    let failures = 1;
    const { dispatcher } = setup({
      handler: () => {
        if (failures-- > 0) throw new TransientError('x');
        return 'ok';
      },
    });
    const pending = dispatcher.dispatch('search.web', { query: 'x' });
    await vi.runAllTimersAsync();
    expect(await pending).toEqual({ ok: true, result: 'ok', attempts: 2 });
  });

  it('3. a transient error on every attempt stops after three attempts', async () => {
    const { dispatcher, calls } = setup({
      handler: () => {
        throw new TransientError('x');
      },
    });
    const pending = dispatcher.dispatch('search.web', { query: 'x' });
    await vi.runAllTimersAsync();
    expect(await pending).toMatchObject({ kind: 'transient', attempts: 3 });
    expect(calls).toHaveLength(3);
  });

  it('4. a schema error is never retried', async () => {
    const { dispatcher, calls } = setup();
    expect(await dispatcher.dispatch('search.web', { query: 3 })).toMatchObject({
      kind: 'schema',
      attempts: 0,
    });
    expect(calls).toHaveLength(0);
  });

  it('5. an unknown tool is not_found', async () => {
    const { dispatcher } = setup();
    expect(await dispatcher.dispatch('db.drop_everything', {})).toMatchObject({
      kind: 'not_found',
      jsonrpcCode: -32601,
    });
  });

  it('6. two concurrent calls with the same key collapse into one handler call', async () => {
    const release = gate<string>();
    const { dispatcher, calls } = setup({ handler: () => release.promise });
    const both = Promise.all([
      dispatcher.dispatch('search.web', { query: 'x' }, { idempotencyKey: 'k' }),
      dispatcher.dispatch('search.web', { query: 'x' }, { idempotencyKey: 'k' }),
    ]);
    await flush();
    release.open('once');
    expect((await both).map((o) => o.ok && o.result)).toEqual(['once', 'once']);
    expect(calls).toHaveLength(1);
  });

  it('7. a late retry within 60 s gets the cached result', async () => {
    const { dispatcher, calls } = setup();
    await dispatcher.dispatch('search.web', { query: 'x' }, { idempotencyKey: 'k' });
    await vi.advanceTimersByTimeAsync(30_000);
    expect(await dispatcher.dispatch('search.web', { query: 'x' }, { idempotencyKey: 'k' })).toMatchObject({
      attempts: 0,
    });
    expect(calls).toHaveLength(1);
  });

  it('8. after 60 s the key runs again', async () => {
    const { dispatcher, calls } = setup();
    await dispatcher.dispatch('search.web', { query: 'x' }, { idempotencyKey: 'k' });
    await vi.advanceTimersByTimeAsync(60_000);
    await dispatcher.dispatch('search.web', { query: 'x' }, { idempotencyKey: 'k' });
    expect(calls).toHaveLength(2);
  });

  it('9. forty fanned-out calls never run more than eight at once', async () => {
    let running = 0;
    let peak = 0;
    const { dispatcher } = setup({
      handler: async () => {
        running += 1;
        peak = Math.max(peak, running);
        await new Promise((resolve) => setTimeout(resolve, 10));
        running -= 1;
        return 'ok';
      },
    });
    const pending = dispatcher.gatherBounded(
      Array.from({ length: 40 }, (_, i) => ({ name: 'search.web', args: { query: `${i}` } })),
      { concurrency: 40 },
    );
    await vi.runAllTimersAsync();
    expect((await pending).every((o) => o.ok)).toBe(true);
    expect(peak).toBe(8);
  });

  it('10. a spent budget fails fast before any attempt', async () => {
    const { dispatcher, calls } = setup();
    expect(await dispatcher.dispatch('search.web', { query: 'x' }, { budget: 0 })).toMatchObject({
      kind: 'budget_exceeded',
      attempts: 0,
    });
    expect(calls).toHaveLength(0);
  });

  it('11. a timed-out non-idempotent write is not retried', async () => {
    const { dispatcher, calls } = setup({ idempotent: false, timeoutMs: 100, handler: hang });
    const pending = dispatcher.dispatch('search.web', { query: 'x' });
    await vi.runAllTimersAsync();
    expect(await pending).toMatchObject({ kind: 'timeout', attempts: 1 });
    expect(calls).toHaveLength(1);
  });

  it('12. any other exception is internal, code -32603, and not retried', async () => {
    const { dispatcher, calls } = setup({
      handler: () => {
        throw new RangeError('bad');
      },
    });
    expect(await dispatcher.dispatch('search.web', { query: 'x' })).toMatchObject({
      kind: 'internal',
      jsonrpcCode: -32603,
      attempts: 1,
    });
    expect(calls).toHaveLength(1);
  });
});
