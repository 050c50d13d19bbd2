// The deadline scheduler behind the timeout layer: exact deadlines, one timer per duration, none when idle.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from '../src/clock.js';
import { DeadlineScheduler } from '../src/internal/deadlines.js';
import { startDeadline } from './helpers/deadline.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const endOfTick = () => new Promise<void>((resolve) => process.nextTick(resolve));

describe('DeadlineScheduler', () => {
  it('sets no timer for a deadline cancelled within the tick it started in', async () => {
    const scheduler = new DeadlineScheduler(systemClock);
    const expired = vi.fn();
    scheduler.cancel(startDeadline(scheduler, 1_000, expired));
    await endOfTick();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(expired).not.toHaveBeenCalled();
  });

  it('fires each deadline at its start plus its duration, sharing one timer per duration', async () => {
    const scheduler = new DeadlineScheduler(systemClock);
    const firedAt: Array<[string, number]> = [];
    const t0 = Date.now();
    const mark = (label: string) => () => firedAt.push([label, Date.now() - t0]);
    startDeadline(scheduler, 100, mark('a'));
    await vi.advanceTimersByTimeAsync(30);
    startDeadline(scheduler, 100, mark('b'));
    startDeadline(scheduler, 50, mark('c'));
    await endOfTick();
    expect(vi.getTimerCount()).toBe(2);
    await vi.advanceTimersByTimeAsync(200);
    expect(firedAt).toEqual([
      ['c', 80],
      ['a', 100],
      ['b', 130],
    ]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('keeps the timer while other deadlines of the duration live, and drops it with the last', async () => {
    const scheduler = new DeadlineScheduler(systemClock);
    const expired = vi.fn();
    const first = startDeadline(scheduler, 100, expired);
    const second = startDeadline(scheduler, 100, expired);
    await endOfTick();
    scheduler.cancel(first);
    expect(vi.getTimerCount()).toBe(1);
    scheduler.cancel(second);
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(200);
    expect(expired).not.toHaveBeenCalled();
  });

  it('still fires a later deadline after the one its timer was set for was cancelled', async () => {
    const scheduler = new DeadlineScheduler(systemClock);
    const expired = vi.fn();
    const first = startDeadline(scheduler, 100, () => {});
    await vi.advanceTimersByTimeAsync(40);
    startDeadline(scheduler, 100, expired);
    await endOfTick();
    scheduler.cancel(first);
    await vi.advanceTimersByTimeAsync(99);
    expect(expired).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(expired).toHaveBeenCalledTimes(1);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('DeadlineScheduler on an injected clock', () => {
  it('trusts a timer that fires before the clock reads its deadline', async () => {
    vi.useRealTimers();
    const callbacks: Array<() => void> = [];
    const clock = {
      now: () => 1_000,
      setTimeout: (callback: () => void) => callbacks.push(callback),
      clearTimeout: () => {},
    };
    const scheduler = new DeadlineScheduler(clock);
    const expired = vi.fn();
    startDeadline(scheduler, 30_000, expired);
    await endOfTick();
    expect(callbacks).toHaveLength(1);
    callbacks[0]?.();
    expect(expired).toHaveBeenCalledTimes(1);
  });
});

describe('DeadlineScheduler on Node’s own timers', () => {
  const timeouts = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;

  it('arms a deadline only at the end of its tick, and not at all once cancelled', async () => {
    vi.useRealTimers();
    const scheduler = new DeadlineScheduler(systemClock);
    const before = timeouts();
    const kept = startDeadline(scheduler, 60_000, () => {});
    scheduler.cancel(startDeadline(scheduler, 60_000, () => {}));
    expect(timeouts()).toBe(before);
    await endOfTick();
    expect(timeouts()).toBe(before + 1);
    scheduler.cancel(kept);
    expect(timeouts()).toBe(before);
  });

  it('lets a new deadline join a duration whose timer is already running', async () => {
    vi.useRealTimers();
    const scheduler = new DeadlineScheduler(systemClock);
    const before = timeouts();
    const first = startDeadline(scheduler, 60_000, () => {});
    await endOfTick();
    const second = startDeadline(scheduler, 60_000, () => {});
    expect(timeouts()).toBe(before + 1);
    scheduler.cancel(first);
    scheduler.cancel(second);
    expect(timeouts()).toBe(before);
  });
});
