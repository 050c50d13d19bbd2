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
    const own = { type, tool: this.toolName, callId: this.callId, attempt: this.attempt };
    // The event's own fields are written last, so a detail can never pass for one of them. Not
    // `{ ...details, type, … }`: on Node 20 adding properties to a spread copy costs about 2 µs,
    // every time (the copy's map is not reused), and an observed dispatch emits several events.
    // Object.assign would set an own "__proto__" detail as the prototype; a spread keeps it.
    const event = (
      details === undefined
        ? own
        : Object.hasOwn(details, '__proto__')
          ? { ...details, ...own }
          : Object.assign({}, details, own)
    ) as DispatchEvent;
    // An envelope rides along for listeners that judge it, but events stay plain JSON data.
    if (details !== undefined && isDispatchError(details.error)) {
      Object.defineProperty(event, 'error', { value: details.error, enumerable: false });
    }
    if (this.onEvent !== undefined) deliver(this.onEvent, event);
    const { listeners } = this;
    if (listeners === undefined) return;
    // A listener that unsubscribes while the event is delivered must not make another miss it.
    for (const listener of listeners.length === 1 ? listeners : [...listeners]) deliver(listener, event);
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
