// Found in review: a handler promise whose own `then` calls back at once was reported twice
// (by the default stack's hand-fused runner, since retired; the one engine must keep it right).

import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Outcome } from '../../index.js';
import { flush, gate } from '../helpers/gate.js';
import { buildStack as build, withOwnThen } from '../helpers/stack-forms.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('a handler promise with a `then` of its own that calls back at once', () => {
  // The runner attached its callbacks with the promise's own `then`, which called back before
  // returning; the check for an attempt interrupted while starting then took the ended attempt
  // for an interrupted one, so the call was reported twice and its slot released twice. A
  // handler's promise is followed as `await` follows it, which always calls back later.
  it('releases its concurrency slot once: running never goes below 0', async () => {
    const { dispatcher, load } = build(
      ({ n }) => {
        const promise = Promise.resolve(n);
        return withOwnThen(promise, ((onFulfilled: (value: number) => void) => {
          onFulfilled(n);
          return promise;
        }) as never);
      },
      { stack: { concurrency: { max: 1 } } },
    );
    expect(await dispatcher.dispatch('calc', { n: 1 })).toEqual({ ok: true, result: 1, attempts: 1 });
    await flush();
    // The bug left { running: -1, queued: 0 }.
    expect(load()).toEqual({ running: 0, queued: 0 });
  });

  it('still keeps concurrency { max: 1 } afterwards: the next two calls do not run at once', async () => {
    const held = gate<number>();
    const { dispatcher, load } = build(
      ({ n }) => {
        if (n !== 0) return held.promise.then((value) => value + n);
        const promise = Promise.resolve(0);
        return withOwnThen(promise, ((onFulfilled: (value: number) => void) => {
          onFulfilled(0);
          return promise;
        }) as never);
      },
      { stack: { concurrency: { max: 1 } } },
    );
    await dispatcher.dispatch('calc', { n: 0 });
    await flush();
    const a = dispatcher.dispatch('calc', { n: 1 });
    const b = dispatcher.dispatch('calc', { n: 2 });
    await flush();
    // SPEC §3.5: at most `max` handlers at once, the others queue. The bug ran both.
    expect(load()).toEqual({ running: 1, queued: 1 });
    held.open(10);
    expect(await a).toEqual({ ok: true, result: 11, attempts: 1 });
    expect(await b).toEqual({ ok: true, result: 12, attempts: 1 });
  });

  // The duplicate report reaches gatherBounded's worker after it has moved on to its next
  // entry: src/gather.ts writes it into that entry's slot and counts the worker as finished, so
  // the batch resolves while a call is still running. SPEC §5: outcomes in input order, one per call.
  it('does not make gatherBounded resolve before every call of the batch has ended', async () => {
    const held = gate<number>();
    const { dispatcher } = build(({ n }) => {
      if (n === 1) return held.promise;
      const promise = Promise.resolve(n);
      return withOwnThen(promise, ((onFulfilled: (value: number) => void) => {
        onFulfilled(n);
        return promise;
      }) as never);
    });
    let outcomes: Outcome[] | undefined;
    void dispatcher
      .gatherBounded(
        [
          { name: 'calc', args: { n: 0 } },
          { name: 'calc', args: { n: 1 } },
        ],
        { concurrency: 1 },
      )
      .then((value) => (outcomes = value));
    await flush();
    // Still pending: call 1's handler has not answered. The bug resolved it, with call 0's
    // outcome written into slot 1.
    expect(outcomes).toBeUndefined();
    held.open(11);
    await flush();
    expect(outcomes).toEqual([
      { ok: true, result: 0, attempts: 1 },
      { ok: true, result: 11, attempts: 1 },
    ]);
  });
});
