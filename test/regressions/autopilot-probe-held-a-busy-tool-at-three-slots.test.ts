// Regression (issue 34, found by the autopilot bench): the concurrency knob probed each tool's
// minimum round trip the way Envoy does, holding the tool at 3 slots until 50 calls answered,
// every minute. A tool with five or more calls in flight (25 calls a second at 200 ms) queued
// behind those 3 slots for every probe, the longer for its stragglers holding slots for seconds:
// the capacity trace's p99 came out 3.2× the best static limit, and this trace's 2.0× the static
// stack's. The autopilot's probes now lower nothing: they measure on calls that ended with at
// most 3 in flight, and until the first has them the best window stands for the minimum.

import { describe, expect, it } from 'vitest';
import { quantileOf, replay } from '../../bench/autopilot/replay.js';
import { makeTrace } from '../../bench/autopilot/traces.js';

describe('the concurrency knob on a busy tool', () => {
  it('costs its p99 nothing while it probes the minimum round trip, minute after minute', async () => {
    // Five minutes at 25 calls a second: four or five probes fall due.
    const trace = makeTrace('steady', { seed: 34, calls: 7_500, ratePerSecond: 25 });
    const knobs = { timeout: false, hedge: false, retryBudget: false } as const;
    const limits: number[] = [];
    const adaptive = await replay(trace, {
      autopilot: { ...knobs, concurrency: { min: 1, max: 64 } },
      concurrencyMax: 64,
      onSettled: (_call, _outcome, _at, pilot) => {
        const limit = pilot.snapshot()?.concurrency;
        if (limit !== undefined) limits.push(limit);
      },
    });
    const fixed = await replay(trace, { autopilot: { ...knobs, concurrency: false }, concurrencyMax: 64 });
    expect(Math.min(...limits)).toBeGreaterThan(3);
    expect(quantileOf(adaptive.latencyMs, 0.99)).toBeLessThanOrEqual(1.1 * quantileOf(fixed.latencyMs, 0.99));
  });
});
