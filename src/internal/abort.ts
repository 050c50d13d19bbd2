// Abort plumbing shared by the layers: a signal that never fires, abortable waits, child signals.

import type { Clock } from '../clock.js';

/** A signal nobody can abort, for calls without one; sharing it costs nothing per dispatch. */
export const neverAborted: AbortSignal = new AbortController().signal;

/**
 * Settles with `promise`, or rejects with `onAbort()` as soon as `signal` aborts. The listener
 * is removed on every path, and a late rejection of `promise` is swallowed.
 */
export function raceAbort<T>(
  promise: PromiseLike<T>,
  signal: AbortSignal,
  onAbort: () => unknown,
): Promise<T> {
  if (signal === neverAborted) return Promise.resolve(promise);
  if (signal.aborted) {
    Promise.resolve(promise).then(undefined, swallow);
    return Promise.reject(onAbort());
  }
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(onAbort());
    signal.addEventListener('abort', abort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', abort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', abort);
        reject(error);
      },
    );
  });
}

/** Waits `ms` on `clock`, or rejects with `onAbort()` as soon as `signal` aborts. */
export function sleep(
  ms: number,
  signal: AbortSignal,
  clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>,
  onAbort: () => unknown,
): Promise<void> {
  if (signal.aborted) return Promise.reject(onAbort());
  return new Promise<void>((resolve, reject) => {
    const abort = () => {
      clock.clearTimeout(timer);
      reject(onAbort());
    };
    const timer = clock.setTimeout(() => {
      signal.removeEventListener('abort', abort);
      resolve();
    }, ms);
    if (signal !== neverAborted) signal.addEventListener('abort', abort, { once: true });
  });
}

/** Does nothing with an error: marks a promise whose outcome nobody is waiting for any more. */
export function swallow(): void {}
