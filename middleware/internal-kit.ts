/**
 * The internal kit: the helpers the built-in layers and host bridges share that are not public.
 * No package subpath exports this module; the architecture test lets an integration import it
 * (its one door into the package's internals) besides the public faces.
 * @module
 */

import { toJsonSafe } from '../src/json-safe.js';
import { createRedactor, type Redactor } from '../src/redact.js';
import type { StandardSchemaV1 } from '../src/standard-schema.js';
import type { AttemptLimits, DeadlineClock, ToolTimeout } from '../src/types.js';
import { maxTimerDelayMs } from '../src/internal/abort.js';

export { neverAborted, noop } from '../src/internal/abort.js';
// Coalesced timers of a layer's own (the autopilot's hedges): one real timer per duration, armed at
// the end of the tick, each timer a node the layer makes, so setting one allocates nothing more.
export { DeadlineScheduler } from '../src/internal/deadlines.js';
export type { DeadlineList, DeadlineNode } from '../src/internal/deadlines.js';
import { isThenable } from '../src/internal/thenable.js';

export { ignoreRejection, isThenable } from '../src/internal/thenable.js';
export { neverFitsWindow } from '../src/internal/failures.js';
export { isJsonParseError } from '../src/errors.js';
export { parseJsonArgs, refusedArgs } from '../src/internal/raw-json-args.js';
export { hostDenialOf } from '../src/internal/host-denial.js';
export { attemptCost } from '../src/internal/cost.js';
export { canBranch, runBranch } from '../src/context.js';
export type { Branch } from '../src/context.js';
export {
  foundNotCommitted,
  outcomeUnknown,
  reconcileFindingOf,
  reconcileOutcome,
} from '../src/internal/reconcile.js';
export type { ReconcileFinding, Reconciled } from '../src/internal/reconcile.js';

/**
 * How an issue of a tool's schema reads in an envelope's message, for every check of args against
 * it (the schema layer's, the approval gate's of edited args): `path: message`
 * (`items[2].sku: Required`), or its message alone at the root.
 */
