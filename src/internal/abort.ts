/**
 * Abort plumbing shared by the layers: a signal that never fires, one listener per signal, abortable waits.
 * @module
 */

import type { Clock } from '../clock.js';

/** A signal nobody can abort, for calls without one; `onAbort` knows it and subscribes nothing. */
export const neverAborted: AbortSignal = new AbortController().signal;

/** The longest delay a Node timer honours; longer ones would fire after 1 ms. */
export const maxTimerDelayMs = 2 ** 31 - 1;

// One real listener per signal, fanning out to every waiter: a caller that shares one signal
// across hundreds of dispatches never trips Node's MaxListenersExceededWarning.
interface FanOut {
  readonly listener: () => void;
  readonly waiters: Set<() => void>;
}
const fanOuts = new WeakMap<AbortSignal, FanOut>();

/**
 * Calls `callback` once when `signal` aborts (in a microtask when it already has) and returns a
 * function that unsubscribes.
 */
export function onAbort(signal: AbortSignal, callback: () => void): () => void {
  if (signal === neverAborted) return noop;
  if (signal.aborted) {
    let subscribed = true;
    queueMicrotask(() => {
      if (subscribed) callback();
    });
    return () => {
      subscribed = false;
    };
  }
  let fanOut = fanOuts.get(signal);
  if (fanOut === undefined) {
    const waiters = new Set<() => void>();
    const listener = () => {
      fanOuts.delete(signal);
      for (const waiter of waiters) waiter();
    };
    fanOut = { listener, waiters };
    fanOuts.set(signal, fanOut);
    signal.addEventListener('abort', listener, { once: true });
  }
  const { waiters, listener } = fanOut;
  let subscribed = true;
  const waiter = () => {
    subscribed = false;
    callback();
  };
  waiters.add(waiter);
  return () => {
    if (!subscribed) return;
    subscribed = false;
    waiters.delete(waiter);
    // The last waiter gone, the real listener goes too, so a long-lived signal keeps none.
    if (waiters.size === 0 && fanOuts.get(signal) === fanOut) {
      fanOuts.delete(signal);
      signal.removeEventListener('abort', listener);
    }
  };
}

/**
 * Does nothing: the unsubscribe of a subscription that never needed one, or the rejection
 * handler of a promise whose outcome nobody is waiting for any more.
 */
export function noop(): void {}

/**
 * Settles with `promise`, or rejects with `reason()` as soon as `signal` aborts. The
 * subscription is dropped on every path, and a late rejection of `promise` is swallowed.
 */
export function raceAbort<T>(
  promise: PromiseLike<T>,
  signal: AbortSignal,
  reason: () => unknown,
): Promise<T> {
  if (signal === neverAborted) return Promise.resolve(promise);
  if (signal.aborted) {
    Promise.resolve(promise).then(undefined, noop);
    return Promise.reject(reason());
  }
  return new Promise<T>((resolve, reject) => {
    const unsubscribe = onAbort(signal, () => reject(reason()));
    promise.then(
      (value) => {
        unsubscribe();
        resolve(value);
      },
      (error: unknown) => {
        unsubscribe();
        reject(error);
      },
    );
  });
}

/** Waits `ms` on `clock`, or rejects with `reason()` as soon as `signal` aborts. */
export function sleep(
  ms: number,
  signal: AbortSignal,
  clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>,
  reason: () => unknown,
): Promise<void> {
  if (signal.aborted) return Promise.reject(reason());
  return new Promise<void>((resolve, reject) => {
    const unsubscribe = onAbort(signal, () => {
      clock.clearTimeout(timer);
      reject(reason());
    });
    const timer = clock.setTimeout(
      () => {
        unsubscribe();
        resolve();
      },
      Math.min(ms, maxTimerDelayMs),
    );
  });
}
