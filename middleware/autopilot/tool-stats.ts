/**
 * What the autopilot knows of each tool: a sliding window per tool name (latency sketch and
 * outcome mix), bounded in memory per tool, dropped when the tool goes idle.
 * @module
 */

import { systemClock, type Clock } from '../../src/clock.js';
import { optionKeys, optionsObject, requireClock, requireInteger, requireNumber } from '../kit.js';
import type { MaybePromise } from '../../src/stores.js';
import { defaultMaxBins, LatencySketch, type LatencySketchData } from './latency-sketch.js';
import { type OutcomeClass, type OutcomeMix, WindowedSketch, type WindowShape } from './windowed-sketch.js';

/** Options for `toolStats`. */
export interface ToolStatsOptions {
  /** The time source windows turn on and idleness is measured by. @default systemClock */
  clock?: Pick<Clock, 'now'>;
  /** How long a call stays in a tool's window at most, in milliseconds. @default 300_000 */
  windowMs?: number;
  /** Sub-windows a window turns over by (Restate's adaptive timeouts use 10). @default 10 */
  subWindows?: number;
  /** The most calls a window holds, any outcome: "the last W calls"; `Infinity` for time alone. @default 5_000 */
  maxCalls?: number;
  /** The largest relative error of a quantile, in (0, 0.1]. @default 0.01 */
  relativeAccuracy?: number;
  /**
   * Latency buckets per sub-window; past it the lowest fold into one. At 1 %, 576 buckets hold a
   * 100 000× spread of latencies exactly and keep a tool under 16 KiB. @default 576
   */
  maxBins?: number;
  /** A tool not recorded for this long is forgotten, in milliseconds. @default windowMs */
  idleMs?: number;
  /** Records after which a tool's summary is computed again (a turn of its window always does). @default 64 */
  refreshEvery?: number;
  /** Quantiles beyond p50/p95/p99/p99.9 to keep in each summary, in `summary.quantiles`. @default [] */
  quantiles?: readonly number[];
  /**
   * A fleet's latency windows (an `AutopilotStore`'s `exchangeSketch`): every `exchangeEveryMs`
   * at most, a tool's successes since its last exchange are sent and the fleet's window comes
   * back, and the tool's latency quantiles and samples are the fleet's until the next. One that
   * fails leaves the tool on its own window until an exchange answers again.
   * @default undefined (each process on its own calls)
   */
  exchange?: (
    tool: string,
    delta: LatencySketchData,
    window: { readonly windowMs: number; readonly subWindows: number },
  ) => MaybePromise<LatencySketchData>;
  /** The least time between two exchanges of one tool's window, in milliseconds. @default 1_000 */
  exchangeEveryMs?: number;
}

const toolStatsOptionKeys = optionKeys<ToolStatsOptions>({
  clock: true,
  windowMs: true,
  subWindows: true,
  maxCalls: true,
  relativeAccuracy: true,
  maxBins: true,
  idleMs: true,
  refreshEvery: true,
  quantiles: true,
  exchange: true,
  exchangeEveryMs: true,
});

/** A tool's window, read at one moment; cached between refreshes, so treat it as read-only. */
export interface ToolSummary {
  /** Successful attempts whose latency the window holds. */
  readonly samples: number;
  /** Median latency of a successful attempt, in milliseconds (NaN with no samples). */
  readonly p50: number;
  /** 95th percentile, in milliseconds. */
  readonly p95: number;
  /** 99th percentile, in milliseconds. */
  readonly p99: number;
  /** 99.9th percentile, in milliseconds. */
  readonly p999: number;
  /** The values at `ToolStatsOptions.quantiles`, in that order. */
  readonly quantiles: readonly number[];
  /** The outcomes in the window. */
  readonly outcomes: OutcomeMix;
}

// A tool's share in a fleet's window: its successes since the last exchange, and the fleet's
// window as last answered.
interface FleetShare {
  delta: LatencySketch;
  fleet: LatencySketch | undefined;
  exchangedAt: number;
  exchanging: boolean;
}

interface ToolEntry {
  readonly window: WindowedSketch;
  fleet: FleetShare | undefined;
  lastRecordedAt: number;
  summary: ToolSummary | undefined;
  summaryGeneration: number;
  recordsSinceSummary: number;
}

/**
 * Windows by tool name. `record` is O(1); `summary` is O(1) between refreshes (every
 * `refreshEvery` records or turn of the window) and one pass over at most `maxBins` buckets at a
 * refresh. A tool idle for `idleMs` is dropped at the next sweep (at most every `idleMs / 2`).
 */
