// The latency sketch: DDSketch's ±1 % against exact quantiles, merging, and its bound.

import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../bench/autopilot/random.js';
import { LatencySketch } from '../../middleware/autopilot/latency-sketch.js';

const qs = [0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 1];
// The guarantee is α; the logarithm's rounding adds a few ulps at a bucket's edge.
const tolerance = 0.01 * (1 + 1e-9);

/** The exact value at DDSketch's rank for each quantile: sorted[floor(q × (n − 1))]. */
function exactQuantiles(values: readonly number[], quantiles: readonly number[]): number[] {
  const sorted = [...values].sort((a, b) => a - b);
  return quantiles.map((q) => sorted[Math.floor(q * (sorted.length - 1))] as number);
}

function relativeErrors(values: readonly number[], sketch: LatencySketch): number[] {
  const exact = exactQuantiles(values, qs);
  return sketch.quantiles(qs).map((value, index) => Math.abs(value - exact[index]!) / exact[index]!);
}

function lognormal(seed: number, count: number): number[] {
  const random = seededRandom(seed);
  return Array.from({ length: count }, () => 200 * Math.exp(0.4 * random.normal()));
}

function bimodalWithStragglers(seed: number, count: number): number[] {
  const random = seededRandom(seed);
  return Array.from({ length: count }, () => {
    const slowPath = random.chance(0.2) ? 8 : 1;
    const straggler = random.chance(0.01) ? random.uniform(10, 50) : 1;
    return 200 * Math.exp(0.4 * random.normal()) * slowPath * straggler;
  });
}

function sketchOf(values: readonly number[], maxBins?: number): LatencySketch {
  const sketch = new LatencySketch(maxBins === undefined ? {} : { maxBins });
  for (const value of values) sketch.add(value);
  return sketch;
}

describe('LatencySketch', () => {
  it('reads every quantile of lognormal latencies within 1 % of the exact value', () => {
    const values = lognormal(1, 100_000);
    for (const error of relativeErrors(values, sketchOf(values)))
      expect(error).toBeLessThanOrEqual(tolerance);
  });

  it('reads every quantile of a bimodal mix with stragglers within 1 %', () => {
    const values = bimodalWithStragglers(2, 100_000);
    for (const error of relativeErrors(values, sketchOf(values)))
      expect(error).toBeLessThanOrEqual(tolerance);
  });

  it('stays within 1 % over many seeds and small counts', () => {
    for (let seed = 10; seed < 40; seed++) {
      const values = bimodalWithStragglers(seed, 50 + seed * 37);
      for (const error of relativeErrors(values, sketchOf(values)))
        expect(error).toBeLessThanOrEqual(tolerance);
    }
  });

  it('merges two sketches into exactly the sketch of all their values', () => {
    const values = bimodalWithStragglers(3, 20_000);
    const first = sketchOf(values.slice(0, 7_000));
    const second = sketchOf(values.slice(7_000));
    first.merge(second);
    expect(first.count).toBe(values.length);
    expect(first.quantiles(qs)).toEqual(sketchOf(values).quantiles(qs));
  });

  it('merges an empty sketch, and into one, without changing a quantile', () => {
    const values = lognormal(4, 1_000);
    const empty = new LatencySketch();
    empty.merge(sketchOf(values));
    expect(empty.quantiles(qs)).toEqual(sketchOf(values).quantiles(qs));
    const full = sketchOf(values);
    full.merge(new LatencySketch());
    expect(full.quantiles(qs)).toEqual(sketchOf(values).quantiles(qs));
  });

  it('refuses to merge a sketch of another relative accuracy', () => {
    expect(() => new LatencySketch().merge(new LatencySketch({ relativeAccuracy: 0.02 }))).toThrow(
      /cannot merge a sketch of relative accuracy 0.02 into one of 0.01/,
    );
  });

  it('comes back from its plain data with the same quantiles', () => {
    const values = bimodalWithStragglers(5, 5_000);
    const sketch = sketchOf(values);
    const data = JSON.parse(JSON.stringify(sketch.toData()));
    expect(LatencySketch.from(data).quantiles(qs)).toEqual(sketch.quantiles(qs));
    expect(LatencySketch.from(data).count).toBe(values.length);
  });

  it('keeps at most maxBins buckets, folding the lowest, and the high quantiles exact', () => {
    const random = seededRandom(6);
    // Twelve decades of values: far past what 64 buckets at 1 % can hold (1.02^64 ≈ 3.6×).
    const values = Array.from({ length: 20_000 }, () => 10 ** random.uniform(-2, 10));
    const sketch = sketchOf(values, 64);
    expect(sketch.toData().counts.length).toBeLessThanOrEqual(64);
    expect(sketch.count).toBe(values.length);
    const high = [0.999, 1];
    const exact = exactQuantiles(values, high);
    sketch.quantiles(high).forEach((value, index) => {
      expect(Math.abs(value - exact[index]!) / exact[index]!).toBeLessThanOrEqual(tolerance);
    });
    // A folded quantile reads the lowest bucket kept: too high, never too low.
    expect(sketch.quantile(0.5)).toBeGreaterThan(exactQuantiles(values, [0.5])[0]!);
  });

  it('keeps latencies that climb past the cap folding, not failing', () => {
    const sketch = new LatencySketch({ maxBins: 32 });
    for (let value = 1; value < 1e6; value *= 1.01) sketch.add(value);
    expect(sketch.toData().counts.length).toBeLessThanOrEqual(32);
    expect(Math.abs(sketch.quantile(1) / 1e6 - 1)).toBeLessThan(0.02);
  });

  it('counts zero and negative latencies as zero, and ignores NaN', () => {
    const sketch = new LatencySketch();
    for (const value of [0, -5, 0, 100, 200, Number.NaN]) sketch.add(value);
    expect(sketch.count).toBe(5);
    expect(sketch.quantile(0)).toBe(0);
    expect(sketch.quantile(0.5)).toBe(0);
    expect(sketch.quantile(1)).toBeCloseTo(200, -1);
  });

  it('reads NaN when empty', () => {
    expect(new LatencySketch().quantiles([0.5, 0.99])).toEqual([Number.NaN, Number.NaN]);
  });
});
