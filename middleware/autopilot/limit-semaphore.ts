/**
 * Slots whose number follows a moving limit (a `GradientLimit`'s): first in, first out, every
 * wait ending on its signal; the queue is the internal kit's `FifoSemaphore`, shared with the
 * concurrency layer.
 * @module
 */

import { FifoSemaphore, neverAborted, noop } from '../internal-kit.js';
import { onAbort } from '../kit.js';

/**
 * A counting semaphore whose capacity is read from `capacity()` each time a slot could be handed
 * over. When the limit falls below the calls in flight, nobody new starts until enough have
 * released; when it rises, the next release (or `admit()`) lets that many more waiters in.
 * Waiters are served in arrival order, and a free slot is never taken past someone waiting.
 *
 * @example
 * const slots = new LimitSemaphore(() => limit.limit);
 * const release = await slots.acquire(ctx.signal);
 * try { await next(); } finally { release(); }
 */
export class LimitSemaphore {
  readonly #slots: FifoSemaphore;

  constructor(capacity: () => number) {
    if (typeof capacity !== 'function') {
      throw new TypeError(`capacity must be a function, got ${typeof capacity}`);
    }
    this.#slots = new FifoSemaphore(capacity);
  }

  /** Slots held now. */
  get inFlight(): number {
    return this.#slots.running;
  }

  /** Callers waiting for a slot now. */
  get queued(): number {
    return this.#slots.queued;
  }

  /**
   * Waits for a slot and resolves with the function that gives it back (calling it again does
   * nothing). Rejects with the signal's reason, leaving the queue, if `signal` aborts first; an
   * already aborted signal takes no slot.
   */
  acquire(signal: AbortSignal = neverAborted): Promise<() => void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    if (this.#slots.tryAcquire()) return Promise.resolve(this.#releaser());
    return new Promise<() => void>((resolve, reject) => {
      let unsubscribe: () => void = noop;
      let granted = false;
      const leave = this.#slots.enqueue(() => {
        granted = true;
        unsubscribe();
        resolve(this.#releaser());
      });
      unsubscribe = onAbort(signal, () => {
        if (granted) return;
        leave();
        reject(signal.reason);
        // The one who left may have been first in line while slots were free.
        this.#slots.admit();
      });
    });
  }

  /**
   * Takes a slot at once if one is free and nobody waits, and says whether it did: the caller
   * then owes exactly one `give()`. No promise, no releaser: the uncontended path of `acquire`.
   */
  tryTake(): boolean {
    return this.#slots.tryAcquire();
  }

  /** Gives back a slot taken by `tryTake()`. */
  give(): void {
    this.#slots.release();
  }

  /** Hands free slots to waiters, in order: call it when the capacity has risen. */
  admit(): void {
    this.#slots.admit();
  }

  #releaser(): () => void {
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.#slots.release();
    };
  }
}
