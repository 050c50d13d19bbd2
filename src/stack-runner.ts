// How the dispatcher runs a stack: a runner takes a call and reports its outcome exactly once.

import { runAttempt } from './attempt.js';
import { compose, type ComposedMiddleware } from './compose.js';
import type { CallContext } from './context.js';
import { toDispatchError } from './errors.js';
import { noop } from './internal/abort.js';
import { isTrusted, trusted } from './internal/trusted.js';
import type { Middleware, Next, Outcome } from './types.js';

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

/** What a fused runner is told about the dispatcher that runs it. */
export interface FusedRunnerOptions {
  /**
   * Whether `ctx.startedAt` is read from the system clock: a first deadline may then count from
   * it while `ctx.inStartingRun` holds (the group started in the same synchronous run as the
   * dispatch).
   */
  readonly startsWithDispatch: boolean;
}

/**
 * Makes the runner of a registered group of layers: it must behave exactly as the layers
 * composed as an onion around the attempt step, reporting each call's outcome once, through
 * `finish`.
 */
export type FusedRunnerFactory = (finish: Finish, options: FusedRunnerOptions) => StackRunner;

interface FusedGroup {
  readonly layers: readonly Middleware[];
  readonly build: FusedRunnerFactory;
}

// Keyed by the group's first layer; a stack matches a group by the identity of its layers.
const fusedGroups = new WeakMap<Middleware, FusedGroup>();

/**
 * Registers `layers`, in this order, to run with the runner `build` makes whenever a stack ends
 * with exactly these layers (the same functions): a preset such as `defaultStack` brings its own
 * fast runner this way, and the core never needs to know what the layers are.
 */
export function fuseLayers(layers: readonly Middleware[], build: FusedRunnerFactory): void {
  const first = layers[0];
  if (first !== undefined) fusedGroups.set(first, { layers: [...layers], build });
}

/**
 * The runner for `stack`: when it ends with a registered group, that group runs fused and the
 * layers before it are composed as an onion around it; any other stack runs as an onion.
 */
export function stackRunner(
  stack: readonly Middleware[],
  finish: Finish,
  options: FusedRunnerOptions,
): StackRunner {
  for (let start = 0; start < stack.length; start++) {
    const group = fusedGroups.get(stack[start] as Middleware);
    if (group === undefined || !endsWith(stack, start, group.layers)) continue;
    if (start === 0) return group.build(finish, options);
    return tailRunner(stack.slice(0, start), group.build(recorded, options), finish);
  }
  return onionRunner(stack, finish);
}

// The layers before a fused group, composed as compose() would, around the group: the group
// reports into a promise the outer layers await, and the call ends (events, the first ending
// winning) only when they settle. Written out rather than composed because the last outer layer's
// guard against overlapping next() calls can ride on the group's own report, which saves every
// call a promise turn.
function tailRunner(outer: readonly Middleware[], tail: StackRunner, finish: Finish): StackRunner {
  const watched = outer.map((layer) => !isTrusted(layer));
  const last = outer.length - 1;
  const guardLast = watched[last] === true;
  const only = outer.length === 1 ? (outer[0] as Middleware) : undefined;
  const through = (ctx: CallContext, runTail: Next): Promise<void> => {
    const run = (index: number): Promise<void> => {
      const layer = outer[index] as Middleware;
      const next: Next =
        index === last ? runTail : watched[index] ? guarded(() => run(index + 1)) : () => run(index + 1);
      return callLayer(layer, ctx, next);
    };
    return run(0);
  };
  return (ctx, report) => {
    let running = false;
    let first: Promise<void> | undefined;
    let resolveTail = noop;
    const tailDone = (): void => {
      running = false;
      resolveTail();
    };
    const runTail: Next = () => {
      if (running && guardLast) return Promise.reject(new Error('next() called multiple times'));
      running = true;
      const settles = new Promise<void>((resolve) => {
        resolveTail = resolve;
      });
      first ??= settles;
      tail(ctx, tailDone);
      return settles;
    };
    const settled = only === undefined ? through(ctx, runTail) : callLayer(only, ctx, runTail);
    // A tail started from here on is in a later run: its deadline reads the clock.
    ctx.inStartingRun = false;
    // The layer handed back the tail's own promise, which only ever fulfils.
    if (settled === first) settled.then(() => report(finish(ctx)));
    else reportWhenSettled(ctx, settled, finish, report);
  };
}

function callLayer(layer: Middleware, ctx: CallContext, next: Next): Promise<void> {
  try {
    return Promise.resolve(layer(ctx, next));
  } catch (error) {
    return Promise.reject(error);
  }
}

// next() for a layer that is not the library's own: a second call while the first runs rejects.
function guarded(next: () => Promise<void>): Next {
  let running = false;
  return () => {
    if (running) return Promise.reject(new Error('next() called multiple times'));
    running = true;
    return next().then(
      () => {
        running = false;
      },
      (error: unknown) => {
        running = false;
        throw error;
      },
    );
  };
}

function endsWith(stack: readonly Middleware[], start: number, group: readonly Middleware[]): boolean {
  if (stack.length - start !== group.length) return false;
  return group.every((layer, i) => stack[start + i] === layer);
}

// Inside a stack, a fused tail only records its outcome; the dispatcher ends the call.
function recorded(ctx: CallContext): Outcome {
  return ctx.outcome as Outcome;
}
