// How the dispatcher runs a stack: a runner takes a call and reports its outcome exactly once.

import { runAttempt } from './attempt.js';
import { compose, type ComposedMiddleware } from './compose.js';
import type { CallContext } from './context.js';
import { toDispatchError } from './errors.js';
import { trusted } from './internal/trusted.js';
import type { Middleware, Outcome } from './types.js';

/** Ends a call: turns what `ctx` holds into the outcome the dispatch resolves to. */
export type Finish = (ctx: CallContext) => Outcome;

/** Receives a call's outcome, exactly once. */
export type Report = (outcome: Outcome) => void;

/** Runs one call through a stack and reports its outcome; never throws. */
export type StackRunner = (ctx: CallContext, report: Report) => void;

/** `layers` composed around the attempt step, outermost first. */
export function composeWithAttempt(layers: readonly Middleware[]): ComposedMiddleware<CallContext> {
  return compose([...layers, trusted(runAttempt)]);
}

/** The envelope for whatever a stack threw, recorded in `ctx` and ended. */
export function failWith(ctx: CallContext, error: unknown, finish: Finish): Outcome {
  ctx.outcome = toDispatchError(error, ctx.attempt);
  return finish(ctx);
}

/** Reports the call once `running` (the composed layers) settles, mapping a rejection. */
export function reportWhenSettled(
  ctx: CallContext,
  running: Promise<unknown>,
  finish: Finish,
  report: Report,
): void {
  running.then(
    () => report(finish(ctx)),
    (error: unknown) => report(failWith(ctx, error, finish)),
  );
}

/** A runner for any stack: its layers composed as an onion around the attempt step. */
export function onionRunner(stack: readonly Middleware[], finish: Finish): StackRunner {
  const run = composeWithAttempt(stack);
  return (ctx, report) => reportWhenSettled(ctx, run(ctx), finish, report);
}
