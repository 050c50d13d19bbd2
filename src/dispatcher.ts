/**
 * The dispatcher: composes a stack around the attempt step and turns every call into an outcome.
 * @module
 */

import { runAttempt } from './attempt.js';
import { createBudget, type Budget } from './budget.js';
import { compose, type ComposableStack, type ComposedMiddleware } from './compose.js';
import { CallContext, deliverSafely } from './context.js';
import { DispatchError, describeThrown, toDispatchError } from './errors.js';
import { gather, type DispatchCall, type GatherOptions, type Report } from './gather.js';
import { dispatchOptionsProblem } from './dispatch-options.js';
import { noop, neverAborted, onAbort } from './internal/abort.js';
import { cancelled } from './internal/failures.js';
import { optionKeys, optionsObject, requireFunction } from './internal/options.js';
import { RawJsonArgs } from './internal/raw-json-args.js';
import { trusted } from './internal/trusted.js';
import type { Redactor } from './redact.js';
import type { DispatchOptions, EventListener, Middleware, Outcome } from './types.js';

/** Options for `createDispatcher`. */
export interface DispatcherOptions {
  /** Receives every structured event of every dispatch; a throwing listener is ignored. */
  onEvent?: EventListener;
  /** The time source for `startedAt` and durations. @default Date.now */
  now?: () => number;
  /** Redacts results, envelope messages and every event (see `createRedactor`). @default undefined */
  redact?: Redactor;
}

const dispatcherOptionKeys = optionKeys<DispatcherOptions>({ onEvent: true, now: true, redact: true });

/** Dispatches tool calls through a composed middleware stack. */
export interface Dispatcher {
  /**
   * Runs one tool call through the stack. Always resolves, never rejects: to
   * `{ ok: true, result, attempts }` or a `DispatchError` envelope.
   */
  dispatch<Result = unknown>(
    name: string,
    args: unknown,
    options?: DispatchOptions,
  ): Promise<Outcome<Result>>;
  /**
   * Dispatches many calls, at most `concurrency` at once, and resolves to their outcomes in
   * input order; never rejects for a failed call.
   */
  gatherBounded(calls: readonly DispatchCall[], options?: GatherOptions): Promise<Outcome[]>;
  /**
   * Like `dispatch`, for args that arrive as JSON text, parsed inside the stack: text that is not
   * JSON fails that call with `schema`; `""` means `{}`.
   *
   * @example
   * const outcome = await dispatcher.dispatchJson('search.web', toolCall.function.arguments, {
   *   callId: toolCall.id,
   * });
   */
  dispatchJson<Result = unknown>(
    name: string,
    argsJson: string,
    options?: DispatchOptions,
  ): Promise<Outcome<Result>>;
  /**
   * Adds a listener for every event this dispatcher emits (the ones `onEvent` gets, redacted the
   * same way) and returns the function that removes it. Any number may listen; one that throws is
   * ignored. A call that started before the first listener came keeps running unobserved, so its
   * events are not heard. With no listener a dispatch costs what it did without this method.
   *
   * @example
   * const unsubscribe = dispatcher.subscribe((event) => {
   *   if (event.type === 'dispatch.failure') console.log(event.tool, event.kind);
   * });
   * // later
   * unsubscribe();
   */
  subscribe(listener: EventListener): () => void;
}

/**
 * Composes `stack` (outermost first) around the attempt step, which calls the tool's handler;
 * anything that escapes the stack still becomes an envelope.
 *
 * @example
 * const dispatcher = createDispatcher(defaultStack({ registry }), { onEvent: console.log });
 * const outcome = await dispatcher.dispatch('search.web', { query: 'agents' });
 */
