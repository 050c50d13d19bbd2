/**
 * The five trace rows of issue 34's bench: each trace replayed through today's static defaults
 * (30 s timeout, 3 attempts, concurrency `max` 8) and through `autopilot()`, each measure against
 * its target.
 * @module
 */

import { type AutopilotOptions, autopilot } from '../../index.js';
import { quantileOf, type ReplayResult, type ReplaySetup, replay } from './replay.js';
import { makeTrace, type Trace, type TraceName, traceParameters } from './traces.js';

/** A row's verdict; `n/a (not wired)` when a knob it needs is not available in this build. */
export type Verdict = 'PASS' | 'FAIL' | 'n/a (not wired)';

/** The knobs a row may need beyond the timeout and the retry budget. */
export type Knob = 'hedge' | 'concurrency';

/** One measure of one trace, static defaults beside the autopilot. */
export interface AutopilotRow {
  /** The trace, e.g. `steady, 3 % stragglers`. */
  readonly trace: string;
  /** What is measured, e.g. `p99`. */
  readonly measure: string;
  /** The static defaults' value, formatted. */
  readonly static: string;
  /** The autopilot's value, formatted. */
  readonly autopilot: string;
  /** What is judged (a change, a ratio, a count), formatted. */
  readonly measured: string;
  /** The target, formatted. */
  readonly target: string;
  readonly verdict: Verdict;
}

/** p99 and tool calls of one trace, static and autopilot: the charts' bars. */
export interface TraceFigures {
  readonly trace: TraceName;
  readonly staticP99: number;
  readonly autopilotP99: number;
  /** Tool attempts per logical call. */
  readonly staticCallsPerCall: number;
  readonly autopilotCallsPerCall: number;
}

/** The autopilot's options as the bench runs them, and which of the issue's knobs this build has. */
export interface PilotConfig {
  readonly options: AutopilotOptions;
  readonly wired: Readonly<Record<Knob, boolean>>;
}

/** The issue's example settings, knob by knob. */
const issueOptions = {
  timeout: { quantile: 0.999, factor: 1.5, minMs: 50, minSamples: 200 },
  hedge: { quantile: 0.95, maxExtraLoad: 0.05, minSamples: 200 },
  concurrency: { min: 1, max: 64 },
  retryBudget: { ratio: 0.2, minPerSecond: 10 },
} as const;

/**
 * The issue's options, less any knob this build refuses as "not available yet" (hedging and
 * adaptive concurrency land separately): the rows that need it then say `n/a (not wired)`.
 */
export function pilotConfig(): PilotConfig {
  const wired: Record<Knob, boolean> = { hedge: true, concurrency: true };
  const options: AutopilotOptions = { ...issueOptions };
  for (const knob of ['hedge', 'concurrency'] as const) {
    try {
      autopilot({ [knob]: issueOptions[knob] });
    } catch (error) {
      if (!/not available yet/.test((error as Error).message)) throw error;
      wired[knob] = false;
      options[knob] = false;
    }
  }
  return { options, wired };
}

/** How the trace rows run. */
export interface ScenarioSettings {
  /** Logical calls per trace. */
  readonly calls: number;
  readonly seed: number;
  readonly config: PilotConfig;
  readonly log: (line: string) => void;
  /** Only these groups of rows (`tails`, `degrading`, `brownout`, `capacity`). @default all */
  readonly only?: readonly string[] | undefined;
}

/** Every trace row, and the figures the charts draw. */
export interface ScenarioResults {
  readonly rows: AutopilotRow[];
  readonly figures: TraceFigures[];
}

/** Runs the five traces. */
export async function runScenarios(settings: ScenarioSettings): Promise<ScenarioResults> {
  const rows: AutopilotRow[] = [];
  const figures: TraceFigures[] = [];
  const groups = {
    tails: tailRows,
    degrading: degradingRows,
    brownout: brownoutRows,
    capacity: capacityRows,
  };
  for (const [group, run] of Object.entries(groups)) {
    if (settings.only !== undefined && !settings.only.includes(group)) continue;
    const result = await run(settings);
    rows.push(...result.rows);
    figures.push(...result.figures);
  }
  return { rows, figures };
}

function verdictOf(pass: boolean, settings: ScenarioSettings, needs: readonly Knob[]): Verdict {
  if (needs.some((knob) => !settings.config.wired[knob])) return 'n/a (not wired)';
  return pass ? 'PASS' : 'FAIL';
}

/** `0.13` → `−87 %`. */
function change(ratio: number): string {
  const percent = (ratio - 1) * 100;
  return `${percent < 0 ? '−' : '+'}${Math.abs(percent).toFixed(1)} %`;
}

