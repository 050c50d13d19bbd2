/**
 * The autopilot's engine: per attempt, the timeout it chooses from the tool's latency window and
 * the samples it records; per call, the policy it reports and the retry budget it hands to retry.
 * @module
 */

import { type DispatchError, describeThrown, isDispatchError } from '../../src/errors.js';
import type {
  AttemptLimits,
  DeadlineClock,
  DispatchContext,
  DispatchSuccess,
  Next,
  Tool,
} from '../../src/types.js';
import { attemptLimitsOf } from '../internal-kit.js';
import { maxTimerDelayMs, untilLimitEnds } from '../kit.js';
import type { HedgedAttempt, HedgedAttemptEnd, HedgeSettings, ToolHedge, ToolHedging } from './hedger.js';
import {
  announceShare,
  groupDigits,
  type OutcomePolicy,
  type PolicyBudgetState,
  quantileLabel,
} from './policy.js';
import type { RetryBudget, StoreRetryBudget } from './retry-budget.js';
import type { LimitSemaphore } from './limit-semaphore.js';
import type { ToolLimit, ToolSlots } from './tool-slots.js';
import type { ToolStats, ToolSummary } from './tool-stats.js';
import type { OutcomeClass } from './windowed-sketch.js';

/** The timeout knob's settings, checked. */
export interface TimeoutSettings {
  readonly quantile: number;
  readonly factor: number;
  readonly minMs: number;
  readonly minSamples: number;
}

/** Everything a `Pilot` runs on, checked by `autopilot()`. */
export interface PilotSettings {
  readonly mode: 'enforce' | 'shadow';
  readonly clock: DeadlineClock;
  readonly stats: ToolStats;
  /** `undefined`: the timeout knob is off. */
  readonly timeout: TimeoutSettings | undefined;
  /** `undefined`: hedging is off. */
  readonly hedge: HedgeSettings | undefined;
  /** One budget for every tool (a `retryBudget()` given), a budget per tool, or none. */
  readonly budget:
    | { readonly shared: RetryBudget }
    | { readonly perTool: (tool: string) => StoreRetryBudget }
    | undefined;
}

/**
 * The timeout layer's static deadline, for an autopilot in the timeout's place (`defaultStack`):
 * every attempt runs under the call's or the tool's `timeoutMs`, else `defaultMs`, tightened by
 * the autopilot's own timeout once it has one.
 */
export interface StaticDeadline {
  /** The timeout of a tool without its own, in milliseconds (`Infinity`: none). */
  readonly defaultMs: number;
  /** The time source and timers of the static deadline (the timeout layer's). */
  readonly clock: DeadlineClock;
}

/** Where hedging and the concurrency controller plug in; each `undefined` when its knob is off. */
export interface PilotSeams {
  /** Hedges of repeatable tools (`hedger.ts`). */
  readonly hedging?: ToolHedging;
  /** Per-tool adaptive limits and slots (`tool-slots.ts`). */
  readonly concurrency?: ToolSlots;
}

// The call's policy as the autopilot fills it in, for a call something happened to (a failure, a
// retry, a hedge; a quiet one shares its tool's frozen policy): one object per such call, attached
// by reference to each attempt's outcome so the retry budget's word (given after the attempt
// failed) reaches the envelope retry gives up with. Settled by the time the outcome is reported.
interface PolicyRecord {
  mode: 'enforce' | 'shadow';
  timeoutMs: number | undefined;
  source: string;
  cutOff: boolean;
  hedged: boolean;
  retried: boolean;
  budget: PolicyBudgetState;
}

