// A per-attempt abort whose AbortSignal is only built when someone reads it: most handlers
// finish before their deadline without ever looking, and Node builds signals slowly.

import type { DispatchContext } from '../types.js';

/** The abort of one attempt; `signal` materialises an `AbortSignal` on first read. */
export class AttemptAbort {
  aborted = false;
  #reason: unknown = undefined;
  #controller: AbortController | undefined = undefined;

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }
}

/** Where an attempt's cancellation comes from: a real signal, or a lazy per-attempt abort. */
export type AbortSource = AbortSignal | AttemptAbort;

/** A context that can hold a lazy per-attempt abort (the dispatcher's own contexts can). */
export interface LazySignalContext extends DispatchContext {
  /** The current abort source, without materialising a lazy signal. */
  abortSource(): AbortSource;
  /** Installs (or, with `undefined`, removes) the lazy abort inner layers see. */
  setAttemptAbort(abort: AttemptAbort | undefined): void;
}

/** Whether `ctx` can hold a lazy abort. */
export function hasLazySignal(ctx: DispatchContext): ctx is LazySignalContext {
  return typeof (ctx as Partial<LazySignalContext>).setAttemptAbort === 'function';
}

/** The current abort source of any context. */
export function abortSourceOf(ctx: DispatchContext): AbortSource {
  return hasLazySignal(ctx) ? ctx.abortSource() : ctx.signal;
}

/** Whether a source has aborted, without materialising a lazy signal. */
export function isAborted(source: AbortSource): boolean {
  return source.aborted;
}
