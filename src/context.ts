/**
 * The concrete per-dispatch context: the dispatch's data, its events and its limits.
 * @module
 */

import type { Budget } from './budget.js';
import { isDispatchError } from './errors.js';
import { Limit } from './internal/limits.js';
import { ignoreRejection } from './internal/thenable.js';
import type { Redactor } from './redact.js';
import type { DispatchError } from './errors.js';
import type {
  AttemptLimits,
  DispatchContext,
  DispatchEvent,
  DispatchOptions,
  EventListener,
  Outcome,
  Tool,
} from './types.js';

/** What the dispatcher knows of a call when it starts it. */
export interface CallContextOptions {
  /** The caller's `callId`, if it gave one. */
  callId: string | undefined;
  toolName: string;
  args: unknown;
  options: DispatchOptions;
  budget: Budget | undefined;
  /** The caller's signal, or `neverAborted`. */
  signal: AbortSignal;
  startedAt: number;
  onEvent: EventListener | undefined;
  /** The dispatcher's redactor, if it has one. */
  redactor?: Redactor | undefined;
}

/** The `DispatchContext` the dispatcher makes for each call. */
// The generated call ids' process-wide part: 96 random bits, then a counter for each call.
const processCallPrefix = Buffer.from(globalThis.crypto.getRandomValues(new Uint8Array(12))).toString(
  'base64url',
);
let nextCallNumber = 0;

// Limits a layer outside restored over while their own layer was still running: their restore is
// then a no-op.
const overtaken = new WeakSet<Limit>();

export class CallContext {
  // Assigned in the constructor, in the order the positional version had them, so every context
  // keeps the same property order (what a spread or JSON.stringify of it shows).
  readonly toolName: string;
  args: unknown;
  readonly options: DispatchOptions;
  budget: Budget | undefined;
  /** The signal under any limit: the caller's, or one a layer set. */
  baseSignal: AbortSignal;
  readonly startedAt: number;
  private readonly onEvent: EventListener | undefined;
  tool: Tool | undefined;
  attempt: number;
  outcome: Outcome | undefined;
  /** What the dispatch resolved to, once it has; set by the dispatcher only. */
  finished: Outcome | undefined;
  /** When the current attempt must end, on its deadline's clock; `Infinity` for none. */
  deadline: number;
  /** The innermost limit a layer set, if any: the attempt step waits on it. */
  currentLimit: Limit | undefined;
  /** The latest attempt step's promise: a limit set right outside it need not watch it. */
  attemptRun: Promise<void> | undefined;
  private stateBag: Record<string, unknown> | undefined;
  private listeners: EventListener[] | undefined;
  private givenCallId: string | undefined;
  readonly redactor: Redactor | undefined;

  constructor(call: CallContextOptions) {
    this.toolName = call.toolName;
    this.args = call.args;
    this.options = call.options;
    this.budget = call.budget;
    this.baseSignal = call.signal;
    this.startedAt = call.startedAt;
    this.onEvent = call.onEvent;
    this.tool = undefined;
    this.attempt = 0;
    this.outcome = undefined;
    this.finished = undefined;
    this.deadline = Infinity;
    this.currentLimit = undefined;
    this.attemptRun = undefined;
    this.stateBag = undefined;
    this.listeners = undefined;
    this.givenCallId = call.callId;
    this.redactor = call.redactor;
  }

  // Built on first read: most calls never need their generated id. A random prefix per process
  // and a counter: two processes never make the same id (an approval request is keyed on it), and
  // the attempt step, which reads it on every attempt, pays for no random bytes.
  get callId(): string {
    return (this.givenCallId ??= `call-${processCallPrefix}-${(nextCallNumber++).toString(36)}`);
  }

  /** Whether anyone receives this dispatch's events. */
  get observed(): boolean {
    return this.onEvent !== undefined || this.listeners !== undefined;
  }

  get signal(): AbortSignal {
    return this.currentLimit === undefined ? this.baseSignal : this.currentLimit.signal;
  }

  // A layer that sets the signal itself (and puts the old one back) still works: the attempt
  // step then watches that signal, under the same deadline.
  /**
   * Replaces the signal and drops the current limit.
   * @deprecated Use `limit({ signal })`, which keeps the limits outside and returns the restore.
   */
  set signal(signal: AbortSignal) {
    this.baseSignal = signal;
    this.currentLimit = undefined;
  }

  limit(limits: AttemptLimits): () => void {
    const { baseSignal, currentLimit, deadline } = this;
    const limit = new Limit(this, currentLimit, baseSignal, deadline, limits);
    this.currentLimit = limit;
    this.deadline = limit.deadline;
    return () => {
      limit.dispose();
      if (overtaken.has(limit)) return;
      // A layer inside may still be settling when this one returns at its deadline: its restore,
      // run afterwards, must not put back this limit, which has ended (retry would read its
      // aborted signal as the call's and give up on a retryable timeout).
      let inner = this.currentLimit;
      while (inner !== undefined && inner !== limit) inner = inner.outer;
      if (inner === limit) {
        for (let over = this.currentLimit; over !== limit; over = over?.outer) overtaken.add(over as Limit);
      }
      this.baseSignal = baseSignal;
      this.currentLimit = currentLimit;
      this.deadline = deadline;
    };
  }

