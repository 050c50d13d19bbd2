/**
 * A counting semaphore whose waiters queue first in, first out and can leave the queue at once
 * (async-mutex's cannot drop one waiter, nor take a free slot without a promise).
 * @module
 */

interface Waiter {
  grant: () => void;
  queued: boolean;
  previous: Waiter | undefined;
  next: Waiter | undefined;
}

/** A FIFO counting semaphore with removable waiters. */
export class FifoSemaphore {
  running = 0;
  queued = 0;
  #head: Waiter | undefined = undefined;
  #tail: Waiter | undefined = undefined;

  constructor(readonly max: number) {}

  /** Takes a slot if one is free and nobody is waiting. */
  tryAcquire(): boolean {
    if (this.running >= this.max || this.queued > 0) return false;
    this.running += 1;
    return true;
  }

  /**
   * Queues for a slot: `grant` is called once one is handed over. Returns a function that
   * removes the waiter from the queue (a no-op once granted).
   */
  enqueue(grant: () => void): () => void {
    const waiter: Waiter = { grant, queued: true, previous: this.#tail, next: undefined };
    if (this.#tail === undefined) this.#head = waiter;
    else this.#tail.next = waiter;
    this.#tail = waiter;
    this.queued += 1;
    return () => {
      if (waiter.queued) this.#unlink(waiter);
    };
  }

  /** Frees a slot, handing it straight to the first waiter if there is one. */
  release(): void {
    const waiter = this.#head;
    if (waiter === undefined) {
      this.running -= 1;
      return;
    }
    this.#unlink(waiter);
    waiter.grant();
  }

  #unlink(waiter: Waiter): void {
    if (waiter.previous === undefined) this.#head = waiter.next;
    else waiter.previous.next = waiter.next;
    if (waiter.next === undefined) this.#tail = waiter.previous;
    else waiter.next.previous = waiter.previous;
    waiter.previous = undefined;
    waiter.next = undefined;
    waiter.queued = false;
    this.queued -= 1;
  }
}