function ms(value: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  return value >= 10_000 ? `${(value / 1_000).toFixed(1)} s` : `${Math.round(value)} ms`;
}

function figuresOf(trace: Trace, fixed: ReplayResult, pilot: ReplayResult): TraceFigures {
  return {
    trace: trace.name,
    staticP99: quantileOf(fixed.latencyMs, 0.99),
    autopilotP99: quantileOf(pilot.latencyMs, 0.99),
    staticCallsPerCall: fixed.attempts / trace.calls,
    autopilotCallsPerCall: pilot.attempts / trace.calls,
  };
}

/**
 * The autopilot's replay setup: its options and, once its concurrency knob is wired, the static
 * `concurrencyLimit` raised to the knob's `max`, so the autopilot's per-tool limit is what binds
 * (under the static 8, a 10× brownout at 5 calls a second would queue past its end).
 */
function pilotSetup(settings: ScenarioSettings): ReplaySetup {
  const { options, wired } = settings.config;
  return wired.concurrency
    ? { autopilot: options, concurrencyMax: issueOptions.concurrency.max }
    : { autopilot: options };
}

async function replayPair(
  trace: Trace,
  settings: ScenarioSettings,
): Promise<{ fixed: ReplayResult; pilot: ReplayResult }> {
  const fixed = await replay(trace, {});
  const pilot = await replay(trace, pilotSetup(settings));
  settings.log(
    `   ${trace.name}: replayed ${trace.calls} calls twice in ${((fixed.wallMs + pilot.wallMs) / 1_000).toFixed(1)} s`,
  );
  return { fixed, pilot };
}

// Steady and bimodal: the tail rows, hedging's.
async function tailRows(settings: ScenarioSettings): Promise<ScenarioResults> {
  const rows: AutopilotRow[] = [];
  const figures: TraceFigures[] = [];
  const cases = [
    { name: 'steady', label: 'steady, 3 % stragglers at 10–50×', p99: 0.2, p999: 0.5 },
    { name: 'bimodal', label: 'bimodal (20 % at 8×), 1 % stragglers', p99: 0.7, p999: undefined },
  ] as const;
  for (const tail of cases) {
    const trace = makeTrace(tail.name, { seed: settings.seed, calls: settings.calls });
    const { fixed, pilot } = await replayPair(trace, settings);
    const quantileRow = (q: number, label: string, target: number): AutopilotRow => {
      const before = quantileOf(fixed.latencyMs, q);
      const after = quantileOf(pilot.latencyMs, q);
      return {
        trace: tail.label,
        measure: label,
        static: ms(before),
        autopilot: ms(after),
        measured: change(after / before),
        target: `≤ ${change(target)}`,
        verdict: verdictOf(after / before <= target, settings, ['hedge']),
      };
    };
    rows.push(quantileRow(0.99, 'p99', tail.p99));
    if (tail.p999 !== undefined) rows.push(quantileRow(0.999, 'p99.9', tail.p999));
    const extra = pilot.attempts / fixed.attempts;
    rows.push({
      trace: tail.label,
      measure: 'tool calls',
      static: String(fixed.attempts),
      autopilot: String(pilot.attempts),
      measured: change(extra),
      target: '≤ +5 %',
      verdict: verdictOf(extra <= 1.05, settings, ['hedge']),
    });
    figures.push(figuresOf(trace, fixed, pilot));
  }
  return { rows, figures };
}

// A static timeout tuned as the autopilot would (p99.9 × 1.5) on the first 5 % of the trace.
function tunedOnFirstCalls(trace: Trace): number {
  const first = Math.max(1, Math.floor(trace.calls * 0.05));
  const latencies = new Float64Array(first);
  let kept = 0;
  for (let call = 0; call < first; call++) {
    const plan = trace.plan(call, 0);
    if (Number.isFinite(plan.latencyMs)) latencies[kept++] = plan.latencyMs;
  }
  return Math.ceil(1.5 * quantileOf(latencies.subarray(0, kept), 0.999));
}

