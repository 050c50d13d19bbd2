/**
 * The rules of the autopilot's hedged attempts: when an attempt of a repeatable tool outlives the
 * tool's live quantile, one more attempt starts beside it and the first success wins (The Tail at
 * Scale), paid for by a token bucket of `maxExtraLoad` per call (Finagle's `BackupRequestFilter`).
 * Here are the budget, which tools may be hedged, when hedging pauses and how long a hedge waits;
 * the race itself is `HedgedAttempt`'s, in `hedger.ts`.
 * @module
 */

import { optionKeys, optionsObject, requireNumber } from '../kit.js';

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
