// Counts the abort listeners on a signal: how a test sees that nothing stays subscribed to a
// caller's signal once it is done with it.

/** What `countListeners` reads of a signal: listeners now, and ever added. */
export interface ListenerCount {
  /** Added and not yet removed. */
  readonly now: number;
  /** Added in all, removed or not. */
  readonly added: number;
}

/** Wraps `signal`'s `addEventListener` and `removeEventListener` to count what they are given. */
export function countListeners(signal: AbortSignal): ListenerCount {
  const count = { now: 0, added: 0 };
  const add = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener = ((...args: Parameters<typeof add>) => {
    count.now++;
    count.added++;
    add(...args);
  }) as typeof add;
  signal.removeEventListener = ((...args: Parameters<typeof remove>) => {
    count.now--;
    remove(...args);
  }) as typeof remove;
  return count;
}
