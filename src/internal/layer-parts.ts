// What the fused default stack (src/fused-stack.ts) needs from each of the library's own layers:
// the layer's steps as plain functions, so that a call can run them without a promise per layer.
// Each layer is built from these same functions, so the two ways of running it cannot drift.

import type { DispatchError } from '../errors.js';
import type { DispatchContext, Next } from '../types.js';
import type { AttemptAbort } from './attempt-abort.js';
import type { FifoSemaphore } from './fifo-semaphore.js';

/** A step that may fail a call: the envelope, or `undefined` to go on. */
export type Check = (ctx: DispatchContext) => DispatchError | undefined;

/** The parts of each library layer, by kind. */
export type LayerParts =
  | { readonly kind: 'errorMapping' }
  | { readonly kind: 'toolLookup'; readonly lookup: Check }
  | {
      readonly kind: 'schemaValidation';
      /** Validates and replaces `ctx.args`; a promise when the validator is asynchronous. */
      readonly check: (ctx: DispatchContext) => DispatchError | undefined | Promise<DispatchError | undefined>;
    }
  | { readonly kind: 'budgetGuard'; readonly check: Check }
  | { readonly kind: 'idempotency' }
  | { readonly kind: 'concurrencyLimit'; readonly semaphore: FifoSemaphore }
  | {
      readonly kind: 'retry';
      /**
       * Decides after attempt `attempt` failed with `error`: throws the final envelope, or
       * returns the remaining attempts (run through `next`), waits included.
       */
      readonly afterFailure: (ctx: DispatchContext, next: Next, attempt: number, error: unknown) => Promise<void>;
    }
  | {
      readonly kind: 'timeout';
      /** The clock deadlines are measured on. */
      readonly clock: unknown;
      /** The attempt's deadline in milliseconds; beyond a timer's range it has none. */
      readonly deadlineMs: (ctx: DispatchContext) => number;
      /**
       * Starts the attempt's deadline, measured from `startedAt` (by default the clock's now), or
       * says why the attempt cannot start.
       */
      readonly startDeadline: (
        ctx: DispatchContext,
        ms: number,
        startedAt?: number,
      ) => AttemptAbort | DispatchError;
    };

/** The kinds of layer, in the order `defaultStack` puts them. */
export type LayerKind = LayerParts['kind'];

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
const partsByLayer = new WeakMap<Function, LayerParts>();

/** Records what a library layer is made of and returns the layer. */
// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export function withParts<Layer extends Function>(layer: Layer, parts: LayerParts): Layer {
  partsByLayer.set(layer, parts);
  return layer;
}

/** The parts of a library layer; `undefined` for any other middleware. */
export function partsOf(layer: unknown): LayerParts | undefined {
  return typeof layer === 'function' ? partsByLayer.get(layer) : undefined;
}
