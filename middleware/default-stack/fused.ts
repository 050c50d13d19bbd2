/**
 * The default stack, fused: its layers' common path (no idempotency key, a synchronous validator,
 * a free slot, a first attempt that succeeds) run as plain calls around the one attempt step;
 * anything else continues through the onion from the layer it reached.
 * @module
 */

import { isLocalBudget } from '../../src/budget.js';
import type { DispatchError } from '../../src/errors.js';
import { attempt } from '../../src/attempt.js';
import {
  composeWithAttempt,
  failWith,
  reportWhenSettled,
  type CallContext,
  type Finish,
  type FusedRunnerFactory,
  type Report,
} from '../../src/stack-runner.js';
import type { DispatchContext, Middleware } from '../../src/types.js';
import type { Entry, SlotGate } from '../concurrency-limit/gate.js';
import type { RateLimitParts } from '../rate-limit/index.js';
import type { WindowedBudgetParts } from '../windowed-budget/index.js';
import { AttemptGuards } from './guards.js';
import { maxTimerDelayMs } from '../kit.js';
import type { RetryParts } from '../retry.js';
import type { TimeoutParts } from '../timeout/index.js';

/** How the layers from the concurrency limit inward ended: failed with `error`, or not. */
type Done = (failed: boolean, error?: unknown) => void;

/** A step that may fail a call: the envelope, or `undefined` to go on. */
type Check = (ctx: DispatchContext) => DispatchError | undefined;

/** A step that may fail a call, answering with a promise when it must wait. */
type AsyncCheck = (ctx: DispatchContext) => DispatchError | undefined | Promise<DispatchError | undefined>;

/** The default stack's layers, by name, and the parts of each that the runner calls. */
export interface DefaultStackParts {
  readonly errorMapping: Middleware;
  readonly toolLookup: { readonly layer: Middleware; readonly lookup: Check };
  readonly schemaValidation: {
    readonly layer: Middleware;
    readonly check: (ctx: DispatchContext) => DispatchError | undefined | Promise<DispatchError | undefined>;
  };
  /** The approval gate after validation, if any, and its check. */
  readonly approvalGate?: { readonly layer: Middleware; readonly check: AsyncCheck } | undefined;
  /** What runs after a success, before the call ends: the tool's output contract, the output guard. */
  readonly afterSuccess?: AsyncCheck | undefined;
  readonly budgetGuard: { readonly layer: Middleware; readonly check: Check };
  readonly idempotency: Middleware;
  /** A layer between idempotency and the concurrency limit (a circuit breaker), if any. */
  readonly breaker: Middleware | undefined;
  readonly concurrencyLimit: { readonly layer: Middleware; readonly gate: SlotGate };
  readonly retry: RetryParts;
  /** The `rateLimit` layers between retry and timeout, outermost first. */
  readonly rateLimits: readonly RateLimitParts[];
  /** The `windowedBudget` layers after them. */
  readonly windowedBudgets: readonly WindowedBudgetParts[];
  readonly timeout: TimeoutParts;
}

/**
 * The runner of the default stack: equivalent to composing its layers as an onion around the
 * attempt step, calling the same parts one after another on the common path.
 */
export function fusedDefaultStack(parts: DefaultStackParts): FusedRunnerFactory {
  return (finish) => {
    const stack = new FusedStack(parts, finish);
    return function runFusedStack(ctx, report) {
      stack.run(ctx, report);
    };
  };
}

// The onion from each layer inward, for calls that leave the common path there.
interface Onions {
  /** From the approval gate (or the budget guard without one): after an asynchronous validation. */
  readonly fromGate: (ctx: CallContext) => Promise<void>;
  readonly fromBudget: (ctx: CallContext) => Promise<void>;
  readonly fromIdempotency: (ctx: CallContext) => Promise<void>;
  readonly fromConcurrency: (ctx: CallContext) => Promise<void>;
  readonly fromRetry: (ctx: CallContext) => Promise<void>;
  /** The layers retry runs each attempt through. */
  readonly insideRetry: (ctx: CallContext) => Promise<void>;
}

