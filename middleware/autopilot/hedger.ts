/**
 * Hedged attempts through the onion: `runHedged` given the layers inside the autopilot as its
 * attempt, each attempt under a limit of its own so the loser is aborted through its signal.
 * @module
 */

import type { Clock } from '../../src/clock.js';
import { DispatchError } from '../../src/errors.js';
import type { DeadlineClock, DispatchContext, Next, Outcome, Tool } from '../../src/types.js';
import {
  HedgeBudget,
  type HedgeDecision,
  type HedgedResult,
  type HedgeRole,
  hedgeDelay,
  hedgeEligible,
  hedgedRun,
  hedgePaused,
} from './hedge.js';
import { announceShare, groupDigits, type HedgeSettings, quantileLabel } from './pilot.js';
import { coalescedTimers } from '../internal-kit.js';
import type { ToolStats, ToolSummary } from './tool-stats.js';

/** What one hedged attempt runs on, chosen by the pilot for the tool. */
export interface HedgePlan {
  /** How long the first attempt may run before a hedge starts: the tool's live quantile. */
  readonly hedgeAfterMs: number;
  /** The tool's hedge budget. */
  readonly budget: HedgeBudget;
  /** Decide and report, but start no hedge. */
  readonly shadow: boolean;
  /** The autopilot's timers. */
  readonly clock: Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>;
  /** Told what was decided once `hedgeAfterMs` passed with the first attempt pending. */
  readonly onHedge: (decision: HedgeDecision) => void;
}

// What `ctx.limit` moves on the dispatcher's context. Each attempt's own limit must be set on the
// stack the autopilot was entered with, not under the other attempt's; and its restore (which
// ends the limit) may only run once the attempt is over, so the stack is put back by hand between.
interface StackFields {
  baseSignal: AbortSignal;
  currentLimit: unknown;
  deadline: number;
}

// A limit as the core makes it: told by its outer limit that it ended, it ends the layers inside
// it (the attempt fails at once with `error`, and the handler's signal aborts with `reason`).
interface EndableLimit {
  limitEnded(error: DispatchError, reason: unknown, deadline: boolean): void;
}

function isDispatcherContext(ctx: DispatchContext): ctx is DispatchContext & StackFields {
  return 'currentLimit' in ctx && 'baseSignal' in ctx;
}

function stackOf(ctx: StackFields): StackFields {
  return { baseSignal: ctx.baseSignal, currentLimit: ctx.currentLimit, deadline: ctx.deadline };
}

function putBack(ctx: StackFields, stack: StackFields): void {
  ctx.baseSignal = stack.baseSignal;
  ctx.currentLimit = stack.currentLimit;
  ctx.deadline = stack.deadline;
}

function isEndable(limit: unknown): limit is EndableLimit {
  return typeof (limit as Partial<EndableLimit> | undefined)?.limitEnded === 'function';
}

/**
 * Runs the layers inside (`next`) as one attempt of a repeatable `tool` and, if it is still
 * running after `plan.hedgeAfterMs` and the budget allows, a second one beside it: the first
 * success is the call's outcome, the other attempt is ended as `cancelled` (its handler's signal
 * aborts), and this resolves (whether a hedge started) only once both have settled, so nothing of
 * the loser outlives the layer. When both fail, the first attempt's failure is the answer. In
 * shadow (or on a context the dispatcher did not make) the one attempt runs exactly as without
 * hedging; only the decision is made.
 *
 * Each attempt runs under a limit of its own with no deadline and no signal of its own: it ends
 * with the limits outside it (the caller's cancel, the autopilot's and the call's deadlines) as a
 * lone attempt does, and the loser's is ended directly. Nothing is allocated for a hedge that
 * never starts but that limit and `runHedged`'s one timer: no `AbortController`, no listener.
 *
 * @example
 * const hedged = await runHedgedAttempt(ctx, next, ctx.tool, {
 *   hedgeAfterMs: 120, budget, shadow: false, clock: systemClock, onHedge: () => {},
 * });
 */
