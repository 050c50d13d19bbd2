// The abort of a store leader's execution: ends it when every local caller has left or its lease is lost.
//
// Node builds an AbortController slowly (more than the rest of a keyed call's own work), and most
// executions end without anyone reading their signal. When the attempt step sits right inside
// the idempotency layer, the execution is a lazy per-attempt abort (see AttemptAbort): its
// signal is built only if the handler reads it, and the attempt step settles for it. Otherwise
// the layers inside get a real signal, as before, and race it themselves.

import { AttemptAbort, hasLazySignal, type LazySignalContext } from '../../src/internal/attempt-abort.js';
import { cancelled, failedAttempt } from '../../src/internal/failures.js';
import type { DispatchContext, Next } from '../../src/types.js';

/** One leader's execution: `run` it once, `stop` it when its callers or its lease are gone. */
export interface LeadExecution {
  /** Runs the layers inside under the execution's signal; settles when they do or it is stopped. */
  run(next: Next): Promise<void>;
  /** Ends the execution because `why` aborted; its reason becomes the signal's reason. */
  stop(why: AbortSignal): void;
  /** Puts back the signal state the call had before `run`. */
  restore(): void;
}

/**
 * Starts the execution of `ctx` by the idempotency layer `layer`, ended by `stop`. Subscribes
 * to nothing: the caller watches the signals that should stop it.
 */
export function leadExecution(ctx: DispatchContext, layer: unknown): LeadExecution {
  if (hasLazySignal(ctx) && ctx.innermostLayer === layer) return new LazyLead(ctx);
  return eagerLead(ctx);
}

// Right outside the attempt step: claimable, so the attempt step settles the attempt for us.
class LazyLead extends AttemptAbort implements LeadExecution {
  readonly #ctx: LazySignalContext;
  readonly #base: AbortSignal;
  readonly #outer: AttemptAbort | undefined;
  readonly #attemptsBefore: number;

  constructor(ctx: LazySignalContext) {
    super();
    this.#ctx = ctx;
    this.#base = ctx.baseSignal;
    const source = ctx.abortSource();
    this.#outer = source instanceof AttemptAbort ? source : undefined;
    this.deadline = this.#outer?.deadline ?? Infinity;
    this.#attemptsBefore = ctx.attempt;
    this.claimable = true;
  }

  run(next: Next): Promise<void> {
    this.#ctx.setAttemptAbort(this);
    // The attempt step settles with the handler, or with our interruption; when stopped, or
    // still waiting before the handler (a shared budget), we race the layers ourselves.
    return this.settleLayers(next());
  }

  stop(why: AbortSignal): void {
    if (this.ended) return;
    const ctx = this.#ctx;
    const error = cancelled(ctx, why);
    // An attempt that had started fails as the attempt step would have failed it.
    this.interrupt(ctx.attempt > this.#attemptsBefore ? failedAttempt(ctx, error) : error, why.reason);
  }

  restore(): void {
    this.#ctx.restoreSignal(this.#base, this.#outer);
  }
}

// Layers sit between us and the attempt step: they get a real signal and race it.
function eagerLead(ctx: DispatchContext): LeadExecution {
  const callerSignal = ctx.signal;
  const controller = new AbortController();
  return {
    run(next) {
      ctx.signal = controller.signal;
      return next();
    },
    stop(why) {
      controller.abort(why.reason);
    },
    restore() {
      ctx.signal = callerSignal;
    },
  };
}
