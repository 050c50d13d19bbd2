/**
 * The five seeded traces of issue 34's bench (shared/research/autopilot.md §3): when each call
 * arrives, and what each attempt of it does. Every attempt draws from a stream of its own
 * (`mixSeeds(seed, call, attempt)`), so two policies replay the same trace call for call.
 * @module
 */

import { mixSeeds, type Random, seededRandom } from './random.js';

/** The traces, by name. */
export type TraceName = 'steady' | 'bimodal' | 'degrading' | 'brownout' | 'capacity';

/** What one attempt of a call does. */
export interface AttemptPlan {
  /**
   * How long the attempt takes, in virtual milliseconds: until it answers or fails (`Infinity`:
   * it hangs until aborted). On the `capacity` trace, the server's service time alone (the pool
   * adds its queue).
   */
  readonly latencyMs: number;
  /** Whether it ends in a transient failure rather than a result. */
  readonly fails: boolean;
  /** Whether it is a straggler (or a tail of the degrading trace): for checking the trace. */
  readonly straggler: boolean;
}

/** A trace: arrivals and attempt plans, fixed by its seed. */
export interface Trace {
  /** Which trace. */
  readonly name: TraceName;
  /** Logical calls in the trace. */
  readonly calls: number;
  /** When each call arrives, in virtual milliseconds from the start (ascending). */
  readonly arrivals: Float64Array;
  /** What attempt `attempt` (0 for the first) of call `call` does; the same every time it is asked. */
  plan(call: number, attempt: number): AttemptPlan;
  /** The `capacity` trace's server pool size at a virtual time; absent on the others. */
  readonly servers?: (atMs: number) => number;
}

/** Options for `makeTrace`. */
export interface TraceOptions {
  /** The seed: the same seed, the same trace. @default 1 */
  seed?: number;
  /** Logical calls. @default 200_000 */
  calls?: number;
  /** Mean arrivals per second of virtual time (Poisson); the `capacity` trace ramps its own. @default 5 */
  ratePerSecond?: number;
}

/** The parameters behind the traces (research §3), for the bench's report and the self-test. */
export const traceParameters = {
  /** Every attempt: `medianMs × exp(sigma × N(0, 1))`. */
  base: { medianMs: 200, sigma: 0.4 },
  steady: { stragglerShare: 0.03, stragglerFactor: [10, 50] },
  bimodal: { slowShare: 0.2, slowFactor: 8, stragglerShare: 0.01, stragglerFactor: [10, 50] },
  /** The median drifts linearly over the run; `hungShare` of attempts never answer (the 30 s cap's cost). */
  degrading: { driftFrom: 1, driftTo: 4, tailShare: 0.005, tailFactor: [3, 6], hungShare: 0.001 },
  /** Between `from` and `to` of the run's time, every attempt is `slowdown`× slower and fails with `failShare`. */
  brownout: { from: 0.4, to: 0.6, slowdown: 10, failShare: 0.3 },
  /**
   * A pool of `serversFrom` servers, `serversTo` from `switchAt` of the run's time on; offered
   * load ramps linearly from `loadFrom` to `loadTo` times the first pool's capacity
   * (`serversFrom / mean service time`); a server queue past `queueLimit` refuses at once.
   */
  capacity: { serversFrom: 4, serversTo: 8, switchAt: 0.5, loadFrom: 0.5, loadTo: 1.5, queueLimit: 64 },
} as const;

const base = traceParameters.base;

function baseLatency(random: Random): number {
  return base.medianMs * Math.exp(base.sigma * random.normal());
}

// The mean of base.medianMs × exp(sigma × N): the lognormal's exp(sigma² / 2).
const meanServiceMs = base.medianMs * Math.exp((base.sigma * base.sigma) / 2);

function poissonArrivals(random: Random, calls: number, ratePerSecond: number): Float64Array {
  const arrivals = new Float64Array(calls);
  let at = 0;
  for (let call = 0; call < calls; call++) {
    at += random.exponential(1_000 / ratePerSecond);
    arrivals[call] = at;
  }
  return arrivals;
}