export async function runHedgedAttempt(
  ctx: DispatchContext,
  next: Next,
  tool: Tool,
  plan: HedgePlan,
): Promise<boolean> {
  const { hedgeAfterMs, budget, clock, onHedge } = plan;
  if (plan.shadow || !isDispatcherContext(ctx)) {
    await hedgedRun({ tool, run: () => next(), hedgeAfterMs, clock, budget, onHedge, shadow: true });
    return false;
  }
  const entry = stackOf(ctx);
  const attempts: Promise<Outcome | undefined>[] = [];
  const limits: Partial<Record<HedgeRole, unknown>> = {};
  const attempt = (_signal: AbortSignal, role: HedgeRole): Promise<Outcome | undefined> => {
    const restore = ctx.limit({});
    limits[role] = ctx.currentLimit;
    let running: Promise<void>;
    try {
      running = next();
    } catch (error) {
      running = Promise.reject(error);
    } finally {
      // The inner layers have set their limits under this attempt's: the next attempt starts on
      // the entry's stack again.
      putBack(ctx, entry);
    }
    const settled = running.then(
      () => {
        // Read at once: the other attempt may set `ctx.outcome` after this one.
        const outcome = ctx.outcome;
        restore();
        return outcome;
      },
      (error: unknown) => {
        restore();
        throw error;
      },
    );
    attempts.push(settled);
    return settled;
  };
  const cancel = (role: HedgeRole, reason: unknown): void => {
    const limit = limits[role];
    if (!isEndable(limit)) return;
    const error = new DispatchError('cancelled', `"${ctx.displayName}" was cancelled: ${hedgeLost}`, {
      attempts: ctx.attempt,
    });
    limit.limitEnded(error, reason, false);
  };
  let result: HedgedResult<Outcome | undefined>;
  try {
    result = await hedgedRun({ tool, run: attempt, cancel, hedgeAfterMs, clock, budget, onHedge });
  } finally {
    // Each attempt put the stack back as it settled; the last to settle leaves it as it was
    // entered. A lone attempt has settled by now: no wait for it.
    if (attempts.length > 1) await Promise.allSettled(attempts);
  }
  ctx.outcome = result.value;
  return result.hedged;
}

const hedgeLost = 'the other attempt of a hedged call answered first';

// One tool's hedging: its delay as last computed (and from which summary), what was last
// announced, whether it may be hedged, and its budget.
interface ToolHedge {
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
 * const after = hedging.delayFor(ctx, tool, clock.now());
 * if (after !== undefined) await hedging.run(ctx, next, tool, after, record);
 * @internal
 */
export class ToolHedging {
  readonly #tools = new Map<string, ToolHedge>();
  readonly #settings: HedgeSettings;
  readonly #stats: ToolStats;
  readonly #mode: 'enforce' | 'shadow';
  readonly #clock: DeadlineClock;

  constructor(settings: HedgeSettings, stats: ToolStats, mode: 'enforce' | 'shadow', clock: DeadlineClock) {
    this.#settings = settings;
    this.#stats = stats;
    this.#mode = mode;
    // Nearly every hedged call sets its timer and clears it: one real timer per delay, not per call.
    this.#clock = coalescedTimers(clock);
  }

  /**
   * The hedge delay for this attempt of `tool`: `undefined` for a tool that may never be hedged
   * (it runs as if hedging were off) and during warm-up (the budget is paid into, no hedge starts).
   */
  delayFor(ctx: DispatchContext, tool: Tool, now: number): number | undefined {
    const hedgeable = hedgeEligible(tool);
    const state = this.#of(tool.name);
    state.hedgeable = hedgeable;
    if (!hedgeable) return undefined;
    // A retry is extra load as a hedge is: the budget pays for it, so the two together keep to it.
    if (ctx.attempt > 0) state.budget.charge();
    const { minSamples } = this.#settings;
    // The exact count gates, as for the timeout; the summary (recomputed every few dozen calls) tunes.
    const samples = this.#stats.samples(tool.name, now);
    if (samples < minSamples) {
      // Warm-up pays in, so the first hedges past it are already paid for.
      state.budget.deposit();
      return undefined;
    }
    let summary = this.#stats.summary(tool.name, false, now) as ToolSummary;
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
   * Runs the attempt hedged after `hedgeAfterMs` (see `runHedgedAttempt`); `record.hedged` says a
   * hedge started (in shadow: would have), and the events say what was decided.
   */
  run(
    ctx: DispatchContext,
    next: Next,
    tool: Tool,
    hedgeAfterMs: number,
    record: { hedged: boolean },
  ): Promise<boolean> {
    const onHedge = (decision: HedgeDecision): void => {
      if (decision !== 'budget_spent') record.hedged = true;
      if (decision === 'would_start')
        ctx.emit('autopilot.shadow', { knob: 'hedge', action: 'hedged', hedgeAfterMs });
      else ctx.emit('autopilot.hedge', { decision, hedgeAfterMs });
    };
    return runHedgedAttempt(ctx, next, tool, {
      hedgeAfterMs,
      budget: this.#of(tool.name).budget,
      shadow: this.#mode === 'shadow',
      clock: this.#clock,
      onHedge,
    });
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

  #of(tool: string): ToolHedge {
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