function onionsOf(parts: DefaultStackParts): Onions {
  const { approvalGate, breaker } = parts;
  const rateLimits = parts.rateLimits.map((part) => part.layer);
  const perAttempt = [...rateLimits, ...parts.windowedBudgets.map((part) => part.layer), parts.timeout.layer];
  const fromRetry = [parts.retry.layer, ...perAttempt];
  const fromConcurrency = [parts.concurrencyLimit.layer, ...fromRetry];
  const fromIdempotency = [
    parts.idempotency,
    ...(breaker === undefined ? [] : [breaker]),
    ...fromConcurrency,
  ];
  const fromBudget = composeWithAttempt([parts.budgetGuard.layer, ...fromIdempotency]);
  return {
    fromGate:
      approvalGate === undefined
        ? fromBudget
        : composeWithAttempt([approvalGate.layer, parts.budgetGuard.layer, ...fromIdempotency]),
    fromBudget,
    fromIdempotency: composeWithAttempt(fromIdempotency),
    fromConcurrency: composeWithAttempt(fromConcurrency),
    fromRetry: composeWithAttempt(fromRetry),
    insideRetry: composeWithAttempt(perAttempt),
  };
}

class FusedStack {
  readonly #parts: DefaultStackParts;
  readonly #finish: Finish;
  readonly #onions: Onions;
  readonly #gate: SlotGate;
  readonly #guards: AttemptGuards;

  constructor(parts: DefaultStackParts, finish: Finish) {
    this.#parts = parts;
    this.#finish = finish;
    this.#onions = onionsOf(parts);
    this.#gate = parts.concurrencyLimit.gate;
    this.#guards = new AttemptGuards(parts.rateLimits, parts.windowedBudgets);
  }

