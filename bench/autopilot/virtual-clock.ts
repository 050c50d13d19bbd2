/**
 * Simulated time for the autopilot bench: a `Clock` whose timers fire in order of their virtual
 * due time, as fast as the CPU allows, so 200 000 calls of seconds each replay in seconds through
 * the real layers (give it to every layer's `clock` option and the dispatcher's `now`).
 * @module
 */

import type { Clock } from '../../src/clock.js';

/** A timer of the virtual clock; the handle `setTimeout` returns. */
interface VirtualTimer {
  readonly at: number;
  readonly sequence: number;
  readonly callback: () => void;
  /** Fired or cleared: out of the heap's live count. */
  done: boolean;
  /** Node's timer handles have it (stores call it); time here holds no process open anyway. */
  unref(): VirtualTimer;
  /** The counterpart of `unref`, for symmetry with Node's handles. */
  ref(): VirtualTimer;
}

/** Why `runUntilSettled` gave up: the promise waits on something no virtual timer will bring. */
export class VirtualClockStalled extends Error {
  override readonly name = 'VirtualClockStalled';
}

function earlier(a: VirtualTimer, b: VirtualTimer): boolean {
  return a.at < b.at || (a.at === b.at && a.sequence < b.sequence);
}

// Lets every microtask (and process.nextTick) queued so far run, and those they queue: Node runs
// the check phase only once both queues are empty.
function drainMicrotasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * A virtual `Clock`. Time moves only in `run`, `runFor` and `runUntilSettled`: each fires the
 * earliest timer due (ties in the order they were set), after letting the microtasks that earlier
 * timers queued run, exactly as Node runs timers. Delays may be fractional (a latency of 212.7 ms
 * stays 212.7 ms); a negative or NaN delay is 0.
 *
 * @example
 * const clock = new VirtualClock();
 * const dispatcher = createDispatcher(defaultStack({ registry, retry: { clock }, timeout: { clock } }), { now: clock.now });
 * const outcome = await clock.runUntilSettled(dispatcher.dispatch('search.web', { query: 'q' }));
 * clock.now(); // virtual milliseconds the call took, plus the start
 */
export class VirtualClock implements Clock {
  // A binary min-heap by (at, sequence); cleared timers stay until popped or compacted.
  #heap: VirtualTimer[] = [];
  #now: number;
  #sequence = 0;
  #live = 0;

  constructor(start = 0) {
    this.#now = start;
  }

  /** Virtual milliseconds: where the last timer fired or the last `runFor` ended. */
  readonly now = (): number => this.#now;

  /** Schedules `callback` at `now() + ms` of virtual time. */
  readonly setTimeout = (callback: () => void, ms: number): unknown => {
    const delay = Number.isNaN(ms) ? 0 : Math.max(ms, 0);
    const timer: VirtualTimer = {
      at: this.#now + delay,
      sequence: this.#sequence++,
      callback,
      done: false,
      unref: () => timer,
      ref: () => timer,
    };
    this.#push(timer);
    this.#live++;
    return timer;
  };

  /** Cancels a timer from `setTimeout` (anything else is ignored, like Node's). */
  readonly clearTimeout = (handle: unknown): void => {
    const timer = handle as VirtualTimer | undefined;
    if (typeof timer !== 'object' || timer === null || !('sequence' in timer) || timer.done) return;
    timer.done = true;
    this.#live--;
    // Cleared timers (a timeout disarmed by a success) would otherwise pile up in the heap.
    if (this.#heap.length > 1_024 && this.#heap.length > 2 * this.#live) this.#compact();
  };

  /** Timers set and neither fired nor cleared. */
  get pending(): number {
    return this.#live;
  }

  /**
   * A promise that resolves `ms` of virtual time from now, or rejects with the signal's reason
   * when it aborts first (its timer cleared): a simulated tool's work. `Infinity` never resolves
   * (a hung call: only its signal ends it, and it holds no timer).
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      let timer: unknown;
      const onAbort = () => {
        if (timer !== undefined) this.clearTimeout(timer);
        reject(signal?.reason);
      };
      if (ms === Infinity) {
        signal?.addEventListener('abort', onAbort, { once: true });
        return;
      }
      timer = this.setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Fires timers in order until none is left (or the next is past `until`, where time stops). */
  async run(until = Infinity): Promise<void> {
    for (;;) {
      await drainMicrotasks();
      const next = this.#peek();
      if (next === undefined || next.at > until) break;
      this.#fire(next);
    }
    if (until !== Infinity) this.#now = Math.max(this.#now, until);
  }

  /** Moves time on by `ms`, firing every timer due on the way. */
  runFor(ms: number): Promise<void> {
    return this.run(this.#now + ms);
  }

  /**
   * Fires timers until `promise` settles, and settles as it does. Rejects with
   * `VirtualClockStalled` if no timer is left while it is still pending (it waits on real I/O, or
   * on nothing).
   */
  async runUntilSettled<T>(promise: Promise<T>): Promise<T> {
    let settled = false;
    const watched = promise.finally(() => {
      settled = true;
    });
    // The caller may not await `watched` when it rejects; this keeps that from going unhandled.
    watched.catch(() => undefined);
    for (;;) {
      await drainMicrotasks();
      if (settled) return watched;
      const next = this.#peek();
      if (next === undefined)
        throw new VirtualClockStalled('the promise is pending and no virtual timer is left');
      this.#fire(next);
    }
  }

  // Fires the top of the heap, `next`.
  #fire(next: VirtualTimer): void {
    this.#pop();
    next.done = true;
    this.#live--;
    this.#now = Math.max(this.#now, next.at);
    next.callback();
  }

  // The earliest live timer, dropping cleared ones off the top.
  #peek(): VirtualTimer | undefined {
    while (this.#heap.length > 0 && (this.#heap[0] as VirtualTimer).done) this.#pop();
    return this.#heap[0];
  }

  #push(timer: VirtualTimer): void {
    const heap = this.#heap;
    let index = heap.push(timer) - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (!earlier(timer, heap[parent] as VirtualTimer)) break;
      heap[index] = heap[parent] as VirtualTimer;
      index = parent;
    }
    heap[index] = timer;
  }

  #pop(): void {
    const heap = this.#heap;
    const last = heap.pop() as VirtualTimer;
    if (heap.length === 0) return;
    let index = 0;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child =
        right < heap.length && earlier(heap[right] as VirtualTimer, heap[left] as VirtualTimer)
          ? right
          : left;
      if (!earlier(heap[child] as VirtualTimer, last)) break;
      heap[index] = heap[child] as VirtualTimer;
      index = child;
    }
    heap[index] = last;
  }

  #compact(): void {
    const live = this.#heap.filter((timer) => !timer.done);
    this.#heap = [];
    for (const timer of live) this.#push(timer);
  }
}
