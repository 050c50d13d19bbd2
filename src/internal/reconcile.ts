/**
 * Reconcile before retry: when an attempt's outcome is unknown, the tool's `reconcile` is asked
 * once whether the action took effect, before anything may run it again.
 * @module
 */

import { systemClock } from '../clock.js';
import { DispatchError, describeThrown, isDispatchError, type OutcomeWindow } from '../errors.js';
import { onAbort } from './abort.js';
import type { DispatchContext, Reconcile, ReconcileVerdict, Tool } from '../types.js';

/** What reconciling an unknown outcome found. */
export type Reconciled =
  | {
      /** The action took effect. */
      readonly status: 'committed';
      /** The result `reconcile` gave, if any. */
      readonly result: unknown;
      /** What showed it. */
      readonly evidence: unknown;
    }
  | {
      /** It did not take effect, or nobody could tell (`unknown` also for a throw or no answer in time). */
      readonly status: 'not_committed' | 'unknown';
      /** What showed it. */
      readonly evidence: unknown;
      /** Why it is unknown, for the envelope's message. */
      readonly reason?: string;
    };

/** What the latest reconcile of a dispatch found, kept for its receipt. */
export interface ReconcileFinding {
  /** The verdict. */
  readonly status: Reconciled['status'];
  /** What `reconcile` gave as evidence, if anything. */
  readonly evidence: unknown;
}

// Per dispatch, so that whichever layer writes the receipt (idempotency) finds what a reconcile
// asked deep in the attempt said, without a field on the public outcome.
const findings = new WeakMap<DispatchContext, ReconcileFinding>();

// Failures a reconcile found did not take effect: known, not in doubt.
const notCommitted = new WeakSet<object>();

/**
 * What the latest reconcile of this dispatch found (its verdict and evidence), if one was asked.
 *
 * @example
 * const evidence = reconcileFindingOf(ctx)?.evidence;
 */
export function reconcileFindingOf(ctx: DispatchContext): ReconcileFinding | undefined {
  return findings.get(ctx);
}

/**
 * Whether `error` is a failure whose action a reconcile found did not take effect (`not_committed`):
 * a known failure, never in doubt.
 *
 * @example
 * if (foundNotCommitted(error)) releaseAsFailed();
 */
export function foundNotCommitted(error: unknown): boolean {
  return typeof error === 'object' && error !== null && notCommitted.has(error);
}

/**
 * Asks `tool.reconcile` whether the action of `attempt` took effect, under the tool's
 * `reconcileTimeoutMs` and the caller's signal; never rejects. What it found is kept for the
 * dispatch's receipt (`reconcileFindingOf`).
 *
 * @example
 * const found = await reconcileOutcome(ctx, tool, ctx.attempt, 'lease_lost');
 */
export async function reconcileOutcome(
  ctx: DispatchContext,
  tool: Tool,
  attempt: number,
  window: OutcomeWindow,
): Promise<Reconciled> {
  const found = await askReconcile(ctx, tool, attempt, window);
  findings.set(ctx, { status: found.status, evidence: found.evidence });
  return found;
}

async function askReconcile(
  ctx: DispatchContext,
  tool: Tool,
  attempt: number,
  window: OutcomeWindow,
): Promise<Reconciled> {
  const { reconcile, reconcileTimeoutMs = 10_000 } = tool;
  if (reconcile === undefined) return { status: 'unknown', evidence: undefined, reason: 'no reconcile' };
  const controller = new AbortController();
  const caller = ctx.options.signal;
  const offCaller = caller === undefined ? undefined : onAbort(caller, () => controller.abort(caller.reason));
  let handle: unknown;
  const timedOut = new Promise<Reconciled>((resolve) => {
    if (!(reconcileTimeoutMs < Infinity)) return;
    handle = systemClock.setTimeout(() => {
      const reason = `no answer within ${reconcileTimeoutMs} ms`;
      resolve({ status: 'unknown', evidence: undefined, reason });
      controller.abort(new DispatchError('timeout', `reconcile gave ${reason}`));
    }, reconcileTimeoutMs);
    (handle as { unref?: () => void } | undefined)?.unref?.();
  });
  const context = { idempotencyKey: ctx.options.idempotencyKey, callId: ctx.callId, attempt, window };
  const ask = reconcile as unknown as Reconcile;
  const asked = (async () =>
    verdictOf(await ask(ctx.args, { ...context, signal: controller.signal })))().catch(
    (error: unknown): Reconciled => ({
      status: 'unknown',
      evidence: undefined,
      reason: `reconcile failed: ${describeThrown(error)}`,
    }),
  );
  try {
    return await Promise.race([asked, timedOut, abortedBy(controller.signal)]);
  } finally {
    if (handle !== undefined) systemClock.clearTimeout(handle);
    offCaller?.();
  }
}