export class ToolStats {
  readonly #entries = new Map<string, ToolEntry>();
  readonly #clock: Pick<Clock, 'now'>;
  readonly #shape: WindowShape;
  readonly #idleMs: number;
  readonly #refreshEvery: number;
  readonly #quantiles: readonly number[];
  readonly #exchange: ToolStatsOptions['exchange'];
  readonly #exchangeEveryMs: number;
  #sweepAt: number;

  /** Use `toolStats(options)`, which checks the options. */
  constructor(
    clock: Pick<Clock, 'now'>,
    shape: WindowShape,
    settings: {
      idleMs: number;
      refreshEvery: number;
      quantiles: readonly number[];
      exchange?: ToolStatsOptions['exchange'];
      exchangeEveryMs?: number;
    },
  ) {
    this.#clock = clock;
    this.#shape = shape;
    this.#idleMs = settings.idleMs;
    this.#refreshEvery = settings.refreshEvery;
    this.#quantiles = [0.5, 0.95, 0.99, 0.999, ...settings.quantiles];
    this.#sweepAt = clock.now() + settings.idleMs / 2;
    this.#exchange = settings.exchange;
    this.#exchangeEveryMs = settings.exchangeEveryMs ?? 1_000;
  }

  /** Tools held now. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Counts one attempt of `tool`; a success's `latencyMs` goes into its latency sketch. `now` is
   * the clock's reading, for a caller that has just taken it.
   */
  record(tool: string, outcome: OutcomeClass, latencyMs?: number, now = this.#clock.now()): void {
    if (now >= this.#sweepAt) this.#sweep(now);
    let entry = this.#entries.get(tool);
    if (entry === undefined) {
      entry = {
        window: new WindowedSketch(this.#shape, now),
        fleet:
          this.#exchange === undefined
            ? undefined
            : {
                delta: this.#emptySketch(),
                fleet: undefined,
                exchangedAt: -Infinity,
                exchanging: false,
              },
        lastRecordedAt: now,
        summary: undefined,
        summaryGeneration: -1,
        recordsSinceSummary: 0,
      };
      this.#entries.set(tool, entry);
    }
    entry.window.record(outcome, latencyMs, now);
    entry.lastRecordedAt = now;
    entry.recordsSinceSummary++;
    const share = entry.fleet;
    if (share === undefined) return;
    if (outcome === 'success' && latencyMs !== undefined) share.delta.add(latencyMs);
    if (!share.exchanging && now - share.exchangedAt >= this.#exchangeEveryMs)
      this.#exchangeOf(tool, entry, share, now);
  }

  // Sends the tool's successes since its last exchange; the fleet's window that comes back is the
  // tool's until the next. Off the call path: nothing waits for it, and a failure is only a miss.
  #exchangeOf(tool: string, entry: ToolEntry, share: FleetShare, now: number): void {
    const exchange = this.#exchange as NonNullable<ToolStatsOptions['exchange']>;
    const delta = share.delta.toData();
    // Counts sent once: a lost exchange costs them, never counts them twice.
    share.delta = this.#emptySketch();
    share.exchanging = true;
    share.exchangedAt = now;
    const shape = { windowMs: this.#shape.windowMs, subWindows: this.#shape.subWindows };
    let answer: MaybePromise<LatencySketchData>;
    try {
      answer = exchange(tool, delta, shape);
    } catch {
      share.exchanging = false;
      share.fleet = undefined;
      return;
    }
    Promise.resolve(answer).then(
      (data) => {
        share.exchanging = false;
        share.fleet = LatencySketch.from(data, { maxBins: this.#shape.maxBins });
        entry.summary = undefined;
      },
      () => {
        share.exchanging = false;
        // Back on this process's own window until an exchange answers again.
        share.fleet = undefined;
        entry.summary = undefined;
      },
    );
  }

  /** Successful attempts in `tool`'s window at `now`, counted exactly (0 for a tool not held); O(1). */
  samples(tool: string, now = this.#clock.now()): number {
    const entry = this.#entries.get(tool);
    if (entry === undefined) return 0;
    const fleet = entry.fleet?.fleet;
    return fleet === undefined ? entry.window.samples(now) : Math.max(fleet.count, entry.window.samples(now));
  }

  /**
   * `tool`'s window as of now, or `undefined` for a tool not held (never seen, or dropped idle);
   * `fresh` computes it again even between refreshes. `now` is the clock's reading, for a caller
   * that has just taken it.
   */
  summary(tool: string, fresh = false, now?: number): ToolSummary | undefined {
    const entry = this.#entries.get(tool);
    if (entry === undefined) return undefined;
    now ??= this.#clock.now();
    const window = entry.window;
    window.advance(now);
    if (
      !fresh &&
      entry.summary !== undefined &&
      entry.summaryGeneration === window.generation &&
      entry.recordsSinceSummary < this.#refreshEvery
    ) {
      return entry.summary;
    }
    const fleet = entry.fleet?.fleet;
    const values =
      fleet === undefined ? window.quantiles(this.#quantiles, now) : fleet.quantiles(this.#quantiles);
    entry.summary = {
      samples: fleet === undefined ? window.samples(now) : fleet.count,
      p50: values[0] as number,
      p95: values[1] as number,
      p99: values[2] as number,
      p999: values[3] as number,
      quantiles: values.slice(4),
      outcomes: window.outcomes(now),
    };
    entry.summaryGeneration = window.generation;
    entry.recordsSinceSummary = 0;
    return entry.summary;
  }

  /** `tool`'s latency at quantile `q` now, computed afresh (NaN with no samples or no such tool). */
  quantile(tool: string, q: number): number {
    const entry = this.#entries.get(tool);
    if (entry === undefined) return Number.NaN;
    return entry.window.quantiles([q], this.#clock.now())[0] as number;
  }

  /** `tool`'s window as one mergeable sketch (a copy), for a fleet store; `undefined` when not held. */
  sketch(tool: string): LatencySketch | undefined {
    return this.#entries.get(tool)?.window.toSketch(this.#clock.now());
  }

  /** Bytes of counters `tool`'s window holds now (0 when not held). */
  byteLength(tool: string): number {
    return this.#entries.get(tool)?.window.byteLength ?? 0;
  }

  #emptySketch(): LatencySketch {
    return new LatencySketch({
      relativeAccuracy: this.#shape.relativeAccuracy,
      maxBins: this.#shape.maxBins,
    });
  }

  #sweep(now: number): void {
    const idleSince = now - this.#idleMs;
    for (const [tool, entry] of this.#entries) {
      if (entry.lastRecordedAt <= idleSince) this.#entries.delete(tool);
    }
    this.#sweepAt = now + this.#idleMs / 2;
  }
}

/**
 * Makes a `ToolStats`: per-tool sliding windows of successful-attempt latency (a DDSketch, ±1 %)
 * and outcome mix, at most `maxBins × (2 × subWindows + 4)` bytes of counts per tool (13.5 KiB at
 * the defaults), tools idle for `idleMs` dropped.
 *
 * @example
 * const stats = toolStats({ clock });
 * stats.record('search.web', 'success', 212);
 * stats.summary('search.web'); // { samples: 1, p50: ≈ 212, …, outcomes: { success: 1, … } }
 */
export function toolStats(options?: ToolStatsOptions): ToolStats {
  const given = optionsObject('toolStats', options, toolStatsOptionKeys);
  const clock = given.clock ?? systemClock;
  requireClock(clock, ['now']);
  const windowMs = requireNumber('windowMs', given.windowMs ?? 300_000, 0, { exclusive: true });
  const subWindows = requireInteger('subWindows', given.subWindows ?? 10, 1);
  const maxCalls = requireNumber('maxCalls', given.maxCalls ?? 5_000, 1, { allowInfinity: true });
  const relativeAccuracy = requireNumber('relativeAccuracy', given.relativeAccuracy ?? 0.01, 0, {
    exclusive: true,
  });
  if (relativeAccuracy > 0.1) {
    throw new TypeError(`relativeAccuracy must be at most 0.1, got ${relativeAccuracy}`);
  }
  const maxBins = requireInteger('maxBins', given.maxBins ?? defaultMaxBins, 2);
  const idleMs = requireNumber('idleMs', given.idleMs ?? windowMs, 0, { exclusive: true });
  const refreshEvery = requireInteger('refreshEvery', given.refreshEvery ?? 64, 1);
  if (given.exchange !== undefined && typeof given.exchange !== 'function') {
    throw new TypeError(`exchange must be a function, got ${typeof given.exchange}`);
  }
  const exchangeEveryMs = requireNumber('exchangeEveryMs', given.exchangeEveryMs ?? 1_000, 0);
  const quantiles = given.quantiles ?? [];
  if (!Array.isArray(quantiles)) throw new TypeError('quantiles must be an array of numbers in [0, 1]');
  for (const q of quantiles) {
    if (typeof q !== 'number' || !(q >= 0 && q <= 1)) {
      throw new TypeError(`quantiles must hold numbers in [0, 1], got ${String(q)}`);
    }
  }
  return new ToolStats(
    clock,
    { relativeAccuracy, maxBins, windowMs, subWindows, maxCalls },
    {
      idleMs,
      refreshEvery,
      quantiles: [...quantiles],
      ...(given.exchange === undefined ? {} : { exchange: given.exchange }),
      exchangeEveryMs,
    },
  );
}
