/**
 * Telling a promise from a plain value the way `await` does: by a callable `then`, so promises
 * from another realm (a vm context, a polyfill) are followed too.
 * @module
 */

/**
 * Whether `value` has a callable `then`. Reading `then` may run a getter (or a hostile proxy's
 * trap) that throws; callers that face such values read it inside their own `try`.
 */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    ((typeof value === 'object' && value !== null) || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/**
 * Drops a rejection of `value` when it is a promise: for the answer of a listener, or of a store
 * write, that nobody waits for.
 */
export function ignoreRejection(value: unknown): void {
  if (isThenable(value)) value.then(undefined, ignore);
}

function ignore(): void {}