  /** Runs `run` beside the run under the current limit (see `runBranch`). */
  branch(run: () => Promise<void>): Branch | undefined {
    const { baseSignal, currentLimit: beside, deadline } = this;
    if (beside === undefined) return undefined;
    // On the limits the current one was set on, under one set with the same, so neither holds the other.
    this.baseSignal = beside.base;
    this.currentLimit = beside.outer;
    this.deadline = beside.outerDeadline;
    const restoreLimit = this.limit(beside.limits);
    const limit = this.currentLimit as Limit;
    let running: Promise<void>;
    try {
      running = run();
    } catch (error) {
      running = Promise.reject(error);
    } finally {
      // The run beside goes on under its limit; the context is as the layer found it.
      this.baseSignal = baseSignal;
      this.currentLimit = beside;
      this.deadline = deadline;
    }
    return {
      running,
      // Ends the run's limit and leaves the context's limits as they are (the other run's).
      restore: () => {
        const { baseSignal: signalNow, currentLimit: limitNow, deadline: deadlineNow } = this;
        restoreLimit();
        this.baseSignal = signalNow;
        this.currentLimit = limitNow;
        this.deadline = deadlineNow;
      },
      end: (error, reason) => limit.limitEnded(error, reason, false),
      endBeside: (error, reason) => beside.limitEnded(error, reason, false),
    };
  }

  // What console.log and util.inspect show: the dispatch as middleware sees it, not the
  // bookkeeping fields (TypeScript-private, so plain properties) or the attempt machinery.
  [Symbol.for('nodejs.util.inspect.custom')](): Record<string, unknown> {
    return {
      callId: this.callId,
      toolName: this.toolName,
      args: this.args,
      options: this.options,
      attempt: this.attempt,
      outcome: this.outcome,
      startedAt: this.startedAt,
    };
  }

  get state(): Record<string, unknown> {
    return (this.stateBag ??= {});
  }

  get displayName(): string {
    return this.options.displayName ?? this.toolName;
  }

  listen(listener: EventListener): () => void {
    const listeners = (this.listeners ??= []);
    listeners.push(listener);
    let listening = true;
    return () => {
      if (!listening) return;
      listening = false;
      const index = listeners.indexOf(listener);
      if (index !== -1) listeners.splice(index, 1);
    };
  }

  emit(type: string, details?: Record<string, unknown>): void {
    if (this.onEvent === undefined && this.listeners === undefined) return;
    // The event's own fields come first, the details after them, and the own fields are written
    // back, so a detail can never pass for one of them.
    const { toolName: tool, callId, attempt, redactor } = this;
    // Every event passes the redactor, whoever emits it: no sink sees a secret a detail held.
    if (details !== undefined && redactor !== undefined) details = redactor.redactValue(details);
    const event = { type, tool, callId, attempt, ...details } as Record<string, unknown>;
    if (details !== undefined) {
      event['type'] = type;
      event['tool'] = tool;
      event['callId'] = callId;
      event['attempt'] = attempt;
    }
    // An envelope rides along for listeners that judge it, but events stay plain JSON data.
    if (details !== undefined && isDispatchError(details.error)) {
      Object.defineProperty(event, 'error', { value: details.error, enumerable: false });
    }
    if (this.onEvent !== undefined) deliverSafely(this.onEvent, event as DispatchEvent);
    const { listeners } = this;
    if (listeners === undefined) return;
    // A listener that unsubscribes while the event is delivered must not make another miss it.
    for (const listener of listeners.length === 1 ? listeners : [...listeners])
      deliverSafely(listener, event as DispatchEvent);
  }
}

/** One run of the layers inside, beside the run under the limit that was current (see `runBranch`). */
export interface Branch {
  /** The run's promise: settles as the layers inside do (a synchronous throw becomes a rejection). */
  readonly running: Promise<void>;
  /**
   * Ends the run's limit: call it once `running` has settled, after reading what the run left on
   * the context (the other run may set `ctx.outcome` later).
   */
  restore(): void;
  /**
   * Ends the run at once: the attempt beneath it fails with `error` and its handler's signal
   * aborts with `reason`; nothing when it has already settled.
   */
  end(error: DispatchError, reason: unknown): void;
  /** Ends the run it was started beside (the one under the limit current then) at once, as `end` does. */
  endBeside(error: DispatchError, reason: unknown): void;
}

/**
 * Runs `run` (a layer's `next`) beside the run under the current limit, for a layer that starts
 * another attempt before the first has ended (the autopilot's hedge): under a limit set with the
 * same limits (its deadline counted from now), on the limits the current one was set on, so
 * neither run's limits reach the other and either can be ended alone (`end`, `endBeside`). The
 * first run needs no branch: only the second pays for one. `undefined` on a context the dispatcher
 * did not make, or with no current limit (the layer sets one first, `{}` for none). Only the
 * library's own layers branch: `compose` refuses a second run of a third-party layer's `next`
 * while one is going.
 */
export function runBranch(ctx: DispatchContext, run: () => Promise<void>): Branch | undefined {
  return ctx instanceof CallContext ? ctx.branch(run) : undefined;
}

/** Whether `runBranch` can branch on `ctx` (a context the dispatcher made), given a current limit. */
export function canBranch(ctx: DispatchContext): boolean {
  return ctx instanceof CallContext;
}

/** Delivers `event` to `listener`; a broken observer, sync or async, never breaks the dispatch it observes. */
export function deliverSafely(listener: EventListener, event: DispatchEvent): void {
  try {
    ignoreRejection(listener(event));
  } catch {
    // Ignored on purpose.
  }
}
