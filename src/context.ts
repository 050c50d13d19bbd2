// The concrete per-dispatch context: one fixed-shape object, so every dispatch stays on V8's fast path.

import type { Budget } from './budget.js';
import { isDispatchError } from './errors.js';
import { swallow } from './internal/abort.js';
import type { AbortSource, AttemptAbort, LazySignalContext } from './internal/attempt-abort.js';
import type { DispatchEvent, DispatchOptions, EventListener, Outcome, Tool } from './types.js';

/** The `DispatchContext` the dispatcher makes for each call. */
export class CallContext implements LazySignalContext {
  tool: Tool | undefined = undefined;
  attempt = 0;
  outcome: Outcome | undefined = undefined;
  /** What the dispatch resolved to, once it has; set by the dispatcher only. */
  finished: Outcome | undefined = undefined;
  /**
   * Whether the call is still in the synchronous run in which the dispatcher read `startedAt`:
   * only then may a fused group's first deadline count from `startedAt` instead of reading the
   * clock again. Layers in front of a fused group clear it once they have returned.
   */
  inStartingRun = true;
  private attemptAbort: AttemptAbort | undefined = undefined;
  private stateBag: Record<string, unknown> | undefined = undefined;
  private listeners: EventListener[] | undefined = undefined;

  private givenCallId: string | undefined;

  constructor(
    callId: string | undefined,
    private readonly serial: number,
    readonly toolName: string,
    public args: unknown,
    readonly options: DispatchOptions,
    public budget: Budget | undefined,
    public baseSignal: AbortSignal,
    readonly startedAt: number,
    private readonly onEvent: EventListener | undefined,
    /** The stack's last layer, right outside the attempt step. */
    readonly innermostLayer: unknown,
  ) {
    this.givenCallId = callId;
  }

  // Built on first read: most calls never need their generated id as a string.
  get callId(): string {
    return (this.givenCallId ??= `call-${this.serial}`);
  }

  /** Whether anyone receives this dispatch's events. */
  get observed(): boolean {
    return this.onEvent !== undefined || this.listeners !== undefined;
  }

  get signal(): AbortSignal {
    return this.attemptAbort === undefined ? this.baseSignal : this.attemptAbort.signal;
  }

  set signal(signal: AbortSignal) {
    this.baseSignal = signal;
    this.attemptAbort = undefined;
  }

  abortSource(): AbortSource {
    return this.attemptAbort ?? this.baseSignal;
  }

  setAttemptAbort(abort: AttemptAbort | undefined): void {
    this.attemptAbort = abort;
  }

  restoreSignal(base: AbortSignal, abort: AttemptAbort | undefined): void {
    this.baseSignal = base;
    this.attemptAbort = abort;
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
    // The event's own fields come first, the details after them (on Node 20's V8 a spread
    // followed by more properties gets a hidden class of its own each time, about a microsecond
    // per event), and are written back, so a detail can never pass for one of them.
    const { toolName: tool, callId, attempt } = this;
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
    if (this.onEvent !== undefined) deliver(this.onEvent, event as DispatchEvent);
    const { listeners } = this;
    if (listeners === undefined) return;
    // A listener that unsubscribes while the event is delivered must not make another miss it.
    for (const listener of listeners.length === 1 ? listeners : [...listeners])
      deliver(listener, event as DispatchEvent);
  }
}

// A broken observer, sync or async, must never break the dispatch it observes.
function deliver(listener: EventListener, event: DispatchEvent): void {
  try {
    const returned: unknown = listener(event);
    if (typeof (returned as PromiseLike<unknown> | undefined)?.then === 'function') {
      (returned as PromiseLike<unknown>).then(undefined, swallow);
    }
  } catch {
    // Ignored on purpose.
  }
}