// Degrading: the timeout knob's row.
async function degradingRows(settings: ScenarioSettings): Promise<ScenarioResults> {
  const trace = makeTrace('degrading', { seed: settings.seed, calls: settings.calls });
  const { fixed, pilot } = await replayPair(trace, settings);
  const tunedMs = tunedOnFirstCalls(trace);
  const tuned = await replay(trace, { toolTimeoutMs: tunedMs });
  const label = 'degrading 1× → 4×, 0.1 % hung';
  const cutRatio = tuned.cutOffWouldSucceed === 0 ? 0 : pilot.cutOffWouldSucceed / tuned.cutOffWouldSucceed;
  const mean = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
  const lostStatic = mean(fixed.hungLostMs);
  const lostPilot = mean(pilot.hungLostMs);
  return {
    rows: [
      {
        trace: label,
        measure: `timeouts of calls that would have succeeded (static: ${ms(tunedMs)} tuned on the first 5 %)`,
        static: String(tuned.cutOffWouldSucceed),
        autopilot: String(pilot.cutOffWouldSucceed),
        measured: change(cutRatio),
        target: '≤ −95 %',
        verdict: verdictOf(cutRatio <= 0.05, settings, []),
      },
      {
        trace: label,
        measure: `time lost on a hung attempt (${pilot.hungLostMs.length} hung)`,
        static: ms(lostStatic),
        autopilot: ms(lostPilot),
        measured: `${change(lostPilot / 30_000)} vs 30 s`,
        target: '≤ −80 %',
        verdict: verdictOf(lostPilot <= 0.2 * 30_000, settings, []),
      },
    ],
    figures: [figuresOf(trace, fixed, pilot)],
  };
}

/** The autopilot's window (`toolStats`' default `windowMs`): the unit of the brownout's recovery. */
export const autopilotWindowMs = 300_000;

// Brownout: the retry budget's row.
async function brownoutRows(settings: ScenarioSettings): Promise<ScenarioResults> {
  const trace = makeTrace('brownout', { seed: settings.seed, calls: settings.calls });
  const lastArrival = trace.arrivals[trace.calls - 1] as number;
  const { from, to } = traceParameters.brownout;
  const [startMs, endMs] = [from * lastArrival, to * lastArrival];
  const fixed = await replay(trace, {});
  const samples: PilotSample[] = [];
  const pilot = await replay(trace, {
    ...pilotSetup(settings),
    onSettled: (_call, _outcome, at, view) => {
      if (samples.length > 0 && at - (samples.at(-1)?.at ?? 0) < 1_000) return;
      const snapshot = view.snapshot();
      samples.push({ at, timeoutMs: snapshot?.timeoutMs, balance: snapshot?.retryBudget?.balance });
    },
  });
  settings.log(
    `   brownout: replayed ${trace.calls} calls twice in ${((fixed.wallMs + pilot.wallMs) / 1_000).toFixed(1)} s`,
  );
  const inBrownout = (call: number) => {
    const at = trace.arrivals[call] as number;
    return at >= startMs && at < endMs;
  };
  const perCall = (result: ReplayResult) => {
    let calls = 0;
    let attempts = 0;
    for (let call = 0; call < trace.calls; call++) {
      if (!inBrownout(call)) continue;
      calls++;
      attempts += result.attemptsByCall[call] as number;
    }
    return attempts / calls;
  };
  const recovery = recoveryWindows(samples, startMs, endMs);
  const slowest = Math.max(recovery.timeout, recovery.budget);
  const windows = (count: number) =>
    Number.isFinite(count) ? `${count.toFixed(2)} windows` : 'not recovered';
  const label = 'brownout: 10× slower, 30 % transient failures';
  return {
    rows: [
      {
        trace: label,
        measure: 'attempts per logical call in the brownout',
        static: perCall(fixed).toFixed(2),
        autopilot: perCall(pilot).toFixed(2),
        measured: perCall(pilot).toFixed(2),
        target: '≤ 1.10',
        verdict: verdictOf(perCall(pilot) <= 1.1, settings, []),
      },
      {
        trace: label,
        measure: `recovery after it ends (timeout back within 10 %: ${windows(recovery.timeout)}; retry budget open: ${windows(recovery.budget)})`,
        static: '—',
        autopilot: windows(slowest),
        measured: windows(slowest),
        target: '≤ 2 windows',
        verdict: verdictOf(slowest <= 2, settings, []),
      },
    ],
    figures: [figuresOf(trace, fixed, pilot)],
  };
}

type PilotSample = { at: number; timeoutMs: number | undefined; balance: number | undefined };

// Windows from the brownout's end until `settled` holds and keeps holding for a whole window
// after (a p99.9 of a window's samples strays past 10 % now and then on its own, hours later),
// or Infinity when it never does.
function windowsUntil(
  samples: readonly PilotSample[],
  endMs: number,
  settled: (sample: PilotSample) => boolean,
): number {
  let recoveredAt = Number.NaN;
  for (const sample of samples) {
    if (sample.at < endMs) continue;
    if (!Number.isNaN(recoveredAt) && sample.at - recoveredAt >= autopilotWindowMs) break;
    if (!settled(sample)) recoveredAt = Number.NaN;
    else if (Number.isNaN(recoveredAt)) recoveredAt = sample.at;
  }
  return Number.isNaN(recoveredAt) ? Number.POSITIVE_INFINITY : (recoveredAt - endMs) / autopilotWindowMs;
}

