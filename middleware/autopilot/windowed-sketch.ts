/**
 * One tool's sliding window: a latency sketch of its successful attempts and the mix of its
 * outcomes, over the last `maxCalls` calls or `windowMs`, whichever is shorter.
 * @module
 */

import { BinMatrix, LogMapping, maxRowCount, quantilesOfTotals } from './bins.js';
import { LatencySketch, zeroLatencyMs } from './latency-sketch.js';

/** What became of an attempt, as the window counts it. */
export type OutcomeClass = 'success' | 'timeout' | 'transient' | 'other';

/** Outcomes counted in a window, by class. */
export interface OutcomeMix {
  /** Attempts that succeeded (their latency is in the sketch). */
  readonly success: number;
  /** Attempts cut off by a timeout. */
  readonly timeout: number;
  /** Attempts that failed in a way worth retrying. */
  readonly transient: number;
  /** Every other failure. */
  readonly other: number;
}

/** The shape of a window (every field required: `toolStats` fills the defaults). */
export interface WindowShape {
  /** The largest relative error of a quantile (DDSketch's α). */
  readonly relativeAccuracy: number;
  /** The most buckets per sub-window; past it the lowest fold into one. */
  readonly maxBins: number;
  /** How long a call stays in the window at most, in milliseconds. */
  readonly windowMs: number;
  /** Sub-windows the window turns over by: data leaves one sub-window at a time. */
  readonly subWindows: number;
  /** The most calls the window holds (any outcome); `Infinity` for a window of time alone. */
  readonly maxCalls: number;
}

// The tallies of each row (sub-windows, then the totals): latency samples at or below
// zeroLatencyMs, latency samples, then one count per outcome class.
const zerosAt = 0;
const samplesAt = 1;
const outcomeAt: Readonly<Record<OutcomeClass, number>> = { success: 2, timeout: 3, transient: 4, other: 5 };
const talliesPerRow = 6;

/**
 * A ring of `subWindows` sub-windows, each a row of 16-bit bucket counts over one shared key range
 * plus its tallies, and a totals row kept equal to their sum: a record touches two counters, a
 * turn subtracts the oldest row, and a quantile scans the totals, never merging the ring. A
 * sub-window turns when it is `windowMs / subWindows` old or holds `maxCalls / subWindows` calls
 * (65 535 at most, so its 16-bit counts never overflow).
 *
 * Memory is fixed by the shape: `maxBins × (2 × subWindows + 4)` bytes of counts at most (13 824
 * at the defaults), allocated as the values' range needs it.
 *
 * @example
 * const window = new WindowedSketch(shape, clock.now());
 * window.record('success', 212, clock.now());
 * window.quantiles([0.5, 0.99], clock.now()); // [≈ 212, ≈ 212]
 */
export class WindowedSketch {
  readonly #shape: WindowShape;
  readonly #mapping: LogMapping;
  readonly #bins: BinMatrix;
  readonly #tallies: Uint32Array;
  readonly #subWindowMs: number;
  readonly #callsPerSubWindow: number;
  #current = 0;
  #callsInCurrent = 0;
  #openedAt: number;
  #generation = 0;

  constructor(shape: WindowShape, now: number) {
    this.#shape = shape;
    this.#mapping = new LogMapping(shape.relativeAccuracy);
    this.#bins = new BinMatrix(shape.subWindows, shape.maxBins);
    this.#tallies = new Uint32Array((shape.subWindows + 1) * talliesPerRow);
    this.#subWindowMs = shape.windowMs / shape.subWindows;
    this.#callsPerSubWindow = Math.min(maxRowCount, Math.ceil(shape.maxCalls / shape.subWindows));
    this.#openedAt = now;
  }

  /** Counts every turn of the window: a summary read at an older generation is stale. */
  get generation(): number {
    return this.#generation;
  }

  /** Bytes of counters held now (at most the shape's bound). */
  get byteLength(): number {
    return this.#bins.byteLength + this.#tallies.byteLength;
  }

