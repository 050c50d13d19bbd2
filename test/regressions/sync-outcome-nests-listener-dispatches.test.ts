// Found in review: a listener that dispatches again on each success nested until the stack overflowed.

import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Outcome } from '../../index.js';
import { buildStack as build } from '../helpers/stack-forms.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('a call that ends while dispatch() runs', () => {
  // The default stack's hand-fused runner (since retired) reported a synchronous handler's
  // success, and emitted dispatch.success, while dispatch() was still running. An onEvent
  // listener that dispatches the next call of a work queue on each success therefore recursed,
  // a set of stack frames per call, until the stack overflowed and a dispatch() rejected with a
  // RangeError (SPEC §3: dispatch never rejects). Such an outcome is reported a microtask later.
  it('lets a listener chain thousands of calls without overflowing the stack', async () => {
    const total = 20_000;
    const { dispatcher, listeners } = build(({ n }) => n);
    let next = 1;
    let succeeded = 0;
    const rejected: unknown[] = [];
    const track = (pending: Promise<Outcome>) =>
      pending.then(
        (outcome) => {
          if (outcome.ok) succeeded += 1;
        },
        (error: unknown) => rejected.push(error),
      );
    listeners.push((event) => {
      if (event.type !== 'dispatch.success' || next >= total) return;
      const n = next++;
      try {
        void track(dispatcher.dispatch('calc', { n }));
      } catch (error) {
        rejected.push(error);
      }
    });
    void track(dispatcher.dispatch('calc', { n: 0 }));
    for (let i = 0; i < 50 && succeeded + rejected.length < total; i++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(rejected).toEqual([]);
    expect(succeeded).toBe(total);
  });
});
