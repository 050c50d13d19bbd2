/**
 * Hedged attempts through the onion: the layers inside the autopilot run as one attempt and, past
 * the tool's hedge delay, as a second one beside it, each under a limit of its own so the loser is
 * ended through its signal.
 * @module
 */

import { DispatchError } from '../../src/errors.js';
import type { DeadlineClock, DispatchContext, Next, Outcome, Tool } from '../../src/types.js';
import {
  HedgeBudget,
  type HedgeDecision,
  type HedgeRole,
  hedgeDelay,
  hedgeEligible,
  hedgePaused,
} from './hedge.js';
import { announceShare, groupDigits, quantileLabel } from './policy.js';
import {
  type Branch,
  canBranch,
  type DeadlineList,
  type DeadlineNode,
  DeadlineScheduler,
  callNext,
  runBranch,
} from '../internal-kit.js';
import { maxTimerDelayMs, untilLimitEnds } from '../kit.js';
import type { ToolStats, ToolSummary } from './tool-stats.js';

const hedgeLost = 'the other attempt of a hedged call answered first';

/** The hedge knob's settings, checked. */
export interface HedgeSettings {
  readonly quantile: number;
  readonly maxExtraLoad: number;
  readonly minSamples: number;
  /** Where the hedge quantile sits in the summaries' `quantiles`. */
  readonly at: number;
}

/** The layer a hedged attempt runs for: told whether a hedge started, and how the attempt ended. */
export interface HedgedAttemptEnd {
  /** Set when a hedge started beside the attempt (in shadow: would have). */
  hedged: boolean;
  /** Both attempts have settled and one succeeded: its outcome is on the context. */
  succeeded(): void;
  /** Both attempts have settled and failed (or the one did): this throws `error` on. */
  failed(error: unknown): never;
}

/**
 * One hedge-eligible attempt's race: the autopilot runs the layers inside (`next`) as the primary
 * and tells this how it ended (`firstEnded`); if it is still running `hedgeAfterMs` after
 * `startedAt` and the budget allows, they run once more beside it. The first
 * success is the call's outcome and the other attempt is ended as `cancelled` (its handler's
 * signal aborts); when both fail, the primary's failure is the answer (the attempt the call would
 * have had without hedging, so hedging never changes a failure's kind). It settles, whether a
 * hedge started, only once both attempts have, so nothing of the loser outlives the layer.
 *
 * A failure waits for the other attempt while it may still succeed, and the budget is paid into
 * once per call and drawn on once per hedge. This is the autopilot's one hedged race, made for the
 * onion: the primary runs under the limit the autopilot set for the attempt, and a hedge beside it
 * (`runBranch`) under a limit set with the same, so each can be ended alone; the attempt is itself
 * its hedge timer, a node in the hedger's coalesced timer lists armed at the end of the tick. So an
 * attempt that answers before its hedge delay (nearly all of them) costs this object: no branch,
 * no timer, no `AbortController`, no listener, no reaction of its own. In shadow (or on a context the
 * dispatcher did not make) the one attempt runs exactly as without hedging; only the decision is
 * made.
 */
export class HedgedAttempt implements DeadlineNode {
  // Its place in the hedger's timer lists: due `ms` after the attempt started.
  readonly ms: number;
  readonly at: number;
  cancelled = false;
  list: DeadlineList | undefined = undefined;
  previous: DeadlineNode | undefined = undefined;
  next: DeadlineNode | undefined = undefined;

  readonly #ctx: DispatchContext;
  readonly #inner: Next;
  readonly #budget: HedgeBudget;
  readonly #timers: DeadlineScheduler;
  readonly #end: HedgedAttemptEnd;
  readonly #hedgeAfterMs: number;
  // Whether the one attempt runs alone, whatever is decided (shadow, or a context of its own).
  readonly #alone: boolean;
  // The hedge's run beside the primary, once it started.
  #hedge: Branch | undefined = undefined;
  // Settles (never rejects) once the hedge has, when one started.
  #hedgeSettled: Promise<void> | undefined = undefined;
  #hedgeEnded = false;
  #hedgeFailed = false;
  #hedgeAnswer: unknown = undefined;
  #primaryEnded = false;
  #winner: HedgeRole | undefined = undefined;

  constructor(
    ctx: DispatchContext,
    next: Next,
    settings: {
      budget: HedgeBudget;
      timers: DeadlineScheduler;
      end: HedgedAttemptEnd;
      hedgeAfterMs: number;
      startedAt: number;
      shadow: boolean;
    },
  ) {
    this.#ctx = ctx;
    this.#inner = next;
    this.#budget = settings.budget;
    this.#timers = settings.timers;
    this.#end = settings.end;
    this.#hedgeAfterMs = settings.hedgeAfterMs;
    this.ms = Math.min(settings.hedgeAfterMs, maxTimerDelayMs);
    this.at = settings.startedAt + this.ms;
    this.#alone = settings.shadow || !canBranch(ctx);
  }

  /** Pays in and sets the hedge timer, as the primary starts (the autopilot runs it). */
  watch(): this {
    this.#budget.deposit();
    this.#timers.schedule(this);
    return this;
  }