  /** Counts one attempt's outcome; a success's `latencyMs` goes into the sketch. */
  record(outcome: OutcomeClass, latencyMs: number | undefined, now: number): void {
    this.advance(now);
    if (this.#callsInCurrent >= this.#callsPerSubWindow) this.#turn(now);
    this.#callsInCurrent++;
    const row = this.#current * talliesPerRow;
    const totals = this.#shape.subWindows * talliesPerRow;
    const tallies = this.#tallies;
    tallies[row + outcomeAt[outcome]]! += 1;
    tallies[totals + outcomeAt[outcome]]! += 1;
    if (outcome !== 'success' || latencyMs === undefined || Number.isNaN(latencyMs)) return;
    tallies[row + samplesAt]! += 1;
    tallies[totals + samplesAt]! += 1;
    if (latencyMs <= zeroLatencyMs) {
      tallies[row + zerosAt]! += 1;
      tallies[totals + zerosAt]! += 1;
      return;
    }
    const bins = this.#bins;
    const column = bins.column(this.#mapping.key(latencyMs));
    bins.rows[this.#current * bins.width + column]! += 1;
    bins.totals[column]! += 1;
  }

  /** Turns the window to `now`: sub-windows older than the window leave it. */
  advance(now: number): void {
    const elapsed = now - this.#openedAt;
    if (elapsed < this.#subWindowMs) return;
    const turns = Math.floor(elapsed / this.#subWindowMs);
    if (turns >= this.#shape.subWindows) {
      this.#clearAll(now);
      return;
    }
    for (let turn = 0; turn < turns; turn++) this.#turn(this.#openedAt + this.#subWindowMs);
  }

  /** Successful attempts whose latency the window holds, as of `now`. */
  samples(now: number): number {
    this.advance(now);
    return this.#tallies[this.#shape.subWindows * talliesPerRow + samplesAt] as number;
  }

  /** The latency at each quantile of `qs` (in [0, 1]) over the window, NaN each when it holds none. */
  quantiles(qs: readonly number[], now: number): number[] {
    this.advance(now);
    const totals = this.#shape.subWindows * talliesPerRow;
    const zeros = this.#tallies[totals + zerosAt] as number;
    const samples = this.#tallies[totals + samplesAt] as number;
    return quantilesOfTotals(this.#bins, this.#mapping, zeros, samples, qs);
  }

  /** The outcomes counted over the window. */
  outcomes(now: number): OutcomeMix {
    this.advance(now);
    const totals = this.#shape.subWindows * talliesPerRow;
    const tallies = this.#tallies;
    return {
      success: tallies[totals + outcomeAt.success] as number,
      timeout: tallies[totals + outcomeAt.timeout] as number,
      transient: tallies[totals + outcomeAt.transient] as number,
      other: tallies[totals + outcomeAt.other] as number,
    };
  }

  /** The window's latencies as one mergeable sketch (a copy). */
  toSketch(now: number): LatencySketch {
    this.advance(now);
    return LatencySketch.from(
      {
        relativeAccuracy: this.#shape.relativeAccuracy,
        offset: this.#bins.offset,
        counts: Array.from(this.#bins.totals),
        zeros: this.#tallies[this.#shape.subWindows * talliesPerRow + zerosAt] as number,
      },
      { maxBins: this.#shape.maxBins },
    );
  }

  // Opens the next sub-window at `openedAt`, first taking the oldest one's counts out of the totals.
  #turn(openedAt: number): void {
    this.#current = (this.#current + 1) % this.#shape.subWindows;
    this.#openedAt = openedAt;
    this.#callsInCurrent = 0;
    this.#generation++;
    const tallies = this.#tallies;
    const leaving = this.#current * talliesPerRow;
    const totals = this.#shape.subWindows * talliesPerRow;
    for (let index = 0; index < talliesPerRow; index++) {
      tallies[totals + index]! -= tallies[leaving + index]!;
      tallies[leaving + index] = 0;
    }
    this.#bins.countsRemoved();
    const { rows, totals: totalCounts, width } = this.#bins;
    const base = this.#current * width;
    for (let column = 0; column < width; column++) {
      const count = rows[base + column] as number;
      if (count === 0) continue;
      totalCounts[column]! -= count;
      rows[base + column] = 0;
    }
  }

  #clearAll(now: number): void {
    this.#bins.clear();
    this.#tallies.fill(0);
    this.#openedAt = now;
    this.#callsInCurrent = 0;
    this.#generation++;
  }
}
