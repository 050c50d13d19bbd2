// The autopilot bench's replay: the real default stack on the virtual clock, the same numbers on
// every run, and the static defaults doing what the bench says they do.

import { describe, expect, it } from 'vitest';
import { replay } from '../../bench/autopilot/replay.js';
import { makeTrace } from '../../bench/autopilot/traces.js';

describe('replay', () => {
  it('gives the same latencies twice for one seeded trace', async () => {
    const trace = makeTrace('steady', { seed: 3, calls: 400 });
    const first = await replay(trace, { autopilot: { timeout: { minSamples: 50 } } });
    const second = await replay(trace, { autopilot: { timeout: { minSamples: 50 } } });
    expect(Array.from(second.latencyMs)).toEqual(Array.from(first.latencyMs));
    expect(second.attempts).toBe(first.attempts);
  });

  it('loses 30 s on each hung attempt under the static defaults, and retries it', async () => {
    const trace = makeTrace('degrading', { seed: 5, calls: 3_000 });
    const result = await replay(trace, {});
    expect(result.hungLostMs.length).toBeGreaterThan(0);
    for (const lost of result.hungLostMs) expect(lost).toBe(30_000);
    expect(result.attempts).toBe(trace.calls + result.hungLostMs.length);
    expect(result.ok.every((ok) => ok === 1)).toBe(true);
  });

  it('retries the hung attempts the autopilot cuts off, well before 30 s', async () => {
    const trace = makeTrace('degrading', { seed: 5, calls: 3_000 });
    const result = await replay(trace, { autopilot: { timeout: { minSamples: 100 } } });
    const late = result.hungLostMs.filter((lost) => lost >= 30_000);
    // Before minSamples the static 30 s holds; after it, the autopilot's timeout.
    expect(result.hungLostMs.length - late.length).toBeGreaterThan(0);
    expect(result.ok.every((ok) => ok === 1)).toBe(true);
  });
});