function abortedBy(signal: AbortSignal): Promise<Reconciled> {
  return new Promise((resolve) => {
    onAbort(signal, () => resolve({ status: 'unknown', evidence: undefined, reason: 'the caller aborted' }));
  });
}

function verdictOf(verdict: unknown): Reconciled {
  if (verdict === 'committed') return { status: 'committed', result: undefined, evidence: undefined };
  if (verdict === 'not_committed') return { status: 'not_committed', evidence: undefined };
  if (typeof verdict === 'object' && verdict !== null) {
    const { status, result, evidence } = verdict as Exclude<ReconcileVerdict, string> & { result?: unknown };
    if (status === 'committed') return { status, result, evidence };
    if (status === 'not_committed') return { status, evidence };
    if (status === 'unknown') return { status, evidence, reason: 'reconcile answered unknown' };
  }
  return { status: 'unknown', evidence: undefined, reason: 'reconcile answered unknown' };
}

/**
 * The `outcome_unknown` envelope of a call whose action may have happened.
 *
 * @example
 * throw outcomeUnknown(ctx, 'lease_lost', 'the lease was lost mid-call');
 */
export function outcomeUnknown(
  ctx: DispatchContext,
  window: OutcomeWindow,
  why: string,
  cause?: unknown,
): DispatchError {
  const name = ctx.tool?.name ?? ctx.toolName;
  return new DispatchError(
    'outcome_unknown',
    `"${name}" may or may not have taken effect (${window.replace('_', ' ')}): ${why}`,
    { attempts: ctx.attempt, window, ...(cause === undefined ? {} : { cause }) },
  );
}

/** Where an attempt's failure leaves its action unknown; `undefined` when it is known not to have run. */
export function unknownWindowOf(error: unknown): OutcomeWindow | undefined {
  if (!isDispatchError(error)) return undefined;
  if (error.kind === 'timeout') return 'attempt_timeout';
  if (error.kind === 'outcome_unknown') return error.window ?? 'handler_unknown';
  return undefined;
}

/**
 * Takes up an attempt's failure when its outcome is unknown (a timeout, an `OutcomeUnknownError`),
 * before whoever ran the attempt sees it: resolves when `reconcile` found the action `committed`
 * (`ctx.outcome` then holds the success, with `reconciled`); rejects with the failure it was when
 * `not_committed` (a timeout stays a timeout, an `OutcomeUnknownError` becomes `transient`: the
 * request did not take effect), marked so that no layer leaves it in doubt; with
 * `outcome_unknown` otherwise. Any other failure is rethrown as it is.
 */
export async function reconcileFailure(
  ctx: DispatchContext,
  tool: Tool,
  attempt: number,
  error: unknown,
): Promise<void> {
  const window = unknownWindowOf(error);
  if (window === undefined) throw error;
  const found = await reconcileOutcome(ctx, tool, attempt, window);
  if (found.status === 'committed') {
    ctx.outcome = { ok: true, result: found.result, attempts: attempt, reconciled: { window } };
    return;
  }
  if (found.status === 'not_committed') throw notCommittedFailure(error as DispatchError);
  const why = `${(error as DispatchError).message}; ${found.reason ?? 'reconcile answered unknown'}`;
  throw outcomeUnknown(ctx, window, why, error);
}

// The failure an attempt was, once a reconcile found its action did not take effect.
function notCommittedFailure(error: DispatchError): DispatchError {
  const failure =
    error.kind === 'outcome_unknown'
      ? new DispatchError('transient', `${error.message}; reconcile found it did not take effect`, {
          attempts: error.attempts,
          cause: error,
        })
      : error;
  notCommitted.add(failure);
  return failure;
}
