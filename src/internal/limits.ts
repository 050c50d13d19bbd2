/**
 * The limits a layer puts on the layers inside it (`ctx.limit`): a deadline, a signal, or both.
 * @module
 */

import { DispatchError } from '../errors.js';
import { systemClock } from '../clock.js';
import type { AttemptLimits, DeadlineClock, DispatchContext, ToolContext } from '../types.js';
import { maxTimerDelayMs, neverAborted, noop, onAbort } from './abort.js';
import { DeadlineScheduler, IdleDeadline, type DeadlineList, type DeadlineNode } from './deadlines.js';
import { cancelled, markDeadline } from './failures.js';

/**
 * Settles as `running` (the layers inside a limit) does, or ends when the innermost limit on `ctx`
 * ends first (its deadline passed, or the call was cancelled): at once with the limit's envelope,
 * or, when an attempt is under way beneath it, with that attempt's own outcome as soon as it has
 * one. The attempt step ends on its own (a tool's `reconcile` may still turn its timeout into a
 * success or another failure); a layer between the limit and the attempt that never settles (or
 * never calls `next`) would otherwise hold the call, and every slot outside it, for ever.
 */
export function untilLimitEnds(ctx: DispatchContext, running: Promise<void>): Promise<void> {
  const { currentLimit: limit, attemptRun } = ctx as { currentLimit?: Limit; attemptRun?: Promise<void> };
  if (limit === undefined || (limit.ended && limit.error === undefined)) return running;
  // The attempt step itself, right inside the limit: it ends with the limit by itself.
  if (running === attemptRun) return running;
  return new Promise<void>((resolve, reject) => {
    let done = false;
    const settle = (failed: boolean, error?: unknown): void => {
      if (done) return;
      done = true;
      limit.unwait(waiter);
      if (failed) reject(error);
      else resolve();
    };
    const waiter: LimitWaiter = {
      limitEnded(error) {
        // What the layers inside answer late is nobody's.
        running.then(undefined, noop);
        const attempt = limit.attempt;
        if (attempt === undefined) settle(true, error);
        else attempt.onEnd(settle);
      },
    };
    if (limit.error !== undefined) waiter.limitEnded(limit.error, limit.reason, false);
    else limit.wait(waiter);
    running.then(
      () => settle(false),
      (error: unknown) => settle(true, error),
    );
  });
}

/** How an attempt ended: failed with `error`, or succeeded. */
export type AttemptEnd = (failed: boolean, error?: unknown) => void;

/** An attempt under way beneath one or more limits; their cuts wait for it, as it ends on its own. */
export class AttemptInFlight {
  readonly #limit: Limit;
  #ended = false;
  #failed = false;
  #error: unknown = undefined;
  // Only a limit that ends while the attempt runs listens: most attempts never allocate this.
  #listeners: AttemptEnd[] | undefined = undefined;

  /** Marks the attempt under way beneath `limit` and every limit outside it, until it ends. */
  constructor(limit: Limit) {
    this.#limit = limit;
    for (let each: Limit | undefined = limit; each !== undefined; each = each.outer) each.attempt = this;
  }