// A Poisson process whose rate ramps linearly in time from `from` to `to` per second, ending with
// the last of `calls` arrivals: unit-rate Poisson points mapped through the inverse of the
// cumulative rate Λ(t) = a·t + b·t²/2 (exact, not an approximation by steps).
function rampingArrivals(random: Random, calls: number, from: number, to: number): Float64Array {
  const arrivals = new Float64Array(calls);
  // Λ(T) = calls at the end T, with a = from / 1000 and b = (to − from) / 1000 / T per ms.
  const a = from / 1_000;
  const durationMs = calls / (((from + to) / 2) * 0.001);
  const b = (to - from) / 1_000 / durationMs;
  let points = 0;
  for (let call = 0; call < calls; call++) {
    points += random.exponential(1);
    arrivals[call] = b === 0 ? points / a : (-a + Math.sqrt(a * a + 2 * b * points)) / b;
  }
  return arrivals;
}

function steadyPlan(random: Random): AttemptPlan {
  const p = traceParameters.steady;
  const straggler = random.chance(p.stragglerShare);
  const factor = straggler ? random.uniform(p.stragglerFactor[0], p.stragglerFactor[1]) : 1;
  return { latencyMs: baseLatency(random) * factor, fails: false, straggler };
}

function bimodalPlan(random: Random): AttemptPlan {
  const p = traceParameters.bimodal;
  const slow = random.chance(p.slowShare) ? p.slowFactor : 1;
  const straggler = random.chance(p.stragglerShare);
  const factor = straggler ? random.uniform(p.stragglerFactor[0], p.stragglerFactor[1]) : 1;
  return { latencyMs: baseLatency(random) * slow * factor, fails: false, straggler };
}

function degradingPlan(random: Random, progress: number): AttemptPlan {
  const p = traceParameters.degrading;
  const drift = p.driftFrom + (p.driftTo - p.driftFrom) * progress;
  if (random.chance(p.hungShare)) return { latencyMs: Infinity, fails: false, straggler: true };
  const tail = random.chance(p.tailShare);
  const factor = tail ? random.uniform(p.tailFactor[0], p.tailFactor[1]) : 1;
  return { latencyMs: baseLatency(random) * drift * factor, fails: false, straggler: tail };
}

function brownoutPlan(random: Random, progress: number): AttemptPlan {
  const p = traceParameters.brownout;
  if (progress < p.from || progress >= p.to)
    return { latencyMs: baseLatency(random), fails: false, straggler: false };
  return { latencyMs: baseLatency(random) * p.slowdown, fails: random.chance(p.failShare), straggler: false };
}

/**
 * Makes one of the five traces, seeded. Progress through a run (the drift, the brownout, the
 * pool's switch) is measured on the calls' arrival times, so a retry in the brownout is in it too.
 *
 * @example
 * const trace = makeTrace('steady', { seed: 7, calls: 200_000 });
 * trace.plan(0, 0); // { latencyMs: 187.3, fails: false, straggler: false }
 */
export function makeTrace(name: TraceName, options: TraceOptions = {}): Trace {
  const seed = options.seed ?? 1;
  const calls = options.calls ?? 200_000;
  const arrivalRandom = seededRandom(mixSeeds(seed, 0x61727276));
  const attemptRandom = (call: number, attempt: number) => seededRandom(mixSeeds(seed, call, attempt));
  if (name === 'capacity') {
    const p = traceParameters.capacity;
    const capacityPerSecond = (p.serversFrom * 1_000) / meanServiceMs;
    const arrivals = rampingArrivals(
      arrivalRandom,
      calls,
      p.loadFrom * capacityPerSecond,
      p.loadTo * capacityPerSecond,
    );
    const switchAtMs = (arrivals[calls - 1] ?? 0) * p.switchAt;
    return {
      name,
      calls,
      arrivals,
      plan: (call, attempt) => ({
        latencyMs: baseLatency(attemptRandom(call, attempt)),
        fails: false,
        straggler: false,
      }),
      servers: (atMs) => (atMs < switchAtMs ? p.serversFrom : p.serversTo),
    };
  }
  const arrivals = poissonArrivals(arrivalRandom, calls, options.ratePerSecond ?? 5);
  const lastArrival = arrivals[calls - 1] ?? 1;
  const progressOf = (call: number) => (arrivals[call] ?? 0) / lastArrival;
  const plans: Record<Exclude<TraceName, 'capacity'>, (call: number, random: Random) => AttemptPlan> = {
    steady: (_call, random) => steadyPlan(random),
    bimodal: (_call, random) => bimodalPlan(random),
    degrading: (call, random) => degradingPlan(random, progressOf(call)),
    brownout: (call, random) => brownoutPlan(random, progressOf(call)),
  };
  const planOf = plans[name];
  return { name, calls, arrivals, plan: (call, attempt) => planOf(call, attemptRandom(call, attempt)) };
}
