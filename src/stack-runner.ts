/**
 * How the dispatcher runs a stack: a runner takes a call and reports its outcome exactly once.
 * @module
 */

import { runAttempt } from './attempt.js';
import { compose, type ComposableStack, type ComposedMiddleware } from './compose.js';
import type { CallContext } from './context.js';
export type { CallContext } from './context.js';
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

/** Makes the runner of a registered group of layers: it behaves exactly as their onion would. */
export type FusedRunnerFactory = (finish: Finish) => StackRunner;

interface FusedGroup {
  readonly layers: readonly Middleware[];
  readonly build: FusedRunnerFactory;
}

// Keyed by the group's first layer; a stack matches a group by the identity of its layers.
const fusedGroups = new WeakMap<Middleware, FusedGroup>();

/** Registers `layers` to run with the runner `build` makes whenever a stack ends with exactly them. */
export function fuseLayers(layers: readonly Middleware[], build: FusedRunnerFactory): void {
  const first = layers[0];
  if (first !== undefined) fusedGroups.set(first, { layers: [...layers], build });
}

/**
 * The runner for `stack`: when it ends with a registered group, that group runs fused and the
 * layers before it are composed as an onion around it; any other stack runs as an onion.
 */
export function stackRunner(stack: readonly Middleware[], finish: Finish): StackRunner {
  for (let start = 0; start < stack.length; start++) {
    const group = fusedGroups.get(stack[start] as Middleware);
    if (group === undefined || !endsWith(stack, start, group.layers)) continue;
    if (start === 0) return group.build(finish);
    // Inside a stack the group only records its outcome: the outer layers see it, and the
    // dispatcher ends the call once they settle.
    const tail = group.build(recorded);
    // next() of the last outer layer resolves with the group's outcome (a layer may ignore it).
    const runTail = trusted(
      (ctx: CallContext): Promise<Outcome> => new Promise<Outcome>((resolve) => tail(ctx, resolve)),
    );
    const run = compose<CallContext>([...(stack.slice(0, start) as ComposableStack<CallContext>), runTail]);
    return (ctx, report) => reportWhenSettled(ctx, run(ctx), finish, report);
  }
  return onionRunner(stack, finish);
}

function endsWith(stack: readonly Middleware[], start: number, group: readonly Middleware[]): boolean {
  if (stack.length - start !== group.length) return false;
  return group.every((layer, i) => stack[start + i] === layer);
}

// Inside a stack, a fused tail only records its outcome; the dispatcher ends the call.
function recorded(ctx: CallContext): Outcome {
  return ctx.outcome as Outcome;
}
