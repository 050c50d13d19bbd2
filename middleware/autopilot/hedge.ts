/**
 * Hedged attempts for the autopilot: when an attempt of a repeatable tool outlives the tool's live
 * quantile, one more attempt starts beside it and the first success wins (The Tail at Scale),
 * paid for by a token bucket of `maxExtraLoad` per call (Finagle's `BackupRequestFilter`).
 * @module
 */

import type { Clock } from '../../src/clock.js';
import { neverAborted, noop } from '../internal-kit.js';
import { maxTimerDelayMs, onAbort, optionKeys, optionsObject, requireClock, requireNumber } from '../kit.js';

// Tokens in integer units, so that twenty deposits of 0.05 make exactly one hedge.
const hedgeTokenUnit = 1_000_000;

/** Options for `HedgeBudget`. */
export interface HedgeBudgetOptions {
  /** Hedges allowed per call, as a share of calls (0 turns hedging off, 1 allows one per call). @default 0.05 */
  maxExtraLoad?: number;
  /** The most tokens the bucket holds, so a quiet spell cannot bank a burst of hedges. @default 10 */
  maxTokens?: number;
}

const hedgeBudgetOptionKeys = optionKeys<HedgeBudgetOptions>({ maxExtraLoad: true, maxTokens: true });

/**
 * The hedge budget: a token bucket that every call fills by `maxExtraLoad` of a token (up to
 * `maxTokens`) and every hedge empties by one, so hedges stay within `maxExtraLoad` of calls plus
 * the bucket's cap; a retry `charge`s it as a hedge would. It starts empty: no hedge before calls
 * have paid for it.
 *
 * @example
 * const budget = new HedgeBudget({ maxExtraLoad: 0.05 });
 * budget.deposit();                     // a call starts
 * if (budget.tryWithdraw()) startHedge(); // its attempt outlived the p95
 */
export class HedgeBudget {
  readonly #depositUnits: number;
  readonly #capUnits: number;
  #units = 0;

  constructor(options?: HedgeBudgetOptions) {
    const given = optionsObject('HedgeBudget', options, hedgeBudgetOptionKeys);
    const maxExtraLoad = requireNumber('maxExtraLoad', given.maxExtraLoad ?? 0.05, 0);
    if (maxExtraLoad > 1) throw new TypeError(`maxExtraLoad must be a number in [0, 1], got ${maxExtraLoad}`);
    const maxTokens = requireNumber('maxTokens', given.maxTokens ?? 10, 1);
    this.#depositUnits = Math.round(maxExtraLoad * hedgeTokenUnit);
    this.#capUnits = Math.round(maxTokens * hedgeTokenUnit);
  }

  /** Pays in for one call. */
  deposit(): void {
    this.#units = Math.min(this.#capUnits, this.#units + this.#depositUnits);
  }

  /**
   * Counts an extra attempt that is no hedge (a retry): it is paid for out of the bucket as a
   * hedge would be, and the deposit its own run makes is taken back, so hedges and retries
   * together stay within `maxExtraLoad` of calls. The bucket may owe up to `maxTokens` (no hedge
   * until it is paid back), never more: a burst of retries does not stop hedging for long.
   */
  charge(): void {
    this.#units = Math.max(-this.#capUnits, this.#units - hedgeTokenUnit - this.#depositUnits);
  }