export function describeIssue(issue: StandardSchemaV1.Issue): string {
  const path = (issue.path ?? []).map((segment) =>
    typeof segment === 'object' && segment !== null ? segment.key : segment,
  );
  if (path.length === 0) return issue.message;
  const where = path
    .map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i === 0 ? '' : '.'}${String(key)}`))
    .join('');
  return `${where}: ${issue.message}`;
}

interface SemaphoreWaiter {
  grant: () => void;
  queued: boolean;
  previous: SemaphoreWaiter | undefined;
  next: SemaphoreWaiter | undefined;
}

/**
 * A counting semaphore whose waiters queue first in, first out and can leave the queue at once
 * (async-mutex's cannot drop one waiter, nor take a free slot without a promise). Its capacity is
 * a number, or a function read each time a slot could be handed over (a limit that moves: when it
 * falls below the slots held, nobody new starts until enough are released; when it rises,
 * `admit()` lets that many more waiters in). Shared by the concurrency layer and the autopilot.
 *
 * @example
 * const slots = new FifoSemaphore(4);
 * if (!slots.tryAcquire()) slots.enqueue(() => start());
 * slots.release();
 */
export class FifoSemaphore {
  running = 0;
  queued = 0;
  #head: SemaphoreWaiter | undefined = undefined;
  #tail: SemaphoreWaiter | undefined = undefined;
  readonly #capacity: number | (() => number);

  constructor(capacity: number | (() => number)) {
    this.#capacity = capacity;
  }

  /** The capacity now. */
  get max(): number {
    const capacity = this.#capacity;
    return typeof capacity === 'number' ? capacity : capacity();
  }

  /** Takes a slot if one is free and nobody is waiting. */
  tryAcquire(): boolean {
    if (this.queued > 0 || this.running >= this.max) return false;
    this.running += 1;
    return true;
  }

  /**
   * Queues for a slot: `grant` is called once one is handed over. Returns a function that
   * removes the waiter from the queue (a no-op once granted).
   */
  enqueue(grant: () => void): () => void {
    const waiter: SemaphoreWaiter = { grant, queued: true, previous: this.#tail, next: undefined };
    if (this.#tail === undefined) this.#head = waiter;
    else this.#tail.next = waiter;
    this.#tail = waiter;
    this.queued += 1;
    return () => {
      if (waiter.queued) this.#unlink(waiter);
    };
  }

  /** Frees a slot, handing free slots straight to the first waiters as the capacity allows. */
  release(): void {
    this.running -= 1;
    if (this.#head !== undefined) this.admit();
  }

  /** Hands free slots to waiters, in order: call it when the capacity has risen. */
  admit(): void {
    for (let waiter = this.#head; waiter !== undefined && this.running < this.max; waiter = this.#head) {
      this.#unlink(waiter);
      this.running += 1;
      waiter.grant();
    }
  }

  #unlink(waiter: SemaphoreWaiter): void {
    if (waiter.previous === undefined) this.#head = waiter.next;
    else waiter.previous.next = waiter.next;
    if (waiter.next === undefined) this.#tail = waiter.previous;
    else waiter.next.previous = waiter.previous;
    waiter.previous = undefined;
    waiter.next = undefined;
    waiter.queued = false;
    this.queued -= 1;
  }
}

/** The marker a capped args preview ends with. */
export const previewCut = '…[truncated]';

let builtins: Redactor | undefined;

/** The redactor with the built-in patterns alone, made once: for a call with no redactor of its own. */
export function builtinRedactor(): Redactor {
  builtins ??= createRedactor();
  return builtins;
}

/**
 * A call's args as a person may see them (an approval's reviewer, an in-doubt receipt's
 * operator): redacted as values (so a secret in a string is found whatever JSON would escape in
 * it), as JSON text, redacted again as text, and cut to `maxChars`. `undefined` when `maxChars`
 * is 0 (previews off).
 */
export function previewOf(args: unknown, redactor: Redactor, maxChars: number): string | undefined {
  if (maxChars === 0) return undefined;
  const text = redactor.redact(JSON.stringify(toJsonSafe(redactor.redactValue(args))) ?? 'null');
  if (text.length <= maxChars) return text;
  // Cut after redaction: a cut never splits a secret into pieces the patterns no longer match.
  return `${text.slice(0, Math.max(0, maxChars - previewCut.length))}${previewCut}`;
}

/** The fields of a tool (or of its listing) that say how long its attempts may run. */
export interface TimedTool {
  readonly timeoutMs?: number | undefined;
  readonly timeout?: Pick<ToolTimeout, 'totalMs'> | undefined;
}

/**
 * The longest an attempt may run, read the one way the timeout layer reads it: for a tool with an
 * idle timeout, its `totalMs` capped by the call's `timeoutMs`; otherwise the call's `timeoutMs`,
 * else the tool's, else `fallback` (the timeout layer's `defaultMs`, or `Infinity`).
 */
export function attemptTimeoutMs(
  callTimeoutMs: number | undefined,
  tool: TimedTool | undefined,
  fallback: number,
): number {
  const idle = tool?.timeout;
  if (idle !== undefined) return Math.min(idle.totalMs, callTimeoutMs ?? Infinity);
  return callTimeoutMs ?? tool?.timeoutMs ?? fallback;
}

/**
 * The limit an attempt runs under, as the timeout layer sets it: `attemptTimeoutMs` on `clock`,
 * with the tool's idle deadline when it has one; `undefined` when there is none (beyond a timer's
 * range, no idle timeout). `held` is returned when it says the same (a caller that keeps one per
 * tool makes none per attempt).
 */
export function attemptLimitsOf(
  callTimeoutMs: number | undefined,
  tool: (TimedTool & { readonly timeout?: Pick<ToolTimeout, 'idleMs'> | undefined }) | undefined,
  fallback: number,
  clock: DeadlineClock,
  held?: AttemptLimits,
): AttemptLimits | undefined {
  const idleMs = tool?.timeout?.idleMs;
  const timeoutMs = attemptTimeoutMs(callTimeoutMs, tool, fallback);
  if (timeoutMs > maxTimerDelayMs && idleMs === undefined) return undefined;
  if (held?.timeoutMs === timeoutMs && held.idleMs === idleMs && held.clock === clock) return held;
  return idleMs === undefined ? { timeoutMs, clock } : { timeoutMs, idleMs, clock };
}

/** The largest `limit` of an approval store's `list` and `audit`. */
export const maxApprovalPage = 500;

/**
 * The `limit` of an approval store's `list` or `audit` query, checked as the contract says: an
 * integer in 1..500, 100 when absent.
 */
export function pageLimitOf(limit: unknown): number {
  if (limit === undefined) return 100;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > maxApprovalPage) {
    throw new TypeError(`limit must be an integer from 1 to ${maxApprovalPage}, got ${String(limit)}`);
  }
  return limit;
}

/** The status of an approval store's `list` query, checked: only `pending` can be listed. */
export function listStatusOf(status: unknown): 'pending' {
  if (status !== undefined && status !== 'pending') {
    throw new TypeError(`status must be 'pending' (only pending requests are listed), got ${String(status)}`);
  }
  return 'pending';
}

/** The `tool` or `tenant` filter of an approval store's `list` query, checked: a string, or absent. */
export function listFilterOf(name: 'tool' | 'tenant', value: unknown): string | undefined {
  if (value !== undefined && typeof value !== 'string') {
    throw new TypeError(`${name} must be a string, got ${String(value)}`);
  }
  return value;
}

/**
 * What a store answered, when it answered at once; `undefined` when the answer is still to come
 * (a promise): a layer starts its attempt in the same turn on a memory store's answer.
 */
export function answeredAtOnce<Answer extends object>(
  answer: Answer | PromiseLike<Answer>,
): Answer | undefined {
  return isThenable(answer) ? undefined : answer;
}

/** Calls a layer's `next`; one that throws (never compose's) becomes a rejected promise, a failed attempt. */
export function callNext(next: () => Promise<void>): Promise<void> {
  try {
    return next();
  } catch (error) {
    return Promise.reject(error);
  }
}