  /** Calls `listener` once the attempt has ended (at once when it has). */
  onEnd(listener: AttemptEnd): void {
    if (this.#ended) listener(this.#failed, this.#error);
    else (this.#listeners ??= []).push(listener);
  }

  /** The attempt ended: the limits no longer hold it, and whoever waits for it is told. */
  end(failed: boolean, error: unknown): void {
    for (let each: Limit | undefined = this.#limit; each !== undefined; each = each.outer) {
      if (each.attempt === this) each.attempt = undefined;
    }
    this.#ended = true;
    this.#failed = failed;
    this.#error = error;
    const listeners = this.#listeners;
    this.#listeners = undefined;
    if (listeners !== undefined) for (const listener of listeners) listener(failed, error);
  }
}

/**
 * The `progress` a handler is given under `limit`: `report` itself, or, when a limit around the
 * attempt has an idle deadline, one that moves those deadlines back before it reports.
 */
export function progressUnder(
  limit: Limit | undefined,
  report: ToolContext['progress'],
): ToolContext['progress'] {
  let idle: Limit[] | undefined;
  for (let each = limit; each !== undefined; each = each.outer) if (each.idle) (idle ??= []).push(each);
  if (idle === undefined) return report;
  const limits = idle;
  return function progress(value: number, total?: number, message?: string): void {
    if (typeof value === 'number' && !Number.isNaN(value)) for (const each of limits) each.progressed();
    report(value, total, message);
  };
}

/** Told once when a limit ends: its envelope, the signal's reason, and whether a deadline passed. */
export interface LimitWaiter {
  limitEnded(error: DispatchError, reason: unknown, deadline: boolean): void;
}

const schedulers = new WeakMap<DeadlineClock, DeadlineScheduler>();

function schedulerFor(clock: DeadlineClock): DeadlineScheduler {
  let scheduler = schedulers.get(clock);
  if (scheduler === undefined) {
    scheduler = new DeadlineScheduler(clock);
    schedulers.set(clock, scheduler);
  }
  return scheduler;
}

/** One `ctx.limit` call: the deadline and stop the layers inside it run under. */
export class Limit implements DeadlineNode, LimitWaiter {
  /** When the attempts inside must end, on the deadline's clock; `Infinity` for none. */
  readonly deadline: number;
  ended = false;
  error: DispatchError | undefined = undefined;
  reason: unknown = undefined;
  // Its own deadline, as a node of the scheduler's lists (only when it is the binding one).
  ms = 0;
  at = Infinity;
  cancelled = false;
  /** The attempt under way beneath this limit, if any. */
  attempt: AttemptInFlight | undefined = undefined;
  list: DeadlineList | undefined = undefined;
  previous: DeadlineNode | undefined = undefined;
  next: DeadlineNode | undefined = undefined;
  #controller: AbortController | undefined = undefined;
  #waiters: LimitWaiter | LimitWaiter[] | undefined = undefined;
  #scheduler: DeadlineScheduler | undefined = undefined;
  #idle: IdleDeadline | undefined = undefined;
  #unwatch: () => void = noop;
  #replacesSignal: boolean;
  readonly #explanation: string | undefined;
  readonly #ctx: DispatchContext;
  readonly #outer: Limit | undefined;
  /** The signal it was set on (the context's base signal then). */
  readonly base: AbortSignal;
  /** The deadline outside it when it was set. */
  readonly outerDeadline: number;
  /** What it was set with: a run beside it (a hedge) is set with the same. */
  readonly limits: AttemptLimits;

  constructor(
    ctx: DispatchContext,
    outer: Limit | undefined,
    base: AbortSignal,
    deadline: number,
    limits: AttemptLimits,
  ) {
    this.#ctx = ctx;
    this.#outer = outer;
    this.base = base;
    this.outerDeadline = deadline;
    this.limits = limits;
    this.#replacesSignal = limits.signal !== undefined;
    this.#explanation = limits.explanation;
    this.deadline = deadline;
    const { timeoutMs, idleMs } = limits;
    const clock = limits.clock ?? systemClock;
    // The own end of an idle deadline (shorter than the total): set when it binds before `deadline`.
    let idleUntil: number | undefined;
    if (
      idleMs !== undefined &&
      idleMs <= maxTimerDelayMs &&
      !(timeoutMs !== undefined && idleMs >= timeoutMs)
    ) {
      const now = clock.now();
      if (now + idleMs < deadline) {
        const total = timeoutMs !== undefined && timeoutMs <= maxTimerDelayMs ? now + timeoutMs : Infinity;
        idleUntil = total < deadline ? total : Infinity;
        // The latest the attempts inside may end, which is what they and the handler see.
        this.deadline = Math.min(total, deadline);
        this.ms = timeoutMs ?? Infinity;
      }
    } else if (timeoutMs !== undefined && timeoutMs <= maxTimerDelayMs) {
      const at = clock.now() + timeoutMs;
      if (at < deadline) {
        this.deadline = at;
        this.at = at;
        this.ms = timeoutMs;
        this.#scheduler = schedulerFor(clock);
      }
    }
    if (this.#watch(outer, limits.signal ?? base)) return;
    if (this.#scheduler !== undefined) this.#scheduler.schedule(this);
    else if (idleUntil !== undefined) {
      // The outer limit's deadline ends this one anyway: the idle timer stops short of it.
      this.#idle = new IdleDeadline(clock, idleMs as number, idleUntil, deadline, (idle) =>
        this.expire(idle),
      );
    }
  }

  // Watches what ends this limit; true when that has already happened.
  #watch(outer: Limit | undefined, signal: AbortSignal): boolean {
    if (outer !== undefined) {
      if (outer.error !== undefined && (!this.#replacesSignal || outer.error.kind === 'timeout')) {
        this.#end(outer.error as DispatchError, outer.reason, false);
        return true;
      }
      if (!outer.ended) outer.wait(this);
      if (!this.#replacesSignal) return false;
    }
    if (signal === neverAborted) return false;
    if (signal.aborted) {
      this.#end(cancelled(this.#ctx, signal), signal.reason, false);
      return true;
    }
    this.#unwatch = onAbort(signal, () => this.#end(cancelled(this.#ctx, signal), signal.reason, false));
    return false;
  }

  /** The limit this one is nested in, if any. */
  get outer(): Limit | undefined {
    return this.#outer;
  }

  /** Whether progress reports move this limit's deadline (`idleMs`). */
  get idle(): boolean {
    return this.#idle !== undefined;
  }

  /** A handler reported progress: an idle deadline moves back to `idleMs` from now. */
  progressed(): void {
    this.#idle?.touch();
  }

  /** The signal of the layers inside, built on first read. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.error !== undefined) this.#controller.abort(this.reason);
    }
    return this.#controller.signal;
  }

  /** Tells `waiter` when this limit ends; nothing when it is removed first. */
  wait(waiter: LimitWaiter): void {
    const waiters = this.#waiters;
    if (waiters === undefined) this.#waiters = waiter;
    else if (Array.isArray(waiters)) waiters.push(waiter);
    else this.#waiters = [waiters, waiter];
  }

  /** Stops telling `waiter`. */
  unwait(waiter: LimitWaiter): void {
    const waiters = this.#waiters;
    if (waiters === waiter) this.#waiters = undefined;
    else if (Array.isArray(waiters)) {
      const index = waiters.indexOf(waiter);
      if (index !== -1) waiters.splice(index, 1);
    }
  }

  /** An outer limit ended: so does this one, unless it replaced the signal and no deadline passed. */
  limitEnded(error: DispatchError, reason: unknown, deadline: boolean): void {
    if (this.#replacesSignal && !deadline) return;
    this.#end(error, reason, deadline);
  }

  /**
   * The deadline passed: `dispatch.timeout` is emitted and everything inside ends with `timeout`;
   * `idle` when it was an idle deadline that passed for want of progress.
   */
  expire(idle = false): void {
    if (this.ended) return;
    const ctx = this.#ctx;
    const idleMs = idle ? this.#idle?.idleMs : undefined;
    const why = this.#explanation === undefined ? '' : `: ${this.#explanation}`;
    const error = markDeadline(
      new DispatchError(
        'timeout',
        idleMs === undefined
          ? `"${ctx.displayName}" timed out after ${this.ms} ms (attempt ${ctx.attempt})${why}`
          : `"${ctx.displayName}" timed out: no progress for ${idleMs} ms (attempt ${ctx.attempt})${why}`,
        { attempts: ctx.attempt },
      ),
    );
    if (idleMs === undefined) ctx.emit('dispatch.timeout', { timeoutMs: this.ms });
    else ctx.emit('dispatch.timeout', { timeoutMs: idleMs, idle: true });
    this.#end(error, error, true);
  }

  /** The layer that set this limit is done: it never ends after this, and holds nothing. */
  dispose(): void {
    if (this.ended) return;
    this.ended = true;
    this.#release();
  }

  #end(error: DispatchError, reason: unknown, deadline: boolean): void {
    if (this.ended) return;
    this.ended = true;
    this.error = error;
    this.reason = reason;
    const waiters = this.#waiters;
    this.#release();
    if (waiters !== undefined) {
      for (const waiter of Array.isArray(waiters) ? [...waiters] : [waiters])
        waiter.limitEnded(error, reason, deadline);
    }
    this.#controller?.abort(reason);
  }

  #release(): void {
    this.#waiters = undefined;
    this.#scheduler?.cancel(this);
    this.#idle?.cancel();
    this.#unwatch();
    this.#unwatch = noop;
    this.#outer?.unwait(this);
  }
}