  /** The hedge delay passed with the primary running: a hedge, if the budget allows. */
  expire(): void {
    if (this.#primaryEnded) return;
    const allowed = this.#budget.tryWithdraw();
    const decision: HedgeDecision = !allowed ? 'budget_spent' : this.#alone ? 'would_start' : 'started';
    this.#told(decision);
    if (decision !== 'started' || this.#primaryEnded) return;
    const hedge = runBranch(this.#ctx, () => this.#run()) as Branch;
    this.#hedge = hedge;
    this.#hedgeSettled = hedge.running.then(
      () => this.#hedgeDone(false, undefined),
      (error: unknown) => this.#hedgeDone(true, error),
    );
  }

  // One attempt of the layers inside, ended with its limit even if a layer of the user's between
  // here and the attempt step is not (free when the attempt step is right inside).
  #run(): Promise<void> {
    return untilLimitEnds(this.#ctx, callNext(this.#inner));
  }

  #told(decision: HedgeDecision): void {
    if (decision !== 'budget_spent') this.#end.hedged = true;
    const hedgeAfterMs = this.#hedgeAfterMs;
    if (decision === 'would_start')
      this.#ctx.emit('autopilot.shadow', { knob: 'hedge', action: 'hedged', hedgeAfterMs });
    else this.#ctx.emit('autopilot.hedge', { decision, hedgeAfterMs });
  }

  /** The primary ended: settles once the end is told (at once when no hedge started). */
  firstEnded(failed: boolean, error: unknown): void | Promise<void> {
    // Read at once: the other attempt may set `ctx.outcome` after this one.
    const outcome = this.#ctx.outcome;
    this.#primaryEnded = true;
    const hedgeSettled = this.#hedgeSettled;
    if (hedgeSettled === undefined) {
      // No hedge started, and none will.
      this.#timers.cancel(this);
      if (failed) this.#end.failed(error);
      return this.#end.succeeded();
    }
    if (this.#winner === 'hedge') return this.#answer(this.#hedgeAnswer as Outcome | undefined);
    if (!failed) {
      this.#winner = 'primary';
      if (!this.#hedgeEnded) this.#stop('hedge');
      return hedgeSettled.then(() => this.#answer(outcome));
    }
    // A failure waits for the other attempt while it may still succeed.
    return hedgeSettled.then(() => {
      if (this.#hedgeFailed) this.#end.failed(error);
      return this.#answer(this.#hedgeAnswer as Outcome | undefined);
    });
  }

  #hedgeDone(failed: boolean, error: unknown): void {
    this.#hedgeAnswer = failed ? error : this.#ctx.outcome;
    this.#hedge?.restore();
    this.#hedgeEnded = true;
    this.#hedgeFailed = failed;
    if (failed || this.#winner !== undefined || this.#primaryEnded) return;
    this.#winner = 'hedge';
    this.#stop('primary');
  }

  // Both attempts have settled: the winner's outcome is the call's.
  #answer(outcome: Outcome | undefined): void {
    this.#ctx.outcome = outcome;
    this.#end.succeeded();
  }

  // Ends the attempt that lost through its own limit: the hedge's, or the one it runs beside.
  #stop(role: HedgeRole): void {
    const hedge = this.#hedge as Branch;
    const ctx = this.#ctx;
    const error = new DispatchError('cancelled', `"${ctx.displayName}" was cancelled: ${hedgeLost}`, {
      attempts: ctx.attempt,
    });
    const reason = new DOMException(hedgeLost, 'AbortError');
    if (role === 'hedge') hedge.end(error, reason);
    else hedge.endBeside(error, reason);
  }
}

/**
 * One tool's hedging: its delay as last computed (and from which summary), what was last
 * announced, whether it may be hedged, and its budget. The pilot keeps it with the tool.
 */
export interface ToolHedge {
  summary: ToolSummary | undefined;
  ms: number;
  /** The delay when the budget is empty (`hedgeScarceQuantile`'s). */
  scarceMs: number;
  announced: number | undefined;
  hedgeable: boolean;
  readonly budget: HedgeBudget;
}

/**
 * The autopilot's hedging: per tool, the delay (its live hedge quantile once it has
 * `minSamples`), the budget every hedge-eligible attempt pays into, and the hedged run.
 *
 * @example
 * const hedging = new ToolHedging({ quantile: 0.95, maxExtraLoad: 0.05, minSamples: 200, at: 0 }, stats, 'enforce', clock);
 * const state = hedging.of(tool.name);
 * const now = clock.now();
 * const after = hedging.delayFor(ctx, tool, state, now, stats.samples(tool.name, now), undefined);
 * const race = after === undefined ? undefined : hedging.watch(ctx, next, state, after, now, attempt);
 * next().then(() => race?.firstEnded(false, undefined)); // attempt: a HedgedAttemptEnd
 * @internal
 */
export class ToolHedging {
  readonly #tools = new Map<string, ToolHedge>();
  readonly #settings: HedgeSettings;
  readonly #stats: ToolStats;
  readonly #mode: 'enforce' | 'shadow';
  readonly #timers: DeadlineScheduler;

  constructor(settings: HedgeSettings, stats: ToolStats, mode: 'enforce' | 'shadow', clock: DeadlineClock) {
    this.#settings = settings;
    this.#stats = stats;
    this.#mode = mode;
    // Nearly every hedged call sets its timer and clears it: one real timer per delay, not per call.
    this.#timers = new DeadlineScheduler(clock);
  }

  /**
   * The hedge delay for this attempt of `tool`: `undefined` for a tool that may never be hedged
   * (it runs as if hedging were off) and during warm-up (the budget is paid into, no hedge starts).
   * `state`: the tool's (`of`). `samples`: its exact count at `now` (`ToolStats.samples`), and
   * `summary`: its summary at `now`, if the pilot has read it.
   */
  delayFor(
    ctx: DispatchContext,
    tool: Tool,
    state: ToolHedge,
    now: number,
    samples: number,
    summary: ToolSummary | undefined,
  ): number | undefined {
    const hedgeable = hedgeEligible(tool);
    state.hedgeable = hedgeable;
    if (!hedgeable) return undefined;
    // A retry is extra load as a hedge is: the budget pays for it, so the two together keep to it.
    if (ctx.attempt > 0) state.budget.charge();
    const { minSamples } = this.#settings;
    // The exact count gates, as for the timeout; the summary (recomputed every few dozen calls) tunes.
    if (samples < minSamples) {
      // Warm-up pays in, so the first hedges past it are already paid for.
      state.budget.deposit();
      return undefined;
    }
    summary ??= this.#stats.summary(tool.name, false, now) as ToolSummary;
    if (summary.samples < minSamples) summary = this.#stats.summary(tool.name, true, now) as ToolSummary;
    if (state.summary !== summary) {
      state.summary = summary;
      state.ms = this.#delayOf(summary);
      state.scarceMs = Math.ceil(summary.quantiles[this.#settings.at + 1] as number);
    }
    this.#announce(ctx, state, summary);
    return state.ms === Infinity ? undefined : hedgeDelay(state.ms, state.scarceMs, state.budget.level);
  }

  /** What `snapshot` says of `tool`'s hedge delay, given its summary now. */
  delayOf(tool: string, summary: ToolSummary): number | undefined {
    if (this.#tools.get(tool)?.hedgeable !== true || summary.samples < this.#settings.minSamples)
      return undefined;
    const ms = this.#delayOf(summary);
    return ms === Infinity ? undefined : ms;
  }

  /**
   * Watches the attempt that starts now (`startedAt`) for a hedge `hedgeAfterMs` later (see
   * `HedgedAttempt`): tell the race how the first attempt ended (`firstEnded`). `end.hedged` says
   * a hedge started (in shadow: would have), the events say what was decided, and `end` is told
   * how the attempt ended once both attempts have settled.
   */
  watch(
    ctx: DispatchContext,
    next: Next,
    state: ToolHedge,
    hedgeAfterMs: number,
    startedAt: number,
    end: HedgedAttemptEnd,
  ): HedgedAttempt {
    return new HedgedAttempt(ctx, next, {
      budget: state.budget,
      timers: this.#timers,
      end,
      hedgeAfterMs,
      startedAt,
      shadow: this.#mode === 'shadow',
    }).watch();
  }

  /** Drops what is known of `tool` (the pilot forgets idle tools). */
  forget(tool: string): void {
    this.#tools.delete(tool);
  }

  // Infinity: paused while the tool fails too often (see `hedgePaused`).
  #delayOf(summary: ToolSummary): number {
    if (hedgePaused(summary.outcomes)) return Infinity;
    return Math.max(1, Math.ceil(summary.quantiles[this.#settings.at] as number));
  }

  // `autopilot.decision` when the tool's hedge delay is first known, when it moves enough to be
  // news, and when hedging pauses (`to: undefined`) or resumes.
  #announce(ctx: DispatchContext, state: ToolHedge, summary: ToolSummary): void {
    const before = state.announced === Infinity ? undefined : state.announced;
    const ms = state.ms === Infinity ? undefined : state.ms;
    if (ms === before) return;
    if (ms !== undefined && before !== undefined && Math.abs(ms - before) < before * announceShare) return;
    state.announced = ms;
    ctx.emit('autopilot.decision', {
      knob: 'hedge',
      mode: this.#mode,
      from: before,
      to: ms,
      source:
        ms === undefined
          ? 'paused: over 10 % of attempts failing'
          : `${quantileLabel(this.#settings.quantile)} of ${groupDigits(summary.samples)} calls`,
    });
  }

  /** `tool`'s hedging, made at its first attempt. */
  of(tool: string): ToolHedge {
    let state = this.#tools.get(tool);
    if (state === undefined) {
      state = {
        summary: undefined,
        ms: 0,
        scarceMs: 0,
        announced: undefined,
        hedgeable: false,
        budget: new HedgeBudget({ maxExtraLoad: this.#settings.maxExtraLoad }),
      };
      this.#tools.set(tool, state);
    }
    return state;
  }
}
