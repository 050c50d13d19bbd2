// Slots that follow a moving limit: first in, first out, every wait ending on its signal, no slot
// or listener left behind.

import { describe, expect, it } from 'vitest';
import { LimitSemaphore } from '../../middleware/autopilot/limit-semaphore.js';
import { countListeners } from '../helpers/listener-count.js';

/** Lets every queued microtask run. */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

describe('LimitSemaphore', () => {
  it('grants up to the capacity at once and queues the rest first in, first out', async () => {
    const slots = new LimitSemaphore(() => 2);
    const order: string[] = [];
    const releases = new Map<string, () => void>();
    for (const name of ['a', 'b', 'c', 'd']) {
      void slots.acquire().then((release) => {
        order.push(name);
        releases.set(name, release);
      });
    }
    await settle();
    expect(order).toEqual(['a', 'b']);
    expect(slots.inFlight).toBe(2);
    expect(slots.queued).toBe(2);
    releases.get('b')?.();
    await settle();
    expect(order).toEqual(['a', 'b', 'c']);
    releases.get('a')?.();
    await settle();
    expect(order).toEqual(['a', 'b', 'c', 'd']);
    for (const release of releases.values()) release();
    expect(slots.inFlight).toBe(0);
  });

  it('ignores a second release of one slot', async () => {
    const slots = new LimitSemaphore(() => 1);
    const release = await slots.acquire();
    release();
    release();
    expect(slots.inFlight).toBe(0);
    const again = await slots.acquire();
    expect(slots.inFlight).toBe(1);
    again();
  });

  it('follows the capacity down and up', async () => {
    let capacity = 3;
    const slots = new LimitSemaphore(() => capacity);
    const held = await Promise.all([slots.acquire(), slots.acquire(), slots.acquire()]);
    capacity = 1;
    let granted = 0;
    const waiting = [slots.acquire(), slots.acquire(), slots.acquire()].map((p) =>
      p.then((release) => {
        granted++;
        return release;
      }),
    );
    // Three in flight over a capacity of one: two releases start nobody, the third starts one.
    held[0]?.();
    held[1]?.();
    await settle();
    expect(granted).toBe(0);
    held[2]?.();
    await settle();
    expect(granted).toBe(1);
    capacity = 3;
    slots.admit();
    await settle();
    expect(granted).toBe(3);
    for (const release of await Promise.all(waiting)) release();
    expect(slots.inFlight).toBe(0);
  });

  it('ends a wait on abort with the reason, leaving the queue', async () => {
    const slots = new LimitSemaphore(() => 1);
    const release = await slots.acquire();
    const caller = new AbortController();
    const waiting = slots.acquire(caller.signal);
    const behind = slots.acquire();
    expect(slots.queued).toBe(2);
    caller.abort(new Error('gone'));
    await expect(waiting).rejects.toThrow('gone');
    expect(slots.queued).toBe(1);
    release();
    const next = await behind;
    expect(slots.inFlight).toBe(1);
    next();
  });

  it('lets the next waiter in when the first in line leaves while a slot is free', async () => {
    let capacity = 1;
    const slots = new LimitSemaphore(() => capacity);
    const release = await slots.acquire();
    const caller = new AbortController();
    const first = slots.acquire(caller.signal);
    const second = slots.acquire();
    capacity = 2;
    caller.abort('gone');
    await expect(first).rejects.toBe('gone');
    const granted = await second;
    expect(slots.inFlight).toBe(2);
    granted();
    release();
  });

  it('takes no slot for a signal already aborted, even with slots free', async () => {
    const slots = new LimitSemaphore(() => 4);
    await expect(slots.acquire(AbortSignal.abort('gone'))).rejects.toBe('gone');
    expect(slots.inFlight).toBe(0);
    expect(slots.queued).toBe(0);
  });

  it('removes its abort listener once a waiter is granted', async () => {
    const slots = new LimitSemaphore(() => 1);
    const caller = new AbortController();
    const listeners = countListeners(caller.signal);
    const release = await slots.acquire(caller.signal);
    const waiting = slots.acquire(caller.signal);
    expect(listeners.now).toBe(1);
    release();
    (await waiting)();
    expect(listeners.now).toBe(0);
  });

  it('takes a free slot at once with tryTake, never past a waiter, and give() hands it on', async () => {
    const slots = new LimitSemaphore(() => 1);
    expect(slots.tryTake()).toBe(true);
    expect(slots.tryTake()).toBe(false);
    const order: string[] = [];
    void slots.acquire().then(() => order.push('waiter'));
    await settle();
    expect(slots.queued).toBe(1);
    slots.give();
    await settle();
    expect(order).toEqual(['waiter']);
    expect(slots.inFlight).toBe(1);
    expect(slots.tryTake()).toBe(false);
  });

  it('rejects a capacity that is not a function', () => {
    expect(() => new LimitSemaphore(4 as never)).toThrow(/capacity must be a function/);
  });
});
