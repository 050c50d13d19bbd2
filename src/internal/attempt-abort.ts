// A per-attempt abort whose AbortSignal is only built when someone reads it: most handlers
// finish before their deadline without ever looking, and Node builds signals slowly.

import type { DispatchContext } from '../types.js';
import { swallow } from './abort.js';

/**
 * The abort of one attempt; `signal` materialises an `AbortSignal` on first read.
 *
 * The layer that makes it (timeout) may let the attempt step right inside it settle the
 * attempt's promise: the attempt step takes charge with `own('attempt')`, and the layer ends the
 * attempt early with `interrupt` (deadline, caller abort). That saves the layer a promise of its own on every attempt. Whoever ends the attempt
 * first wins; `end` runs the layer's cleanup (a subclass's `cleanup`) exactly once.
 */
export class AttemptAbort {
  aborted = false;
  /** Who settles the attempt's promise: the attempt step, or the layer racing it itself. */
  owner: 'none' | 'attempt' | 'layer' = 'none';
  /**
   * Whether the attempt step may take charge: only when the layer that made this abort sits
   * right outside it. Any other layer in between (a retry, say) would outlive the attempt.
   */
  claimable = false;
  /** When the attempt's deadline passes, in milliseconds on the deadline's clock; `Infinity` for none. */
  deadline = Infinity;
  private reason: unknown = undefined;
  private controller: AbortController | undefined = undefined;
  private hasEnded = false;
  private rejectAttempt: ((error: unknown) => void) | undefined = undefined;
  private interruptedWith: unknown = undefined;

  /** Undoes what the layer set up for the attempt; runs once, when the attempt ends. */
  protected cleanup(): void {}

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  get ended(): boolean {
    return this.hasEnded;
  }

  /** The error an interrupted attempt ended with. */
  get interruption(): unknown {
    return this.interruptedWith;
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.controller?.abort(reason);
  }

  /** Takes charge of settling the attempt's promise; `reject` is called if it is interrupted. */
  own(owner: 'attempt' | 'layer', reject?: (error: unknown) => void): void {
    this.owner = owner;
    if (reject !== undefined) this.rejectAttempt = reject;
  }

  /** Ends the attempt, running the cleanup once; false when it had already ended. */
  end(): boolean {
    if (this.hasEnded) return false;
    this.hasEnded = true;
    this.cleanup();
    return true;
  }

  /**
   * What the layer that made this abort returns for `inner`, the layers inside it: `inner` itself
   * when the attempt step took charge; otherwise a promise the layer owns, which settles with
   * `inner` or rejects at once when the attempt is interrupted.
   */
  settleLayers(inner: Promise<void>): Promise<void> {
    if (this.owner === 'attempt') return inner;
    return new Promise<void>((resolve, reject) => {
      // Interrupted while the layers inside were still starting: nobody was there to reject.
      if (this.hasEnded) {
        inner.then(undefined, swallow);
        reject(this.interruptedWith);
        return;
      }
      this.own('layer', reject);
      inner.then(
        () => {
          if (this.end()) resolve();
        },
        (error: unknown) => {
          if (this.end()) reject(error);
        },
      );
    });
  }

  /** Ends the attempt from outside: rejects its promise with `error`, then aborts the signal. */
  interrupt(error: unknown, reason: unknown): void {
    if (!this.end()) return;
    this.interruptedWith = error;
    this.rejectAttempt?.(error);
    this.abort(reason);
  }
}

/** Where an attempt's cancellation comes from: a real signal, or a lazy per-attempt abort. */
export type AbortSource = AbortSignal | AttemptAbort;

/** A context that can hold a lazy per-attempt abort (the dispatcher's own contexts can). */
export interface LazySignalContext extends DispatchContext {
  /** The current abort source, without materialising a lazy signal. */
  abortSource(): AbortSource;
  /** The signal under any lazy abort. */
  readonly baseSignal: AbortSignal;
  /** The stack's last layer, right outside the attempt step. */
  readonly innermostLayer: unknown;
  /** Installs (or, with `undefined`, removes) the lazy abort inner layers see. */
  setAttemptAbort(abort: AttemptAbort | undefined): void;
  /** Puts back a signal state saved from `baseSignal` and `abortSource()`. */
  restoreSignal(base: AbortSignal, abort: AttemptAbort | undefined): void;
}

/** Whether `ctx` can hold a lazy abort. */
export function hasLazySignal(ctx: DispatchContext): ctx is LazySignalContext {
  return typeof (ctx as Partial<LazySignalContext>).setAttemptAbort === 'function';
}

/** The current abort source of any context. */
export function abortSourceOf(ctx: DispatchContext): AbortSource {
  return hasLazySignal(ctx) ? ctx.abortSource() : ctx.signal;
}
