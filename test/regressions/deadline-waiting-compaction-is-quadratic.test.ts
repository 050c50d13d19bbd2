// Regression (fixed): src/internal/deadlines.ts:79-81: once 1 024 deadlines wait for the end of the tick, *every*
// further start() filters the whole waiting array, even when nothing in it was cancelled (the
// array never shrinks). A synchronous burst of n attempts (a custom stack without
// concurrencyLimit, or gatherBounded with a high concurrency) costs O(n²): 20 000 starts scan
// ~190 million entries.
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { DeadlineScheduler } from '../../src/internal/deadlines.js';
import { startDeadline } from '../helpers/deadline.js';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

it('a burst of live deadlines in one tick costs linear work', () => {
  const scheduler = new DeadlineScheduler(systemClock);
  const original = Array.prototype.filter;
  let scanned = 0;
  Array.prototype.filter = function (this: unknown[], ...args: Parameters<typeof original>) {
    scanned += this.length;
    return original.apply(this, args);
  } as typeof original;
  const n = 20_000;
  try {
    for (let i = 0; i < n; i++) startDeadline(scheduler, 1_000, () => {});
  } finally {
    Array.prototype.filter = original;
  }
  expect(scanned).toBeLessThan(10 * n);
});