// A tool's timeout as last computed, cached for the summary it came from.
interface ToolTuning {
  summary: ToolSummary | undefined;
  ms: number;
  source: string;
  /** The limit an attempt at `ms` runs under, made with it (its explanation a string per attempt cost a tenth of one). */
  limits: AttemptLimits | undefined;
  /** The static limit an attempt last ran under, when the autopilot is in the timeout's place. */
  staticLimits: AttemptLimits | undefined;
  /** The quiet policy of an attempt at `ms` (see `PilotAttempt.policy`). */
  tuned: OutcomePolicy | undefined;
  /** The quiet policy of the tool's last static attempt, and what it was for. */
  fixed: OutcomePolicy | undefined;
  /** Why the cap wins over `source`, made with it. */
  capSource: string | undefined;
  /** What `autopilot.decision` last said the timeout is (`undefined`: static). */
  announced: number | undefined;
  /** Whether the tool's retry budget was last found spent. */
  budgetSpent: boolean;
  /** The cap last seen for the tool (its own `timeoutMs`), for `snapshot`. */
  cap: number | undefined;
  budget: StoreRetryBudget | undefined;
  /** The tool's hedging and its slots, held here so an attempt looks the tool up once. */
  hedge: ToolHedge | undefined;
  slots: ToolLimit | undefined;
}

const stateKey = 'autopilot';

/** What `Pilot.snapshot` reads of a tool; the factory's `AutopilotSnapshot` is built from it. */
export interface PilotSnapshot {
  samples: number;
  p50: number;
  p95: number;
  p99: number;
  p999: number;
  timeoutMs: number | undefined;
  hedgeAfterMs: number | undefined;
  concurrency: number | undefined;
  budget: RetryBudget | undefined;
}

/**
 * The autopilot of one `autopilot()` layer: tool windows, per-tool tunings and budgets.
 * @internal
 */
export class Pilot {
  readonly #settings: PilotSettings;
  readonly #tunings = new Map<string, ToolTuning>();

  readonly #seams: PilotSeams;
  readonly #warmUpSource: string;
  // The fewest samples either knob tunes on: from there an attempt reads the tool's summary.
  readonly #tunesFrom: number;

