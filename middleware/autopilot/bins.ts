/**
 * The storage under the autopilot's latency sketches: DDSketch's logarithmic key mapping and a
 * dense, bounded matrix of bucket counts whose rows share one key range.
 * @module
 */

/**
 * DDSketch's logarithmic mapping for a relative accuracy α: a value x > 0 goes to the bucket
 * `ceil(log_γ x)` with γ = (1 + α) / (1 − α), and a bucket is read back as `2γ^k / (1 + γ)`, within
 * α of every value it holds.
 * @internal
 */
export class LogMapping {
  /** The relative accuracy α. */
  readonly relativeAccuracy: number;
  /** γ = (1 + α) / (1 − α): the ratio between the bounds of one bucket. */
  readonly gamma: number;
  readonly #inverseLogGamma: number;
  readonly #logGamma: number;
  readonly #midpoint: number;

  constructor(relativeAccuracy: number) {
    this.relativeAccuracy = relativeAccuracy;
    this.gamma = (1 + relativeAccuracy) / (1 - relativeAccuracy);
    this.#logGamma = Math.log(this.gamma);
    this.#inverseLogGamma = 1 / this.#logGamma;
    this.#midpoint = 2 / (1 + this.gamma);
  }

  /** The bucket of `value` (> 0). */
  key(value: number): number {
    return Math.ceil(Math.log(value) * this.#inverseLogGamma);
  }

  /** The value a bucket stands for: within α of every value in it. */
  value(key: number): number {
    return Math.exp(key * this.#logGamma) * this.#midpoint;
  }
}

// The first width allocated: a tool's latencies usually span far fewer buckets than the cap.
const initialWidth = 32;

/** The most a sub-window row counts in one bucket: its owner turns the row before that. */
export const maxRowCount = 0xffff;

/**
 * Bucket counts over one contiguous key range of at most `maxBins` buckets: a totals row, and
 * `rowCount` rows of 16-bit counts (a window's sub-windows) over the same range, whose sum the
 * owner keeps equal to the totals. When a new key would stretch the range past `maxBins`, the
 * lowest buckets of every row fold into the lowest one kept (DDSketch's collapsing-lowest store):
 * the high quantiles a timeout or a hedge reads stay exact, and memory never grows past the cap.
 * @internal
 */
export class BinMatrix {
  /** The sub-window rows, `width` counts each, one after the other. */
  rows: Uint16Array;
  /** The totals row: the sum of the rows (or the only counts, with no rows). */
  totals: Uint32Array;
  /** Buckets per row now (grows up to `maxBins`). */
  width = 0;
  /** The key of each row's first bucket. */
  offset = 0;
  readonly #rowCount: number;
  readonly #maxBins: number;
  #floorKey = -Infinity;

  constructor(rowCount: number, maxBins: number) {
    this.#rowCount = rowCount;
    this.#maxBins = maxBins;
    this.rows = new Uint16Array(0);
    this.totals = new Uint32Array(0);
  }

  /** Bytes of counts held now. */
  get byteLength(): number {
    return this.rows.byteLength + this.totals.byteLength;
  }

  /** The column `key` counts in: the range moves, grows or folds its lowest buckets to hold it. */
  column(key: number): number {
    const column = key - this.offset;
    if (column >= 0 && column < this.width) return column;
    // Below what the range can reach while it holds its highest count: folded at once, no scan.
    if (key < this.#floorKey) return 0;
    this.#fit(key);
    // At the cap, a key below the kept range counts in the lowest bucket (it is folded).
    return Math.max(0, key - this.offset);
  }

  /** The lowest and highest occupied keys (by the totals), or `undefined` when empty. */
  occupied(): [number, number] | undefined {
    let low = -1;
    let high = -1;
    for (let column = 0; column < this.width; column++) {
      if (this.totals[column] === 0) continue;
      if (low < 0) low = column;
      high = column;
    }
    return low < 0 ? undefined : [low + this.offset, high + this.offset];
  }

  /** Forgets every count (the range is chosen afresh by the next key). */
  clear(): void {
    this.rows.fill(0);
    this.totals.fill(0);
    this.#floorKey = -Infinity;
  }

  /** Says counts were taken out (a sub-window left): the range may reach lower keys again. */
  countsRemoved(): void {
    this.#floorKey = -Infinity;
  }

  #fit(key: number): void {
    const range = this.occupied();
    if (range === undefined) {
      if (this.width === 0) this.#relayout(Math.min(initialWidth, this.#maxBins), 0);
      // Centred: latencies drift both ways.
      this.offset = key - (this.width >> 1);
      return;
    }
    const [low, high] = range;
    const wantedLow = Math.min(low, key);
    const wantedHigh = Math.max(high, key);
    const span = wantedHigh - wantedLow + 1;
    let width = this.width;
    while (width < span && width < this.#maxBins) width = Math.min(this.#maxBins, width * 2);
    let offset: number;
    if (span <= width) offset = wantedLow - ((width - span) >> 1);
    // Folding with a sixteenth of the width to spare above: latencies that climb one bucket at a
    // time fold once per that many buckets, not at every record.
    else if (key > high) offset = key + (width >> 4) - width + 1;
    else {
      // Counts only grow until some are removed, so no key below this fits until then.
      offset = high - width + 1;
      this.#floorKey = offset;
    }
    if (offset !== this.offset || width !== this.width) this.#relayout(width, offset);
  }

  // Copies every row into rows of `width` starting at key `offset`; buckets below `offset` fold
  // into the first. Rare (the range moved), so fresh arrays are simplest.
  #relayout(width: number, offset: number): void {
    const shift = this.offset - offset;
    const rows = new Uint16Array(this.#rowCount * width);
    for (let row = 0; row < this.#rowCount; row++) {
      const from = row * this.width;
      const to = row * width;
      for (let column = 0; column < this.width; column++) {
        const count = this.rows[from + column] as number;
        if (count === 0) continue;
        const target = to + Math.max(0, column + shift);
        // No overflow: a row's buckets together hold at most its calls, which stay within 16 bits.
        rows[target] = (rows[target] as number) + count;
      }
    }
    const totals = new Uint32Array(width);
    for (let column = 0; column < this.width; column++) {
      const count = this.totals[column] as number;
      if (count > 0) totals[Math.max(0, column + shift)]! += count;
    }
    this.rows = rows;
    this.totals = totals;
    this.width = width;
    this.offset = offset;
  }
}

/**
 * The values at each quantile of `qs` (each in [0, 1], any order) of the totals of `matrix`, where
 * `zeros` more values of zero make `count` in all: DDSketch's rank `q × (count − 1)`, one pass over the row
 * for all of them. NaN each when `count` is 0.
 * @internal
 */
export function quantilesOfTotals(
  matrix: BinMatrix,
  mapping: LogMapping,
  zeros: number,
  count: number,
  qs: readonly number[],
): number[] {
  const values = new Array<number>(qs.length).fill(Number.NaN);
  if (count === 0) return values;
  const wanted: Array<{ rank: number; index: number }> = [];
  qs.forEach((q, index) => {
    const rank = q * (count - 1);
    if (rank < zeros) values[index] = 0;
    else wanted.push({ rank: rank - zeros, index });
  });
  wanted.sort((a, b) => a.rank - b.rank);
  let next = 0;
  let cumulative = 0;
  let lastOccupied = -1;
  for (let column = 0; column < matrix.width && next < wanted.length; column++) {
    const bucket = matrix.totals[column] as number;
    if (bucket === 0) continue;
    cumulative += bucket;
    lastOccupied = column;
    for (; next < wanted.length && cumulative > (wanted[next] as { rank: number }).rank; next++) {
      values[(wanted[next] as { index: number }).index] = mapping.value(column + matrix.offset);
    }
  }
  // A rank past the last count (floating point at q = 1) reads the highest bucket.
  for (; next < wanted.length; next++) {
    values[(wanted[next] as { index: number }).index] = mapping.value(lastOccupied + matrix.offset);
  }
  return values;
}
