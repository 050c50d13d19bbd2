// A tool's sliding window: sub-windows turning on time and on calls, the totals equal to the
// live sub-windows, and the outcome mix.

import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../bench/autopilot/random.js';
import { LatencySketch } from '../../middleware/autopilot/latency-sketch.js';
import { WindowedSketch, type WindowShape } from '../../middleware/autopilot/windowed-sketch.js';

const shape: WindowShape = {
  relativeAccuracy: 0.01,
  maxBins: 576,
  windowMs: 10_000,
  subWindows: 10,
  maxCalls: Infinity,
};
const qs = [0, 0.5, 0.9, 0.99, 0.999, 1];

describe('WindowedSketch', () => {
  it('drops a sub-window once the window has turned past it', () => {
    const window = new WindowedSketch(shape, 0);
    for (let i = 0; i < 100; i++) window.record('success', 100, 500);
    for (let i = 0; i < 100; i++) window.record('success', 1_000, 5_500);
    expect(window.samples(9_999)).toBe(200);
    // The first sub-window, [0, 1 000), leaves at 10 000.
    expect(window.samples(10_000)).toBe(100);
    expect(window.quantiles([0, 1], 10_000)[0]).toBeCloseTo(1_000, -1);
    expect(window.samples(15_000)).toBe(0);
    expect(window.quantiles([0.5], 15_000)).toEqual([Number.NaN]);
  });

  it('holds exactly the values of its live sub-windows, as one sketch of them would', () => {
    const random = seededRandom(7);
    const window = new WindowedSketch(shape, 0);
    const recorded: Array<{ at: number; value: number }> = [];
    for (let at = 0; at < 60_000; at += 7) {
      const value =
        200 * Math.exp(0.4 * random.normal()) * (random.chance(0.03) ? random.uniform(10, 50) : 1);
      window.record('success', value, at);
      recorded.push({ at, value });
      if (at % 3_500 !== 0) continue;
      // Sub-windows are 1 000 ms, aligned on 0: the window holds the current one and the nine before.
      const oldest = (Math.floor(at / 1_000) - 9) * 1_000;
      const live = new LatencySketch();
      for (const entry of recorded) if (entry.at >= oldest) live.add(entry.value);
      expect(window.samples(at)).toBe(live.count);
      expect(window.quantiles(qs, at)).toEqual(live.quantiles(qs));
    }
  });

  it('keeps only about the last maxCalls calls', () => {
    const window = new WindowedSketch({ ...shape, maxCalls: 100 }, 0);
    for (let i = 0; i < 1_000; i++) window.record('success', 100, 0);
    for (let i = 0; i < 100; i++) window.record('success', 500, 0);
    expect(window.samples(0)).toBeLessThanOrEqual(100);
    expect(window.quantiles([0], 0)[0]).toBeCloseTo(500, -1);
  });

  it('turns a sub-window before its 16-bit counts could overflow', () => {
    const window = new WindowedSketch(shape, 0);
    for (let i = 0; i < 70_000; i++) window.record('success', 250, 0);
    expect(window.samples(0)).toBe(70_000);
    expect(window.outcomes(0).success).toBe(70_000);
    expect(window.quantiles([0.5], 0)[0]).toBeCloseTo(250, -1);
  });

  it('counts the outcome mix per class and forgets it with its sub-window', () => {
    const window = new WindowedSketch(shape, 0);
    window.record('success', 120, 0);
    window.record('timeout', undefined, 100);
    window.record('transient', 40, 200);
    window.record('other', undefined, 300);
    window.record('transient', undefined, 2_000);
    expect(window.outcomes(2_000)).toEqual({ success: 1, timeout: 1, transient: 2, other: 1 });
    // A failure's latency is not a success's: only the one success is in the sketch.
    expect(window.samples(2_000)).toBe(1);
    expect(window.outcomes(10_500)).toEqual({ success: 0, timeout: 0, transient: 1, other: 0 });
  });

  it('forgets everything after an idle gap longer than the window', () => {
    const window = new WindowedSketch(shape, 0);
    window.record('success', 100, 0);
    const generation = window.generation;
    expect(window.samples(1_000_000)).toBe(0);
    expect(window.generation).toBeGreaterThan(generation);
    window.record('success', 300, 1_000_000);
    expect(window.quantiles([0.5], 1_000_000)[0]).toBeCloseTo(300, -1);
  });

  it('keeps its counts within maxBins × (2 × subWindows + 4) bytes plus its tallies', () => {
    const window = new WindowedSketch(shape, 0);
    const random = seededRandom(8);
    for (let at = 0; at < 20_000; at += 1) window.record('success', 10 ** random.uniform(-2, 9), at);
    const bound = shape.maxBins * (2 * shape.subWindows + 4) + (shape.subWindows + 1) * 6 * 4;
    expect(window.byteLength).toBe(bound);
  });

  it('reads its window as one mergeable sketch', () => {
    const window = new WindowedSketch(shape, 0);
    const sketch = new LatencySketch();
    for (const value of [90, 110, 130, 5_000]) {
      window.record('success', value, 10);
      sketch.add(value);
    }
    expect(window.toSketch(10).quantiles(qs)).toEqual(sketch.quantiles(qs));
  });
});