  constructor(settings: PilotSettings, seams: PilotSeams = {}) {
    this.#settings = settings;
    this.#seams = seams;
    this.#tunesFrom = Math.min(
      settings.timeout?.minSamples ?? Infinity,
      settings.hedge?.minSamples ?? Infinity,
    );
    this.#warmUpSource = `static: under ${settings.timeout?.minSamples} samples`;
  }

  /** The mode the pilot runs in. */
  get mode(): 'enforce' | 'shadow' {
    return this.#settings.mode;
  }

  /**
   * Runs one attempt: in one of the tool's slots (enforce, with the concurrency knob), under the
   * chosen timeout (enforce; with `fixed`, the static deadline otherwise), hedged when the tool is
   * repeatable and slow, timed, and its outcome told its policy.
   */
  // Not async, nor is `#attempt`: the layer adds one reaction to a dispatch, and no frame.
  run(ctx: DispatchContext, next: Next, fixed?: StaticDeadline): Promise<void> {
    const tool = ctx.tool;
    if (tool === undefined) return next();
    const tuning = this.#tuningOf(tool.name);
    const slots = this.#seams.concurrency;
    if (slots === undefined) return this.#attempt(ctx, next, tool, tuning, fixed);
    const mode = this.#settings.mode;
    const entry = (tuning.slots ??= slots.of(tool.name));
    // A free slot, nobody waiting: taken at once, no promise or releaser per attempt.
    const held = mode === 'enforce' ? slots.tryTake(entry, ctx.signal) : undefined;
    if (held !== undefined) return this.#attempt(ctx, next, tool, tuning, fixed, held);
    return slots.run(ctx, entry, mode, () => this.#attempt(ctx, next, tool, tuning, fixed));
  }

  // Not async: the layers inside are answered with one `.then`, their outcome handled by the
  // attempt's `succeeded` or `failed`. `held`: the slot `run` took for it, given back once all of the
  // attempt is done.
  #attempt(
    ctx: DispatchContext,
    next: Next,
    tool: Tool,
    tuning: ToolTuning,
    fixed: StaticDeadline | undefined,
    held?: LimitSemaphore,
  ): Promise<void> {
    let attempt: PilotAttempt;
    let running: Promise<void>;
    try {
      const { clock, mode, stats } = this.#settings;
      const startedAt = clock.now();
      if (ctx.attempt === 0) this.#payIn(ctx, tool.name, tuning, startedAt);
      // The exact count gates both knobs; the summary (recomputed every few dozen calls) tunes,
      // read once for both.
      const samples = stats.samples(tool.name, startedAt);
      const summary = samples >= this.#tunesFrom ? stats.summary(tool.name, false, startedAt) : undefined;
      const policy = this.#chooseTimeout(ctx, tool, tuning, startedAt, samples, summary, fixed);
      const timeoutMs = policy === tuning.tuned ? tuning.ms : undefined;
      const hedging = this.#seams.hedging;
      const state = hedging === undefined ? undefined : (tuning.hedge ??= hedging.of(tool.name));
      const hedgeAfterMs = hedging?.delayFor(ctx, tool, state as ToolHedge, startedAt, samples, summary);
      const hedged = hedgeAfterMs !== undefined;
      const limits = limitsOf(ctx, tool, tuning, mode === 'enforce', timeoutMs !== undefined, fixed, hedged);
      const restore = limits === undefined ? undefined : ctx.limit(limits);
      attempt = new PilotAttempt(this.#settings, this.#seams.concurrency, tuning.slots, ctx, tool, {
        startedAt,
        policy,
        timeoutMs,
        restore,
        held,
      });
      try {
        // The first attempt is the layers inside as for any tool; a hedge may start beside it.
        if (hedgeAfterMs !== undefined) {
          const watched = state as ToolHedge;
          attempt.race = (hedging as ToolHedging).watch(ctx, next, watched, hedgeAfterMs, startedAt, attempt);
        }
        const inner = next();
        running = restore === undefined ? inner : untilLimitEnds(ctx, inner);
      } catch (error) {
        running = Promise.reject(error);
      }
    } catch (error) {
      held?.give();
      return Promise.reject(error);
    }
    return running.then(
      () => attempt.firstSucceeded(),
      (error: unknown) => attempt.firstFailed(error),
    );
  }

  // Pays into the tool's retry budget for the call's first attempt, on the attempt's clock reading
  // (a budget per tool runs on the autopilot's clock); a store that throws costs only that.
  #payIn(ctx: DispatchContext, tool: string, tuning: ToolTuning, now: number): void {
    const { budget } = this.#settings;
    if (budget === undefined) return;
    try {
      if ('shared' in budget) budget.shared.deposit();
      else (tuning.budget ??= budget.perTool(tool)).depositAt(now);
    } catch (error) {
      ctx.emit('autopilot.fallback', { knob: 'retryBudget', reason: describeThrown(error) });
    }
  }

  /**
   * Whether the retry budget lets the call retry: a spent budget says no (in shadow, yes, and the
   * policy says it would have said no); a store that fails says yes (the static rules) and an
   * `autopilot.fallback` event says so.
   */
  async tryWithdraw(ctx: DispatchContext): Promise<boolean> {
    const budget = this.#budgetOf(ctx);
    if (budget === undefined) return true;
    const record = policyOf(ctx, this.#settings);
    let allowed: boolean;
    try {
      allowed = (await budget.tryWithdraw()) === true;
    } catch (error) {
      record.budget = 'unavailable';
      ctx.emit('autopilot.fallback', { knob: 'retryBudget', reason: describeThrown(error) });
      return true;
    }
    const tuning = this.#tuningOf(ctx.tool?.name ?? ctx.toolName);
    const { mode } = this.#settings;
    if (tuning.budgetSpent === allowed) {
      tuning.budgetSpent = !allowed;
      ctx.emit('autopilot.decision', {
        knob: 'retryBudget',
        mode,
        from: allowed ? 'spent' : 'open',
        to: allowed ? 'open' : 'spent',
        source: allowed ? 'first attempts paid in again' : 'retries used up what first attempts paid in',
      });
    }
    if (allowed) return true;
    record.budget = 'spent';
    if (mode === 'enforce') return false;
    ctx.emit('autopilot.shadow', { knob: 'retryBudget', action: 'not_retried' });
    return true;
  }

  /** What the autopilot knows of `tool` now (see `AutopilotSnapshot`). */
  snapshot(tool: string): PilotSnapshot {
    const summary = this.#settings.stats.summary(tool, true);
    const tuning = this.#tunings.get(tool);
    const timeout = this.#settings.timeout;
    let timeoutMs: number | undefined;
    if (timeout !== undefined && summary !== undefined && summary.samples >= timeout.minSamples) {
      const ms = adaptiveMs(summary, timeout);
      timeoutMs = tuning?.cap !== undefined && ms >= tuning.cap ? tuning.cap : ms;
    }
    return {
      samples: summary?.samples ?? 0,
      p50: summary?.p50 ?? Number.NaN,
      p95: summary?.p95 ?? Number.NaN,
      p99: summary?.p99 ?? Number.NaN,
      p999: summary?.p999 ?? Number.NaN,
      timeoutMs,
      hedgeAfterMs: summary === undefined ? undefined : this.#seams.hedging?.delayOf(tool, summary),
      concurrency: this.#seams.concurrency?.limitOf(tool),
      budget: this.#budgetFor(tool),
    };
  }

  // The attempt's policy as it stands when nothing happens to it: the autopilot's timeout once the
  // tool has `minSamples` (`tuning.tuned`, with `tuning.limits` to enforce it), never above the cap
  // (the caller's or the tool's `timeoutMs`); else a static one, the timeout layer's own.
  #chooseTimeout(
    ctx: DispatchContext,
    tool: Tool,
    tuning: ToolTuning,
    now: number,
    samples: number,
    read: ToolSummary | undefined,
    fixed: StaticDeadline | undefined,
  ): OutcomePolicy {
    const timeout = this.#settings.timeout;
    // In the timeout's place, its default is a cap as a tool's own timeout is.
    const fallback = fixed === undefined || fixed.defaultMs > maxTimerDelayMs ? undefined : fixed.defaultMs;
    const cap = ctx.options.timeoutMs ?? tool.timeoutMs ?? fallback;
    tuning.cap = tool.timeoutMs ?? fallback;
    if (timeout === undefined) return fixedPolicy(this.#settings, tuning, cap, timeoutOffSource);
    if (tool.timeout !== undefined)
      return fixedPolicy(this.#settings, tuning, tool.timeout.totalMs, idleTimeoutSource);
    if (samples < timeout.minSamples) {
      // One string per pilot, not one per call: formatting the count cost a tenth of a dispatch.
      announce(ctx, this.#settings.mode, tuning, undefined, this.#warmUpSource);
      return fixedPolicy(this.#settings, tuning, cap, this.#warmUpSource);
    }
    // Read by the attempt: past `minSamples` the tool has a window.
    let summary = read as ToolSummary;
    // A summary from before the tool had its samples is no ground to tune on.
    if (summary.samples < timeout.minSamples)
      summary = this.#settings.stats.summary(tool.name, true, now) as ToolSummary;
    if (tuning.summary !== summary) retune(this.#settings, tuning, summary, timeout);
    if (cap !== undefined && tuning.ms >= cap) {
      const source = (tuning.capSource ??= `static: the cap is below ${tuning.source} (${tuning.ms} ms)`);
      // A caller's own cap is this call's, not a move of the tool's knob.
      if (ctx.options.timeoutMs === undefined) announce(ctx, this.#settings.mode, tuning, undefined, source);
      return fixedPolicy(this.#settings, tuning, cap, source);
    }
    announce(ctx, this.#settings.mode, tuning, tuning.ms, tuning.source);
    return tuning.tuned as OutcomePolicy;
  }

  #tuningOf(tool: string): ToolTuning {
    let tuning = this.#tunings.get(tool);
    if (tuning === undefined) {
      // Tunings follow the tools the window holds: an idle tool's goes with its window.
      if (this.#tunings.size >= 1_024 && this.#tunings.size % 1_024 === 0) this.#sweep();
      tuning = untunedTool();
      this.#tunings.set(tool, tuning);
    }
    return tuning;
  }

  #sweep(): void {
    const { stats } = this.#settings;
    for (const [tool] of this.#tunings) {
      if (stats.byteLength(tool) !== 0) continue;
      this.#tunings.delete(tool);
      this.#seams.concurrency?.forget(tool);
      this.#seams.hedging?.forget(tool);
    }
  }

  #budgetOf(ctx: DispatchContext): RetryBudget | undefined {
    return this.#budgetFor(ctx.tool?.name ?? ctx.toolName);
  }

  #budgetFor(tool: string): RetryBudget | undefined {
    const { budget } = this.#settings;
    if (budget === undefined) return undefined;
    if ('shared' in budget) return budget.shared;
    const tuning = this.#tuningOf(tool);
    return (tuning.budget ??= budget.perTool(tool));
  }
}

const timeoutOffSource = 'static: the autopilot timeout is off';
// The limit of an attempt with no deadline of its own: one it can be ended by alone.
const noDeadline: AttemptLimits = Object.freeze({});
const idleTimeoutSource = "static: the tool's idle timeout";

// The limit an attempt runs under: the autopilot's tuned one (enforced), else in the timeout's
// place its static deadline; a hedge runs beside the attempt's own limit, so an enforced attempt
// with neither that may be hedged gets one it can be ended by alone.
function limitsOf(
  ctx: DispatchContext,
  tool: Tool,
  tuning: ToolTuning,
  enforce: boolean,
  tuned: boolean,
  fixed: StaticDeadline | undefined,
  hedged: boolean,
): AttemptLimits | undefined {
  if (tuned && enforce) return tuning.limits;
  const limits =
    fixed === undefined
      ? undefined
      : (tuning.staticLimits = attemptLimitsOf(
          ctx.options.timeoutMs,
          tool,
          fixed.defaultMs,
          fixed.clock,
          tuning.staticLimits,
        ));
  return limits === undefined && hedged && enforce ? noDeadline : limits;
}

// One attempt as the pilot runs it: what it chose at the start, and what it does once the layers
// inside have settled.
class PilotAttempt implements HedgedAttemptEnd {
  /** A hedge started beside it (in shadow: would have); set by the hedger. */
  hedged = false;
  /** Its race with a hedge, for a tool past its hedge warm-up: told how the first attempt ended. */
  race: HedgedAttempt | undefined = undefined;
  readonly startedAt: number;
  /**
   * What its outcome says when nothing happens to it: frozen and shared by the tool's attempts
   * while the timeout stands (a record per call was the layer's largest garbage).
   */
  readonly policy: OutcomePolicy;
  /** The autopilot's timeout it runs under (in shadow: would); `undefined` when static. */
  readonly timeoutMs: number | undefined;
  readonly retried: boolean;
  readonly #settings: PilotSettings;
  readonly #slots: ToolSlots | undefined;
  readonly #entry: ToolLimit | undefined;
  readonly #ctx: DispatchContext;
  readonly #tool: Tool;
  readonly #restore: (() => void) | undefined;
  readonly #held: LimitSemaphore | undefined;

  constructor(
    settings: PilotSettings,
    slots: ToolSlots | undefined,
    entry: ToolLimit | undefined,
    ctx: DispatchContext,
    tool: Tool,
    chosen: {
      startedAt: number;
      policy: OutcomePolicy;
      timeoutMs: number | undefined;
      restore: (() => void) | undefined;
      held: LimitSemaphore | undefined;
    },
  ) {
    this.#settings = settings;
    this.#slots = slots;
    this.#entry = entry;
    this.#ctx = ctx;
    this.#tool = tool;
    this.startedAt = chosen.startedAt;
    this.policy = chosen.policy;
    this.timeoutMs = chosen.timeoutMs;
    this.retried = ctx.attempt > 0;
    this.#restore = chosen.restore;
    this.#held = chosen.held;
  }

  /** The first attempt succeeded: the attempt did, or its race says what became of it. */
  firstSucceeded(): void | Promise<void> {
    const race = this.race;
    return race === undefined ? this.succeeded() : race.firstEnded(false, undefined);
  }

  /** The first attempt failed: so did the attempt, or its race says what became of it. */
  firstFailed(error: unknown): void | Promise<void> {
    const race = this.race;
    if (race === undefined) this.failed(error);
    return race.firstEnded(true, error);
  }

  /** The layers inside succeeded: the sample, the limit's move, and the outcome's policy. */
  succeeded(): void {
    try {
      this.#restore?.();
      const ctx = this.#ctx;
      const { clock, mode, stats } = this.#settings;
      const endedAt = clock.now();
      const { timeoutMs } = this;
      const tool = this.#tool.name;
      // The call's time, whoever answered: when a hedge won, this is the first attempt's time at its
      // abort (past the hedge delay: a lower bound of its own latency), not the hedge's own time.
      // The hedge's time is a sample taken only when it beat a slow attempt, so it is biased fast;
      // and leaving the slow first attempt out would pull the quantile down, hedge more calls that
      // needed none, and spend the budget on them. An aborted attempt is never a sample of its own.
      const latencyMs = endedAt - this.startedAt;
      stats.record(tool, 'success', latencyMs, endedAt);
      this.#slots?.record(ctx, this.#entry as ToolLimit, latencyMs, mode, endedAt);
      const outcome = ctx.outcome;
      const ranPast = timeoutMs !== undefined && mode === 'shadow' && latencyMs > timeoutMs;
      // Nothing happened to a first attempt that was not hedged and not (in shadow) past its
      // timeout: its outcome shares the tool's frozen policy, and the call needs no record.
      if (!this.retried && !this.hedged && !ranPast) {
        if (outcome?.ok === true) ctx.outcome = withPolicy(outcome, this.policy);
        return;
      }
      const record = this.#record();
      if (ranPast) judgeCut(ctx, record, timeoutMs as number, latencyMs, false);
      if (outcome?.ok === true) ctx.outcome = withPolicy(outcome, record);
    } finally {
      this.#held?.give();
    }
  }

  /** The layers inside failed with `error`: counted, judged, explained, and thrown on. */
  failed(error: unknown): never {
    try {
      try {
        const { clock, stats } = this.#settings;
        const endedAt = clock.now();
        const latencyMs = endedAt - this.startedAt;
        const kind = isDispatchError(error) ? error.kind : 'internal';
        if (kind !== 'cancelled') stats.record(this.#tool.name, classOf(kind), undefined, endedAt);
        const record = this.#record();
        const { timeoutMs } = this;
        if (timeoutMs !== undefined) judgeCut(this.#ctx, record, timeoutMs, latencyMs, kind === 'timeout');
        if (isDispatchError(error)) attachPolicy(error, record);
      } finally {
        this.#restore?.();
      }
    } finally {
      this.#held?.give();
    }
    throw error;
  }

  // The call's own record (made at its first need: a failure, a retry, a hedge), told what this
  // attempt ran under.
  #record(): PolicyRecord {
    const record = policyOf(this.#ctx, this.#settings);
    record.retried = this.retried;
    record.timeoutMs = this.policy.timeoutMs;
    record.source = this.policy.source;
    if (this.hedged) record.hedged = true;
    return record;
  }
}

// A policy as an outcome says it when nothing happened to the call, frozen to be shared.
function quietPolicy(settings: PilotSettings, timeoutMs: number | undefined, source: string): OutcomePolicy {
  return Object.freeze({
    mode: settings.mode,
    timeoutMs,
    source,
    cutOff: false,
    hedged: false,
    retried: false,
    budget: settings.budget === undefined ? 'off' : 'ok',
  });
}

// Tunes `tuning` to `summary`: its timeout, and the limit and quiet policy of an attempt under it.
function retune(
  settings: PilotSettings,
  tuning: ToolTuning,
  summary: ToolSummary,
  timeout: TimeoutSettings,
): void {
  const ms = adaptiveMs(summary, timeout);
  const source = `${quantileLabel(timeout.quantile)} × ${timeout.factor} of ${groupDigits(summary.samples)} calls`;
  tuning.summary = summary;
  if (ms === tuning.ms && source === tuning.source) return;
  tuning.ms = ms;
  tuning.source = source;
  tuning.capSource = undefined;
  tuning.limits = Object.freeze({
    timeoutMs: ms,
    clock: settings.clock,
    explanation: `cut off at the autopilot's ${source}`,
  });
  tuning.tuned = quietPolicy(settings, ms, source);
}

// The tool's quiet static policy for `timeoutMs` and `source`, kept while they stay the same.
function fixedPolicy(
  settings: PilotSettings,
  tuning: ToolTuning,
  timeoutMs: number | undefined,
  source: string,
): OutcomePolicy {
  const held = tuning.fixed;
  if (held !== undefined && held.timeoutMs === timeoutMs && held.source === source) return held;
  tuning.fixed = quietPolicy(settings, timeoutMs, source);
  return tuning.fixed;
}

function untunedTool(): ToolTuning {
  return {
    summary: undefined,
    ms: 0,
    source: '',
    limits: undefined,
    staticLimits: undefined,
    tuned: undefined,
    fixed: undefined,
    capSource: undefined,
    announced: undefined,
    budgetSpent: false,
    cap: undefined,
    budget: undefined,
    hedge: undefined,
    slots: undefined,
  };
}

// The call's policy record, made at its first need (an attempt that failed, retried or was hedged,
// or the retry budget's word).
function policyOf(ctx: DispatchContext, settings: PilotSettings): PolicyRecord {
  const held = ctx.state[stateKey] as PolicyRecord | undefined;
  if (held !== undefined) return held;
  const record: PolicyRecord = {
    mode: settings.mode,
    timeoutMs: undefined,
    source: 'static',
    cutOff: false,
    hedged: false,
    retried: false,
    budget: settings.budget === undefined ? 'off' : 'ok',
  };
  ctx.state[stateKey] = record;
  return record;
}

// `autopilot.decision` when the tool's timeout moved enough to be news.
function announce(
  ctx: DispatchContext,
  mode: 'enforce' | 'shadow',
  tuning: ToolTuning,
  ms: number | undefined,
  source: string,
): void {
  const before = tuning.announced;
  if (ms === before) return;
  if (ms !== undefined && before !== undefined && Math.abs(ms - before) < before * announceShare) return;
  tuning.announced = ms;
  ctx.emit('autopilot.decision', { knob: 'timeout', mode, from: before, to: ms, source });
}

// Whether the attempt was (enforce) or would have been (shadow) cut off by the chosen timeout.
function judgeCut(
  ctx: DispatchContext,
  record: PolicyRecord,
  timeoutMs: number,
  latencyMs: number,
  timedOut: boolean,
): void {
  if (record.mode === 'enforce') {
    if (timedOut && latencyMs >= timeoutMs) record.cutOff = true;
    return;
  }
  if (latencyMs <= timeoutMs) return;
  record.cutOff = true;
  ctx.emit('autopilot.shadow', { knob: 'timeout', action: 'cut_off', timeoutMs, latencyMs });
}

// The attempt step's success is a fresh object of its own: the policy is added to it in place (a
// spread of it cost as much as the rest of the layer). One a layer froze is copied instead.
function withPolicy(outcome: DispatchSuccess, record: OutcomePolicy): DispatchSuccess {
  if (!Object.isExtensible(outcome)) return { ...outcome, policy: record };
  (outcome as { policy?: OutcomePolicy }).policy = record;
  return outcome;
}

// Envelopes are the layers' own objects; a frozen one (a user's) goes on without its policy.
function attachPolicy(error: DispatchError, record: OutcomePolicy): void {
  try {
    (error as { policy?: OutcomePolicy }).policy = record;
  } catch {
    // Ignored on purpose: the call's outcome matters more than its explanation.
  }
}

function classOf(kind: string): OutcomeClass {
  if (kind === 'timeout') return 'timeout';
  return kind === 'transient' || kind === 'store_unavailable' ? 'transient' : 'other';
}

function adaptiveMs(summary: ToolSummary, timeout: TimeoutSettings): number {
  const latency = summary.quantiles[0] as number;
  return Math.max(timeout.minMs, Math.ceil(timeout.factor * latency));
}