export function createDispatcher(stack: readonly Middleware[], options: DispatcherOptions = {}): Dispatcher {
  if (!Array.isArray(stack)) throw new TypeError('Middleware stack must be an array!');
  const {
    onEvent,
    now = readSystemClock,
    redact,
  } = optionsObject('createDispatcher', options, dispatcherOptionKeys);
  if (onEvent !== undefined) requireFunction('onEvent', onEvent);
  requireFunction('now', now);
  if (
    redact !== undefined &&
    (typeof redact !== 'object' || redact === null || typeof redact.redactValue !== 'function')
  ) {
    throw new TypeError(`redact must be a redactor from createRedactor(), got ${String(redact)}`);
  }
  const calls = new Calls(stack, onEvent, now, redact);

  const dispatch = <Result>(
    name: string,
    args: unknown,
    options: DispatchOptions = noOptions,
  ): Promise<Outcome<Result>> =>
    new Promise((resolve) => calls.startSafely(name, args, options, resolve as Report));

  const dispatchJson = <Result>(
    name: string,
    argsJson: string,
    options: DispatchOptions = noOptions,
  ): Promise<Outcome<Result>> => {
    if (typeof argsJson !== 'string') {
      const refusal = new DispatchError(
        'schema',
        `dispatchJson() needs the args as a JSON string, got ${typeof argsJson}`,
      );
      return Promise.resolve(refusal);
    }
    return dispatch(name, new RawJsonArgs(argsJson), options);
  };

  const gatherBounded = (batch: readonly DispatchCall[], options?: GatherOptions): Promise<Outcome[]> =>
    gather(batch, options, (name, args, callOptions, report) =>
      calls.startSafely(name, args, callOptions === undefined ? noOptions : callOptions, report),
    );

  const subscribe = (listener: EventListener): (() => void) => {
    requireFunction('listener', listener);
    return calls.subscribe(listener);
  };

  return { dispatch, gatherBounded, dispatchJson, subscribe };
}

/** One dispatcher's calls: each started, run through the stack and ended exactly once. */
class Calls {
  private readonly run: ComposedMiddleware<CallContext>;
  // What each new call's context delivers to: `onEvent` alone while nobody subscribed (so an
  // unobserved dispatcher stays unobserved), else the fan-out, which reads the live list.
  private sink: EventListener | undefined;
  private subscribers: readonly EventListener[] = [];
  private readonly fanOut: EventListener = (event) => {
    const { onEvent } = this;
    if (onEvent !== undefined) deliverSafely(onEvent, event);
    // The list is replaced, never changed in place: a listener that unsubscribes while the event
    // is delivered cannot make another miss it.
    for (const listener of this.subscribers) deliverSafely(listener, event);
  };

  constructor(
    stack: readonly Middleware[],
    private readonly onEvent: EventListener | undefined,
    private readonly now: () => number,
    private readonly redactor: Redactor | undefined,
  ) {
    this.run = compose<CallContext>([...(stack as ComposableStack<CallContext>), trusted(attemptStep)]);
    this.sink = onEvent;
  }

  subscribe(listener: EventListener): () => void {
    this.subscribers = [...this.subscribers, listener];
    this.sink = this.fanOut;
    let subscribed = true;
    return () => {
      if (!subscribed) return;
      subscribed = false;
      const index = this.subscribers.indexOf(listener);
      if (index !== -1) this.subscribers = this.subscribers.filter((_, at) => at !== index);
      if (this.subscribers.length === 0) this.sink = this.onEvent;
    };
  }

  // Runs the stack and reports once it settles; whatever it throws still ends as an envelope.
  private runStack(ctx: CallContext, report: Report): void {
    this.run(ctx).then(
      () => report(this.finish(ctx)),
      (error: unknown) => report(this.finish(ctx, toDispatchError(error, ctx.attempt))),
    );
  }

  // Only an injected `now` that throws can make `start` throw, and then before any report: the
  // call still ends with an envelope instead of a rejection or, in a batch, a hang.
  startSafely(name: string, args: unknown, options: DispatchOptions, report: Report): void {
    try {
      this.start(name, args, options, report);
    } catch (error) {
      report(new DispatchError('internal', `The call could not start: ${describeThrown(error)}`));
    }
  }

