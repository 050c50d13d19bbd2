// A promise a test resolves or rejects by hand: how a test holds a handler at a chosen point.

/** A promise with its resolve and reject exposed. */
export interface Gate<T = void> {
  promise: Promise<T>;
  open(value: T): void;
  fail(error: unknown): void;
}

/** Makes a gate. */
export function gate<T = void>(): Gate<T> {
  let open!: (value: T) => void;
  let fail!: (error: unknown) => void;
  const promise = new Promise<T>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

/** Lets every queued microtask run (several rounds, for promise chains through many layers). */
export async function flush(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
}
