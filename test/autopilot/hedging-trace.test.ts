// Hedging on the bench's steady straggler trace, through the real default stack on the virtual
// clock: waiting for the live p95 cuts most of the p99, and the budget, not the share of slow
// calls, bounds the extra tool calls.

import { describe, expect, it } from 'vitest';
import { quantileOf, replay } from '../../bench/autopilot/replay.js';
import { makeTrace } from '../../bench/autopilot/traces.js';
import type { AutopilotOptions } from '../../index.js';

// The autopilot with hedging alone, at `quantile` and a 5 % budget.
function hedgingOnly(quantile: number): AutopilotOptions {
  return {
    timeout: false,
    retryBudget: false,
    concurrency: false,
    hedge: { quantile, maxExtraLoad: 0.05, minSamples: 200 },
  };
}

describe('autopilot: hedging on the steady straggler trace', () => {
  it('cuts the p99 by most of it at the live p95, for at most maxExtraLoad more tool calls', async () => {
    const calls = 10_000;
    const trace = makeTrace('steady', { seed: 34, calls });
    const fixed = await replay(trace, {});
    const hedged = await replay(trace, { autopilot: hedgingOnly(0.95) });
    expect(hedged.ok.every((ok) => ok === 1)).toBe(true);
    // The Tail at Scale's shape: p99 −80 % or better for ≤ 5 % more calls (plus the bucket's cap).
    expect(quantileOf(hedged.latencyMs, 0.99)).toBeLessThan(0.2 * quantileOf(fixed.latencyMs, 0.99));
    const extra = hedged.attempts - fixed.attempts;
    expect(extra).toBeLessThanOrEqual(0.05 * calls + 10);
    expect(extra).toBeGreaterThan(0.03 * calls);
  });

  it('holds hedges to maxExtraLoad of calls when half the calls outlive the hedge delay', async () => {
    const calls = 5_000;
    const trace = makeTrace('steady', { seed: 34, calls });
    const hedged = await replay(trace, { autopilot: hedgingOnly(0.5) });
    // One call in two would take a hedge: the budget, not the demand, sets how many start.
    const extra = hedged.attempts - calls;
    expect(extra).toBeLessThanOrEqual(0.05 * calls + 10);
    expect(extra).toBeGreaterThan(0.04 * calls);
  });
});
