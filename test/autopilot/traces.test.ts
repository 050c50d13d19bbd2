// The bench's traces check themselves: medians, shares and phases as the research specifies,
// and the same plan for the same seed, call and attempt.

import { describe, expect, it } from 'vitest';
import { makeTrace, type Trace, traceParameters } from '../../bench/autopilot/traces.js';

const calls = 40_000;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function firstAttempts(trace: Trace, from = 0, to = trace.calls) {
  return Array.from({ length: to - from }, (_, index) => trace.plan(from + index, 0));
}

describe('the autopilot traces', () => {
  it('steady: a 200 ms median and 3 % stragglers at 10–50×', () => {
    const plans = firstAttempts(makeTrace('steady', { seed: 3, calls }));
    const stragglers = plans.filter((plan) => plan.straggler);
    expect(stragglers.length / calls).toBeCloseTo(0.03, 2);
    expect(median(plans.filter((plan) => !plan.straggler).map((plan) => plan.latencyMs)) / 200).toBeCloseTo(
      1,
      1,
    );
    // ×U(10, 50) over the lognormal: their median sits near 30 × 200 ms.
    expect(median(stragglers.map((plan) => plan.latencyMs)) / 6_000).toBeCloseTo(1, 0);
    expect(plans.every((plan) => !plan.fails)).toBe(true);
  });

  it('bimodal: 20 % on the 8× path and 1 % stragglers', () => {
    const plans = firstAttempts(makeTrace('bimodal', { seed: 4, calls }));
    const slow = plans.filter((plan) => !plan.straggler && plan.latencyMs > 200 * 2.8);
    expect(plans.filter((plan) => plan.straggler).length / calls).toBeCloseTo(0.01, 2);
    // 2.8× the median splits the paths: lognormal σ 0.4 passes it 0.5 % of the time.
    expect(slow.length / calls).toBeGreaterThan(0.19);
    expect(slow.length / calls).toBeLessThan(0.21);
    expect(median(slow.map((plan) => plan.latencyMs)) / 1_600).toBeCloseTo(1, 1);
  });

  it('degrading: the median drifts from 1× to 4×, with 0.5 % tails and hung calls', () => {
    const trace = makeTrace('degrading', { seed: 5, calls });
    const early = firstAttempts(trace, 0, calls / 20).filter((plan) => !plan.straggler);
    const late = firstAttempts(trace, calls - calls / 20).filter((plan) => !plan.straggler);
    expect(median(early.map((plan) => plan.latencyMs)) / 200).toBeCloseTo(1.075, 1);
    expect(median(late.map((plan) => plan.latencyMs)) / 800).toBeCloseTo(0.98, 1);
    const plans = firstAttempts(trace);
    const hung = plans.filter((plan) => plan.latencyMs === Infinity).length / calls;
    const { tailShare, hungShare } = traceParameters.degrading;
    expect(hung).toBeCloseTo(hungShare, 3);
    expect(plans.filter((plan) => plan.straggler).length / calls).toBeCloseTo(tailShare + hungShare, 2);
  });

  it('brownout: 10× slower and 30 % failing inside its phase, healthy outside', () => {
    const trace = makeTrace('brownout', { seed: 6, calls });
    const last = trace.arrivals[calls - 1] as number;
    const inside: number[] = [];
    const outside: number[] = [];
    let failedInside = 0;
    for (let call = 0; call < calls; call++) {
      const progress = (trace.arrivals[call] as number) / last;
      const plan = trace.plan(call, 0);
      if (progress >= 0.4 && progress < 0.6) {
        inside.push(plan.latencyMs);
        if (plan.fails) failedInside++;
      } else {
        outside.push(plan.latencyMs);
        expect(plan.fails).toBe(false);
      }
    }
    expect(failedInside / inside.length).toBeCloseTo(0.3, 1);
    expect(median(inside) / median(outside)).toBeCloseTo(10, 0);
  });

  it('capacity: load ramps from 0.5× to 1.5× of four servers, and the pool doubles halfway', () => {
    const trace = makeTrace('capacity', { seed: 7, calls });
    const arrivals = trace.arrivals;
    const end = arrivals[calls - 1] as number;
    const capacityPerMs = 4 / (200 * Math.exp(0.08));
    // The load is linear in time: 0.55× on average over the first tenth of the run, 1.45× over the last.
    const arrivedBy = (at: number) => arrivals.filter((arrival) => arrival < at).length;
    expect(arrivedBy(end * 0.1) / (capacityPerMs * end * 0.1)).toBeCloseTo(0.55, 1);
    expect((calls - arrivedBy(end * 0.9)) / (capacityPerMs * end * 0.1)).toBeCloseTo(1.45, 1);
    expect(trace.servers?.(0)).toBe(4);
    expect(trace.servers?.(end * 0.49)).toBe(4);
    expect(trace.servers?.(end * 0.51)).toBe(8);
  });

  it('replays the same plans for the same seed, whatever order they are asked in', () => {
    const first = makeTrace('steady', { seed: 9, calls: 1_000 });
    const second = makeTrace('steady', { seed: 9, calls: 1_000 });
    const forward = Array.from({ length: 1_000 }, (_, call) => first.plan(call, 0));
    const backward = Array.from({ length: 1_000 }, (_, index) => second.plan(999 - index, 0)).reverse();
    expect(backward).toEqual(forward);
    expect(second.arrivals).toEqual(first.arrivals);
    expect(first.plan(5, 1)).not.toEqual(first.plan(5, 0));
    expect(makeTrace('steady', { seed: 10, calls: 1_000 }).plan(0, 0)).not.toEqual(forward[0]);
  });

  it('arrives at the asked rate', () => {
    const trace = makeTrace('steady', { seed: 11, calls: 20_000, ratePerSecond: 50 });
    expect((20_000 * 1_000) / (trace.arrivals[19_999] as number) / 50).toBeCloseTo(1, 1);
  });
});