// The autopilot's recovery after the brownout: its timeout back within 10 % of the highest it
// stood in the window before the brownout, and its retry budget holding a token again.
function recoveryWindows(
  samples: readonly PilotSample[],
  startMs: number,
  endMs: number,
): { timeout: number; budget: number } {
  // The highest it stood in the window before the brownout: a p99.9 of a window's samples moves
  // by more than 10 % on its own, and the brownout's end should not be held to a lucky low.
  let before: number | undefined;
  for (const sample of samples) {
    if (sample.at < startMs - autopilotWindowMs || sample.at >= startMs || sample.timeoutMs === undefined)
      continue;
    before = Math.max(before ?? 0, sample.timeoutMs);
  }
  return {
    timeout:
      before === undefined
        ? Number.NaN
        : windowsUntil(
            samples,
            endMs,
            (sample) => sample.timeoutMs !== undefined && sample.timeoutMs <= 1.1 * before,
          ),
    budget: windowsUntil(samples, endMs, (sample) => sample.balance === undefined || sample.balance >= 1),
  };
}

/** The static `max` values the capacity trace's hindsight picks from (8 is today's default). */
export const hindsightMaxes = [2, 4, 8, 16, 32] as const;

interface PhaseFigures {
  readonly p99: number;
  readonly goodput: number;
}

function phasesOf(trace: Trace, result: ReplayResult, switchAtMs: number): [PhaseFigures, PhaseFigures] {
  const inPhase = (phase: 0 | 1) => (call: number) =>
    ((trace.arrivals[call] as number) < switchAtMs ? 0 : 1) === phase;
  const figures = (phase: 0 | 1): PhaseFigures => {
    const include = inPhase(phase);
    let calls = 0;
    let ok = 0;
    for (let call = 0; call < trace.calls; call++) {
      if (!include(call)) continue;
      calls++;
      ok += result.ok[call] as number;
    }
    return { p99: quantileOf(result.latencyMs, 0.99, include), goodput: ok / calls };
  };
  return [figures(0), figures(1)];
}

// Capacity doubles mid-run: the concurrency knob's row, against the best static max per phase.
async function capacityRows(settings: ScenarioSettings): Promise<ScenarioResults> {
  const trace = makeTrace('capacity', { seed: settings.seed, calls: settings.calls });
  const switchAtMs = traceParameters.capacity.switchAt * (trace.arrivals[trace.calls - 1] as number);
  const started = performance.now();
  const statics = new Map<number, ReplayResult>();
  for (const max of hindsightMaxes) statics.set(max, await replay(trace, { concurrencyMax: max }));
  const pilot = await replay(trace, pilotSetup(settings));
  settings.log(
    `   capacity: replayed ${trace.calls} calls ${hindsightMaxes.length + 1} times in ${((performance.now() - started) / 1_000).toFixed(1)} s`,
  );
  const pilotPhases = phasesOf(trace, pilot, switchAtMs);
  const defaults = phasesOf(trace, statics.get(8) as ReplayResult, switchAtMs);
  const rows: AutopilotRow[] = [];
  const label = 'capacity doubles, load 0.5× → 1.5×';
  for (const phase of [0, 1] as const) {
    const name = phase === 0 ? 'before the switch (4 servers)' : 'after the switch (8 servers)';
    let best: { max: number; p99: number } | undefined;
    for (const [max, result] of statics) {
      const figures = phasesOf(trace, result, switchAtMs)[phase];
      if (figures.goodput >= 0.9 && (best === undefined || figures.p99 < best.p99))
        best = { max, p99: figures.p99 };
    }
    const ours = pilotPhases[phase];
    const vsBest = best === undefined ? Number.NaN : ours.p99 / best.p99;
    rows.push(
      {
        trace: label,
        measure: `goodput ${name}`,
        static: `${(defaults[phase].goodput * 100).toFixed(1)} %`,
        autopilot: `${(ours.goodput * 100).toFixed(1)} %`,
        measured: `${(ours.goodput * 100).toFixed(1)} %`,
        target: '≥ 90 %',
        verdict: verdictOf(ours.goodput >= 0.9, settings, ['concurrency']),
      },
      {
        trace: label,
        measure: `p99 ${name}, vs the best static max in hindsight (${best === undefined ? 'none' : `max ${best.max}: ${ms(best.p99)}`})`,
        static: ms(defaults[phase].p99),
        autopilot: ms(ours.p99),
        measured: Number.isFinite(vsBest) ? `${vsBest.toFixed(2)}×` : 'n/a',
        target: '≤ 1.5×',
        verdict: verdictOf(vsBest <= 1.5, settings, ['concurrency']),
      },
    );
  }
  return { rows, figures: [figuresOf(trace, statics.get(8) as ReplayResult, pilot)] };
}
