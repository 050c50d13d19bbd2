// A fleet's latency windows: with an `exchange` (an AutopilotStore's `exchangeSketch`), a tool's
// successes go to the fleet at most every `exchangeEveryMs`, and its quantiles and samples are
// the fleet's window as last answered; a failing exchange leaves the tool on its own window.

import { describe, expect, it } from 'vitest';
import { LatencySketch, type LatencySketchData } from '../../middleware/autopilot/latency-sketch.js';
import { toolStats } from '../../middleware/autopilot/tool-stats.js';

function manualTime(start = 1_000_000) {
  let now = start;
  return {
    clock: { now: () => now },
    advance(ms: number) {
      now += ms;
    },
  };
}

// A fleet window kept in this test: every delta merged in, the merge answered (no expiry).
function sharedWindow() {
  const merged = new LatencySketch();
  const calls: string[] = [];
  return {
    calls,
    exchange: async (tool: string, delta: LatencySketchData) => {
      calls.push(tool);
      merged.merge(LatencySketch.from(delta));
      return merged.toData();
    },
  };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('toolStats with a fleet exchange', () => {
  it("tunes every process on the fleet's calls, one exchange per tool per interval", async () => {
    const time = manualTime();
    const fleet = sharedWindow();
    const a = toolStats({ clock: time.clock, exchange: fleet.exchange });
    const b = toolStats({ clock: time.clock, exchange: fleet.exchange });
    for (let i = 0; i < 100; i++) a.record('search', 'success', 100);
    for (let i = 0; i < 100; i++) b.record('search', 'success', 400);
    await settle();
    // Each sent its first success at once, then held the rest for the interval.
    expect(fleet.calls).toEqual(['search', 'search']);
    time.advance(1_000);
    a.record('search', 'success', 100);
    await settle();
    b.record('search', 'success', 400);
    await settle();
    expect(fleet.calls).toHaveLength(4);
    // b exchanged last: it sees every call; a sees the window as it last answered, b's held
    // calls not in yet, until its next exchange.
    expect(b.summary('search', true)).toMatchObject({ samples: 202 });
    expect(b.samples('search')).toBe(202);
    expect(a.summary('search', true)).toMatchObject({ samples: 102 });
    time.advance(1_000);
    a.record('search', 'success', 100);
    await settle();
    const summary = a.summary('search', true);
    expect(summary?.samples).toBe(203);
    expect(summary?.p50).toBeGreaterThan(95);
    expect(summary?.p95).toBeGreaterThan(390);
    // Alone, each would see only its own.
    expect(toolStats({ clock: time.clock }).summary('search')).toBeUndefined();
  });

  it('falls back to its own window when the exchange fails', async () => {
    const time = manualTime();
    let up = true;
    const fleet = sharedWindow();
    const stats = toolStats({
      clock: time.clock,
      exchange: (tool, delta) => (up ? fleet.exchange(tool, delta) : Promise.reject(new Error('redis down'))),
    });
    const other = toolStats({ clock: time.clock, exchange: fleet.exchange });
    for (let i = 0; i < 50; i++) other.record('search', 'success', 900);
    await settle();
    stats.record('search', 'success', 100);
    await settle();
    expect(stats.summary('search', true)?.samples).toBe(2);
    up = false;
    time.advance(1_000);
    stats.record('search', 'success', 100);
    await settle();
    expect(stats.summary('search', true)).toMatchObject({ samples: 2 });
    expect(stats.summary('search', true)?.p99).toBeLessThan(110);
  });

  it('rejects a bad exchange or interval', () => {
    expect(() => toolStats({ exchange: 'x' as never })).toThrow(/exchange must be a function/);
    expect(() => toolStats({ exchangeEveryMs: -1 })).toThrow(/exchangeEveryMs must be a finite number >= 0/);
  });
});
