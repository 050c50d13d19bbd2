/**
 * A mergeable quantile sketch of latencies with a bounded relative error (DDSketch: logarithmic
 * buckets, a dense store that folds its lowest buckets past a cap), and its plain-data form.
 * @module
 */

import { BinMatrix, LogMapping, quantilesOfTotals } from './bins.js';

/** Values at or below this many milliseconds count as zero (a call answered within a microsecond). */
export const zeroLatencyMs = 1e-3;

/** The most buckets a sketch keeps by default: a 100 000× spread of values at 1 %. */
export const defaultMaxBins = 576;

/** A sketch as plain data: what crosses a process (a fleet store) and comes back to `LatencySketch.from`. */
export interface LatencySketchData {
  /** The relative accuracy the sketch was made with; sketches merge only with the same one. */
  readonly relativeAccuracy: number;
  /** The bucket key of `counts[0]`. */
  readonly offset: number;
  /** Counts of consecutive buckets from `offset`. */
  readonly counts: readonly number[];
  /** Values at or below `zeroLatencyMs`. */
  readonly zeros: number;
}

/** Options for `new LatencySketch`. */
export interface LatencySketchOptions {
  /** The largest relative error of a quantile read back, within the kept range. @default 0.01 */
  relativeAccuracy?: number;
  /**
   * The most buckets kept; past it, the lowest fold into one. 576 buckets at 1 % span a 100 000×
   * range of values (1 ms to 100 s, say) exactly. @default 576
   */
  maxBins?: number;
}

/**
 * A DDSketch of latencies in milliseconds: `add` in O(1), `quantile` within `relativeAccuracy` of
 * the exact value at rank `q × (count − 1)` (while the values span fewer than `maxBins` buckets;
 * below the kept range they read as its lowest bucket), `merge` exact, memory at most `maxBins`
 * counts of 4 bytes. Counts are 32-bit: a bucket holds up to 4 294 967 295 values.
 *
 * @example
 * const sketch = new LatencySketch();
 * for (const ms of [120, 95, 130, 2_400]) sketch.add(ms);
 * sketch.quantile(0.5); // ≈ 120, within 1 %
 */
export class LatencySketch {
  /** The mapping from values to buckets. */
  readonly mapping: LogMapping;
  readonly #bins: BinMatrix;
  #zeros = 0;
  #count = 0;

  constructor(options: LatencySketchOptions = {}) {
    this.mapping = new LogMapping(options.relativeAccuracy ?? 0.01);
    this.#bins = new BinMatrix(0, options.maxBins ?? defaultMaxBins);
  }

  /** Rebuilds a sketch from its plain data (`toData`). */
  static from(data: LatencySketchData, options: Pick<LatencySketchOptions, 'maxBins'> = {}): LatencySketch {
    const sketch = new LatencySketch({ ...options, relativeAccuracy: data.relativeAccuracy });
    sketch.#zeros = data.zeros;
    sketch.#count = data.zeros;
    data.counts.forEach((count, index) => {
      if (count > 0) sketch.#addKey(data.offset + index, count);
    });
    return sketch;
  }

  /** Values added (or merged in). */
  get count(): number {
    return this.#count;
  }

  /** Adds one value in milliseconds (negative values count as zero; NaN is ignored). */
  add(valueMs: number, weight = 1): void {
    if (Number.isNaN(valueMs)) return;
    if (valueMs <= zeroLatencyMs) {
      this.#zeros += weight;
      this.#count += weight;
      return;
    }
    this.#addKey(this.mapping.key(valueMs), weight);
  }

  /** Adds every value of `other` (made with the same relative accuracy). */
  merge(other: LatencySketch): void {
    if (other.mapping.gamma !== this.mapping.gamma) {
      throw new TypeError(
        `cannot merge a sketch of relative accuracy ${other.mapping.relativeAccuracy} into one of ${this.mapping.relativeAccuracy}`,
      );
    }
    this.#zeros += other.#zeros;
    this.#count += other.#zeros;
    const bins = other.#bins;
    // From the highest bucket down, so folding (if any) happens once, at the bottom.
    for (let column = bins.width - 1; column >= 0; column--) {
      const count = bins.totals[column] as number;
      if (count > 0) this.#addKey(bins.offset + column, count);
    }
  }

  /** The value at quantile `q` in [0, 1], or NaN when empty. */
  quantile(q: number): number {
    const [value] = this.quantiles([q]);
    return value as number;
  }

  /** The values at each of `qs` (each in [0, 1]), in one pass; NaN each when empty. */
  quantiles(qs: readonly number[]): number[] {
    return quantilesOfTotals(this.#bins, this.mapping, this.#zeros, this.#count, qs);
  }

  /** The sketch as plain data, for a store or the wire. */
  toData(): LatencySketchData {
    const range = this.#bins.occupied();
    const counts =
      range === undefined
        ? []
        : Array.from(
            this.#bins.totals.subarray(range[0] - this.#bins.offset, range[1] - this.#bins.offset + 1),
          );
    return {
      relativeAccuracy: this.mapping.relativeAccuracy,
      offset: range?.[0] ?? 0,
      counts,
      zeros: this.#zeros,
    };
  }

  #addKey(key: number, weight: number): void {
    const column = this.#bins.column(key);
    this.#bins.totals[column] = (this.#bins.totals[column] as number) + weight;
    this.#count += weight;
  }
}