  /** Takes one hedge's token if the bucket holds one, and says whether it did. */
  tryWithdraw(): boolean {
    if (this.#units < hedgeTokenUnit) return false;
    this.#units -= hedgeTokenUnit;
    return true;
  }

  /** How full the bucket is, as a share of `maxTokens` (below 0 while it owes for retries). */
  get level(): number {
    return this.#units / this.#capUnits;
  }

  /** Hedges the bucket would allow now (fractional). */
  get balance(): number {
    return this.#units / hedgeTokenUnit;
  }
}

/** What hedging needs to know of a tool. */
export interface HedgeableTool {
  /** Whether running it twice is harmless. */
  readonly idempotent?: boolean | undefined;
  /** Its MCP annotations: `readOnlyHint: true` says it changes nothing. */
  readonly annotations?: { readonly readOnlyHint?: unknown } | undefined;
}

/**
 * Whether a tool may be hedged: only one declared `idempotent: true` or annotated
 * `readOnlyHint: true` (strictly `true`: a truthy string is no promise). Every other tool runs one
 * attempt at a time whatever the options say.
 *
 * @example
 * hedgeEligible({ idempotent: false, annotations: { readOnlyHint: true } }); // true
 */
export function hedgeEligible(tool: HedgeableTool): boolean {
  return tool.idempotent === true || tool.annotations?.readOnlyHint === true;
}

/**
 * The share of a tool's attempts that may fail (time out or fail transiently) before its hedging
 * pauses: a tool failing that often is in trouble, not straggling, and a hedge is one more call to
 * a backend that is already down (the bench's brownout, 30 % failing: hedges at 5 % of calls made
 * attempts per call 1.11 where the retry budget alone holds 1.07).
 */
export const hedgePauseFailureShare = 0.1;

/** The outcomes of a tool's window, as `hedgePaused` reads them. */
export interface HedgeOutcomeMix {
  readonly success: number;
  readonly timeout: number;
  readonly transient: number;
  readonly other: number;
}

/**
 * Whether a tool's hedging pauses: more than `hedgePauseFailureShare` of the attempts in its
 * window timed out or failed transiently. It resumes as the window's failures age out.
 *
 * @example
 * hedgePaused({ success: 70, timeout: 0, transient: 30, other: 0 }); // true
 */
export function hedgePaused(outcomes: HedgeOutcomeMix): boolean {
  const failed = outcomes.timeout + outcomes.transient;
  const attempts = failed + outcomes.success + outcomes.other;
  return attempts > 0 && failed > hedgePauseFailureShare * attempts;
}

/**
 * The quantile a hedge waits for when the budget runs dry: halfway from `quantile` to 1 (p97.5 for
 * the p95). Past the live quantile, a share of calls as large as the budget is slow, and a budget
 * as large as that demand runs dry half the time: hedges then go to whichever calls come first, and
 * the stragglers after them get none. Waiting longer as the bucket empties leaves its last tokens
 * to the slowest calls (the bench's steady trace: the same hedges, no straggler cut off and retried).
 *
 * @example
 * hedgeScarceQuantile(0.95); // 0.975
 */
export function hedgeScarceQuantile(quantile: number): number {
  return 1 - (1 - quantile) / 2;
}

/**
 * How long an attempt waits before its hedge: `liveMs` (the live quantile's) while the budget is
 * at least half full, `scarceMs` (`hedgeScarceQuantile`'s) when it is empty, in between along the
 * way.
 *
 * @example
 * hedgeDelay(450, 700, 0.5); // 450
 * hedgeDelay(450, 700, 0.25); // 575
 */
export function hedgeDelay(liveMs: number, scarceMs: number, level: number): number {
  if (level >= 0.5 || !(scarceMs > liveMs)) return liveMs;
  const scarcity = level <= 0 ? 1 : 1 - 2 * level;
  return Math.ceil(liveMs + (scarceMs - liveMs) * scarcity);
}

/** Which attempt of a hedged call: the first one, or the one started beside it. */
export type HedgeRole = 'primary' | 'hedge';

/** What became of the hedge at its moment: started, refused by the budget, or (shadow) not started. */
export type HedgeDecision = 'started' | 'budget_spent' | 'would_start';

/** Options for `runHedged`. */
export interface RunHedgedOptions<T> {
  /** The tool called: a tool that fails `hedgeEligible` runs its one attempt alone, whatever else is given. */
  tool: HedgeableTool;
  /** Runs one attempt; it must end (resolve or reject) soon after `signal` aborts (or `cancel` is called for it). */
  run: (signal: AbortSignal, role: HedgeRole) => Promise<T>;
  /**
   * Ends an attempt that lost, in place of aborting its signal: when given, `runHedged` makes no
   * `AbortController` and `run` is handed a signal that never aborts (a caller with a cheaper way
   * to stop its attempts, such as the autopilot's per-attempt limits, saves two per call).
   * @default aborting the loser's own signal
   */
  cancel?: (role: HedgeRole, reason: unknown) => void;
  /** How long the primary may run before the hedge starts (the tool's live quantile); `Infinity` never hedges. */
  hedgeAfterMs: number;
  /** The time source and timers. */
  clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
  /** The hedge budget: `runHedged` deposits once per call and withdraws once per hedge. */
  budget: HedgeBudget;
  /** The caller's signal: its abort ends both attempts. @default a signal that never aborts */
  signal?: AbortSignal;
  /** Whether a resolved value is a success; a failure as a value (an outcome) waits for the other attempt. @default () => true */
  succeeded?: (value: T) => boolean;
  /** Called once when `hedgeAfterMs` has passed with the primary pending, with what was decided. */
  onHedge?: (decision: HedgeDecision) => void;
  /** Decide and report (`would_start`, spending the budget as a hedge would) but start no hedge. @default false */
  shadow?: boolean;
}

/** The answer of `runHedged`. */
export interface HedgedResult<T> {
  /** The winner's value: the first success, or the primary's failure-as-value when both fail. */
  readonly value: T;
  /** Whether a hedge was started. */
  readonly hedged: boolean;
  /** Whose value this is. */
  readonly winner: HedgeRole;
}

const alwaysSucceeded = (): boolean => true;

type Settled<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

/**
 * Runs one attempt and, if it is still pending after `hedgeAfterMs`, `budget` allows and `tool`
 * passes `hedgeEligible`, one hedge beside it. The first success wins and the other attempt is
 * aborted through its own signal. If the first to settle fails, the other is awaited; when both
 * fail the primary's failure is the answer (it is the attempt the call would have had without
 * hedging, so hedging never changes a failure's kind). A caller's abort aborts both and rejects
 * at once with the signal's reason. Every timer and listener is removed on every path, and a
 * loser's late rejection is swallowed.
 *
 * A tool that fails `hedgeEligible`, or an `hedgeAfterMs` of `Infinity` (warm-up), runs the one
 * attempt on the caller's own signal, with no timer: exactly as without hedging. Bad options throw
 * a `TypeError` at once; the attempts' failures (a `run` that throws included) come as a rejection.
 *
 * Feeding the sketch that gives `hedgeAfterMs`: record the primary's time even when the hedge won
 * (its elapsed time at the abort, past `hedgeAfterMs`); leaving the losers out pulls the quantile
 * down and spends the budget on calls that needed no hedge (on the steady trace, p99 −75 % instead
 * of −90 % for the same 5 % of extra attempts).
 *
 * @example
 * const { value, hedged, winner } = await runHedged({
 *   tool: ctx.tool,
 *   run: (signal) => fetchQuote(symbol, { signal }),
 *   hedgeAfterMs: stats.summary('quote')!.p95,
 *   clock: systemClock,
 *   budget,
 *   signal: ctx.signal,
 * });
 */
export function runHedged<T>(options: RunHedgedOptions<T>): Promise<HedgedResult<T>> {
  const { tool, run, hedgeAfterMs, clock, budget, cancel } = options;
  if (typeof tool !== 'object' || tool === null) throw new TypeError('tool must be an object');
  if (typeof run !== 'function') throw new TypeError(`run must be a function, got ${typeof run}`);
  if (cancel !== undefined && typeof cancel !== 'function') {
    throw new TypeError(`cancel must be a function, got ${typeof cancel}`);
  }
  if (typeof hedgeAfterMs !== 'number' || Number.isNaN(hedgeAfterMs) || hedgeAfterMs < 0) {
    throw new TypeError(`hedgeAfterMs must be a number >= 0 or Infinity, got ${String(hedgeAfterMs)}`);
  }
  requireClock(clock, ['setTimeout', 'clearTimeout']);
  if (!(budget instanceof HedgeBudget)) throw new TypeError('budget must be a HedgeBudget');
  return hedgedRun(options);
}

/**
 * `runHedged` without its checks of the options: for the autopilot's hedger, whose options are
 * its own and right by construction (the checks cost an array and a closure per call).
 * @internal
 */
export function hedgedRun<T>(options: RunHedgedOptions<T>): Promise<HedgedResult<T>> {
  const {
    tool,
    run,
    hedgeAfterMs,
    clock,
    budget,
    signal,
    succeeded = alwaysSucceeded,
    onHedge,
    shadow,
    cancel,
  } = options;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const eligible = hedgeEligible(tool);
  // A tool that may never be hedged pays nothing in: the budget is a share of hedgeable calls.
  if (eligible) budget.deposit();
  // No hedge can start: the attempt runs exactly as it would without this layer.
  if (!eligible || hedgeAfterMs === Infinity) {
    let attempt: Promise<T>;
    try {
      attempt = run(signal ?? neverAborted, 'primary');
    } catch (error) {
      return Promise.reject(error);
    }
    return attempt.then((value) => ({ value, hedged: false, winner: 'primary' }));
  }
  return new Promise<HedgedResult<T>>((resolve, reject) => {
    // Made on first use: a caller with `cancel` never needs one.
    const controllers: Partial<Record<HedgeRole, AbortController>> = {};
    const signalOf = (role: HedgeRole): AbortSignal =>
      cancel === undefined ? (controllers[role] ??= new AbortController()).signal : neverAborted;
    const stop = (role: HedgeRole, reason: unknown): void => {
      if (cancel !== undefined) cancel(role, reason);
      else (controllers[role] ??= new AbortController()).abort(reason);
    };
    const results: Partial<Record<HedgeRole, Settled<T>>> = {};
    let hedged = false;
    let done = false;
    let timer: unknown;
    let unsubscribe: () => void = noop;

    const finish = (loser: HedgeRole | undefined): void => {
      done = true;
      if (timer !== undefined) clock.clearTimeout(timer);
      unsubscribe();
      if (loser !== undefined && hedged) {
        stop(loser, new DOMException('the other attempt of a hedged call answered first', 'AbortError'));
      }
    };
    const answer = (winner: HedgeRole, settled: Settled<T>): void => {
      finish(winner === 'primary' ? 'hedge' : 'primary');
      if (settled.ok) resolve({ value: settled.value, hedged, winner });
      else reject(settled.error);
    };
    const onSettled = (role: HedgeRole, settled: Settled<T>): void => {
      if (done) return;
      results[role] = settled;
      let success: boolean;
      try {
        success = settled.ok && succeeded(settled.value);
      } catch (error) {
        return answer(role, { ok: false, error });
      }
      if (success) return answer(role, settled);
      const other: HedgeRole = role === 'primary' ? 'hedge' : 'primary';
      // A failure waits for the other attempt while it may still succeed.
      if (role === 'primary' && !hedged) return answer('primary', settled);
      if (results[other] === undefined) return;
      answer('primary', results.primary as Settled<T>);
    };
    const start = (role: HedgeRole): void => {
      let attempt: Promise<T>;
      try {
        attempt = run(signalOf(role), role);
      } catch (error) {
        attempt = Promise.reject(error);
      }
      attempt.then(
        (value) => onSettled(role, { ok: true, value }),
        (error: unknown) => onSettled(role, { ok: false, error }),
      );
    };
    const fireHedge = (): void => {
      timer = undefined;
      if (done) return;
      const allowed = budget.tryWithdraw();
      const decision: HedgeDecision = !allowed ? 'budget_spent' : shadow === true ? 'would_start' : 'started';
      onHedge?.(decision);
      if (decision !== 'started' || done) return;
      hedged = true;
      start('hedge');
    };

    if (signal !== undefined) {
      unsubscribe = onAbort(signal, () => {
        if (done) return;
        finish(undefined);
        stop('primary', signal.reason);
        if (hedged) stop('hedge', signal.reason);
        reject(signal.reason);
      });
    }
    start('primary');
    timer = clock.setTimeout(fireHedge, Math.min(hedgeAfterMs, maxTimerDelayMs));
  });
}
