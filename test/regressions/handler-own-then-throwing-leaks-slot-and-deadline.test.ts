// Found in review: a handler promise whose own `then` throws leaked its slot and deadline (in the
// default stack's hand-fused runner, since retired; the one engine must keep it right).

import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Outcome } from '../../index.js';
import { buildStack as build, withOwnThen } from '../helpers/stack-forms.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('a handler promise with a `then` of its own that throws', () => {
  // The runner called the promise's own `then` outside any try: the throw skipped the slot
  // release and the attempt's end, so a concurrency { max: 1 } dispatcher was stuck for good and
  // the deadline fired later for a finished call. A handler's promise is now followed as `await`
  // follows it, through the built-in `then`: its own `then` is never called.
  it('is followed as await would: the promise settles the call, and the next one runs', async () => {
    vi.useFakeTimers();
    const { dispatcher, load } = build(
      ({ n }) =>
        n === 2
          ? 2
          : withOwnThen(Promise.resolve(n), () => {
              throw new Error('then broke');
            }),
      { stack: { concurrency: { max: 1 } }, timeoutMs: 50 },
    );
    expect(await dispatcher.dispatch('calc', { n: 1 })).toEqual({ ok: true, result: 1, attempts: 1 });
    expect(await dispatcher.dispatch('calc', { n: 2 })).toEqual({ ok: true, result: 2, attempts: 1 });
    expect(load()).toEqual({ running: 0, queued: 0 });
  });

  it('times out when the promise never settles, freeing the slot and leaving no deadline behind', async () => {
    vi.useFakeTimers();
    const { dispatcher, events, load } = build(
      () =>
        withOwnThen(new Promise<number>(() => {}), () => {
          throw new Error('then broke');
        }),
      { stack: { concurrency: { max: 1 } }, timeoutMs: 50 },
    );
    let outcome: Outcome | undefined;
    void dispatcher.dispatch('calc', { n: 1 }).then((value) => (outcome = value));
    await vi.advanceTimersByTimeAsync(50);
    expect(outcome).toMatchObject({ ok: false, kind: 'timeout', attempts: 1 });
    expect(load()).toEqual({ running: 0, queued: 0 });
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(events.map((event) => event.type)).toEqual([
      'dispatch.attempt',
      'dispatch.timeout',
      'dispatch.attempt_failed',
      'dispatch.failure',
    ]);
  });
});