  // Starts one call and reports its outcome exactly once, possibly before returning. Both
  // `dispatch` and `gatherBounded` build on it; the latter needs no promise per call.
  private start(name: string, args: unknown, callOptions: DispatchOptions, report: Report): void {
    const problem = callOptions === noOptions ? undefined : readableOptionsProblem(callOptions);
    const options = problem === undefined ? callOptions : noOptions;
    const signal = options.signal ?? neverAborted;
    const { now } = this;
    const ctx = new CallContext({
      callId: options.callId,
      toolName: typeof name === 'string' ? name : describeName(name),
      args,
      options,
      budget: problem === undefined ? resolveBudget(options.budget) : undefined,
      signal,
      startedAt: now(),
      onEvent: this.sink,
      redactor: this.redactor,
    });
    // Failures found before any layer runs still end through `finish`, so observers see them,
    // and a microtask later, so that no event fires inside the dispatch() call itself.
    const refusal =
      problem !== undefined
        ? new DispatchError('schema', `Invalid dispatch options: ${problem}`)
        : typeof name !== 'string'
          ? new DispatchError('not_found', `Tool names are strings, got ${ctx.toolName}`)
          : signal !== neverAborted && signal.aborted
            ? cancelled(ctx, signal)
            : undefined;
    if (refusal !== undefined) {
      ctx.outcome = refusal;
      return queueMicrotask(() => report(this.finish(ctx)));
    }
    if (signal === neverAborted) return this.runStack(ctx, report);
    // The caller's abort ends the call at once, whatever the layers are doing; they still see
    // the signal and clean up, but their late outcome no longer matters to this caller.
    let answered = false;
    let unsubscribe = noop;
    const answer = (outcome: Outcome) => {
      if (answered) return;
      answered = true;
      unsubscribe();
      report(outcome);
    };
    this.runStack(ctx, answer);
    if (!answered) unsubscribe = onAbort(signal, () => answer(this.finish(ctx, cancelled(ctx, signal))));
  }

  private finish(ctx: CallContext, final?: Outcome): Outcome {
    // The first ending wins; a stack that settles after the caller aborted reports nothing.
    if (ctx.finished !== undefined) return ctx.finished;
    let outcome =
      final ??
      ctx.outcome ??
      new DispatchError('internal', 'The middleware stack finished without an outcome', {
        attempts: ctx.attempt,
      });
    if (this.redactor !== undefined) outcome = redactOutcome(outcome, this.redactor);
    ctx.finished = outcome;
    if (!ctx.observed) return outcome;
    const durationMs = this.elapsedSince(ctx.startedAt);
    if (outcome.ok) {
      ctx.emit('dispatch.success', { attempts: outcome.attempts, durationMs });
    } else {
      ctx.emit('dispatch.failure', {
        kind: outcome.kind,
        attempts: outcome.attempts,
        message: outcome.message,
        durationMs,
      });
    }
    return outcome;
  }

  // The end of a call runs inside promise callbacks: an injected `now` that throws there would
  // leave the call unanswered, so a broken clock costs the event its duration, not the call.
  private elapsedSince(startedAt: number): number {
    // Called as a plain function, as given: never as a method of this class.
    const { now } = this;
    try {
      return now() - startedAt;
    } catch {
      return Number.NaN;
    }
  }
}

// The innermost step of every stack. Its promise is kept on the context: a limit set right
// outside it knows the attempt ends with the limit by itself (see untilLimitEnds).
function attemptStep(ctx: CallContext): Promise<void> {
  const running = runAttempt(ctx);
  ctx.attemptRun = running;
  return running;
}

// The result and message the caller gets, redacted; a redactor that throws fails the call closed.
function redactOutcome(outcome: Outcome, redactor: Redactor): Outcome {
  try {
    if (!outcome.ok) return redactor.redactValue(outcome);
    const result = redactor.redactValue(outcome.result);
    if (result === outcome.result) return outcome;
    return { ...outcome, result };
  } catch {
    // Its message is not shown: it might quote what it failed on.
    return new DispatchError('internal', 'The outcome could not be redacted', { attempts: outcome.attempts });
  }
}

// Options are read before any layer can catch; a hostile getter must still end as an envelope.
// Shared by every call without options, which `start` knows by identity and need not check.
const noOptions: DispatchOptions = Object.freeze({});

function readableOptionsProblem(options: unknown): string | undefined {
  try {
    return dispatchOptionsProblem(options);
  } catch (error) {
    return `options could not be read: ${describeThrown(error)}`;
  }
}

// The default `now`: the same reading as `systemClock.now()`.
function readSystemClock(): number {
  return Date.now();
}

function describeName(name: unknown): string {
  try {
    return String(name);
  } catch {
    return typeof name;
  }
}

function resolveBudget(budget: number | Budget | undefined): Budget | undefined {
  if (typeof budget !== 'number') return budget;
  // A plain number is this call's own budget; one at or below zero fails fast in budgetGuard.
  return createBudget(Math.max(0, budget));
}
