// A promise whose resolve goes to its maker without a closure per promise.
//
// A promise's executor runs inside its constructor, so one shared executor can hand each new
// promise's resolve over through a variable: on a path taken once per dispatch, that saves the
// executor closure (and the context it captures) that `new Promise((resolve) => ...)` costs.

import { noop } from './abort.js';

let captured: (value: never) => void = noop;

function capture(resolve: (value: never) => void): void {
  captured = resolve;
}

/** A new pending promise; call `takeResolve()` right after, before any other promise is made here. */
export function pendingPromise<T>(): Promise<T> {
  return new Promise<T>(capture);
}

/** The resolve of the promise `pendingPromise()` made last. */
export function takeResolve<T>(): (value: T) => void {
  const resolve = captured as (value: T) => void;
  captured = noop;
  return resolve;
}