  run(ctx: CallContext, report: Report): void {
    const { toolLookup, schemaValidation, approvalGate } = this.#parts;
    let checked: ReturnType<AsyncCheck>;
    let onion = this.#onions.fromGate;
    try {
      checked = toolLookup.lookup(ctx) ?? schemaValidation.check(ctx);
      if (checked === undefined && approvalGate !== undefined) {
        // A call that redeems a token runs through the gate's layer, which records its one run.
        if (typeof ctx.options.approval === 'string') return this.#settle(ctx, onion(ctx), report);
        checked = approvalGate.check(ctx);
        onion = this.#onions.fromBudget;
      }
      if (checked === undefined) return this.#afterValidation(ctx, report);
    } catch (error) {
      return this.#failSoon(ctx, error, report);
    }
    if (!(checked instanceof Promise)) return this.#failSoon(ctx, checked, report);
    this.#settle(
      ctx,
      checked.then((problem) => (problem === undefined ? onion(ctx) : Promise.reject(problem))),
      report,
    );
  }

  #afterValidation(ctx: CallContext, report: Report): void {
    const spent = this.#parts.budgetGuard.check(ctx);
    if (spent !== undefined) return this.#failSoon(ctx, spent, report);
    if (ctx.options.idempotencyKey !== undefined) {
      return this.#settle(ctx, this.#onions.fromIdempotency(ctx), report);
    }
    const { breaker } = this.#parts;
    if (breaker === undefined) {
      const finish = this.#finish;
      return this.#fromConcurrency(ctx, (failed, error) =>
        failed ? report(failWith(ctx, error, finish)) : this.#succeed(ctx, report),
      );
    }
    const inner = (): Promise<void> =>
      new Promise<void>((resolve, reject) =>
        this.#fromConcurrency(ctx, (failed, error) => (failed ? reject(error) : resolve())),
      );
    let running: Promise<void>;
    try {
      running = breaker(ctx, inner);
    } catch (error) {
      running = Promise.reject(error);
    }
    this.#settle(ctx, running, report);
  }

  // The concurrency limit inward, as its layer and the ones inside it would end: a free slot
  // runs the first attempt here, inside its deadline; anything else runs through the onion.
  #fromConcurrency(ctx: CallContext, done: Done): void {
    const slot = this.#gate.tryEnter(ctx);
    if (slot === undefined) return this.#follow(this.#onions.fromConcurrency(ctx), done, undefined);
    const { fromRetry } = this.#onions;
    // A budget that may answer with a promise is taken by the onion's attempt step, which waits.
    if (ctx.budget !== undefined && !isLocalBudget(ctx.budget))
      return this.#follow(fromRetry(ctx), done, slot);
    const { timeout } = this.#parts;
    let timeoutMs: number;
    try {
      timeoutMs = timeout.deadlineMs(ctx);
    } catch (error) {
      // The timeout layer failing the first attempt: retry sees it, as in the onion.
      return queueMicrotask(() => this.#afterFirstFailure(ctx, error, done, slot));
    }
    if (timeoutMs > maxTimerDelayMs) return this.#follow(fromRetry(ctx), done, slot);
    // A limiter that makes the attempt wait, or a budget that answers later, runs as its layer.
    const held = this.#guards.enter(ctx);
    if (held === undefined) return this.#follow(fromRetry(ctx), done, slot);
    let restore: () => void;
    try {
      restore = ctx.limit({ timeoutMs, clock: timeout.clock });
    } catch (error) {
      this.#guards.ended(ctx, held, true, error, false);
      return queueMicrotask(() => this.#afterFirstFailure(ctx, error, done, slot));
    }
    const before = ctx.attempt;
    attempt(ctx, (failed, error) => {
      restore();
      this.#guards.ended(ctx, held, failed, error, ctx.attempt > before);
      if (failed) return this.#afterFirstFailure(ctx, error, done, slot);
      slot.release();
      done(false);
    });
  }

  // The first attempt failed: retry decides, and runs the next ones through the onion.
  #afterFirstFailure(ctx: CallContext, error: unknown, done: Done, slot: Entry): void {
    let rest: Promise<void>;
    try {
      rest = this.#parts.retry.afterFailure(ctx, () => this.#onions.insideRetry(ctx), 1, error);
    } catch (final) {
      slot.release();
      return done(true, final);
    }
    this.#follow(rest, done, slot);
  }

  // Ends with `running`, freeing the slot first when the call holds one.
  #follow(running: Promise<void>, done: Done, slot: Entry | undefined): void {
    const end = (failed: boolean, error?: unknown) => {
      slot?.release();
      done(failed, error);
    };
    running.then(
      () => end(false),
      (error: unknown) => end(true, error),
    );
  }

  #settle(ctx: CallContext, running: Promise<unknown>, report: Report): void {
    if (this.#parts.afterSuccess === undefined) return reportWhenSettled(ctx, running, this.#finish, report);
    running.then(
      () => this.#succeed(ctx, report),
      (error: unknown) => report(failWith(ctx, error, this.#finish)),
    );
  }

  // The layers outside the lookup see a success last: its output contract, the output guard.
  #succeed(ctx: CallContext, report: Report): void {
    const { afterSuccess } = this.#parts;
    const finish = this.#finish;
    if (afterSuccess === undefined || ctx.outcome?.ok !== true) return report(finish(ctx));
    let checked: ReturnType<AsyncCheck>;
    try {
      checked = afterSuccess(ctx);
    } catch (error) {
      return report(failWith(ctx, error, finish));
    }
    if (checked === undefined) return report(finish(ctx));
    if (!(checked instanceof Promise)) return report(failWith(ctx, checked, finish));
    checked.then(
      (problem) => report(problem === undefined ? finish(ctx) : failWith(ctx, problem, finish)),
      (error: unknown) => report(failWith(ctx, error, finish)),
    );
  }

  // Reported a microtask later, as through the onion: a listener that dispatches again never nests.
  #failSoon(ctx: CallContext, error: unknown, report: Report): void {
    queueMicrotask(() => report(failWith(ctx, error, this.#finish)));
  }
}
