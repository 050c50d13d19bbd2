/**
 * The tool-health aggregator's memory: per tool, a ring of time slices over a sliding window,
 * each with its counts and a log-bucket latency histogram, so that memory per tool is bounded and
 * snapshots from several processes merge exactly.
 * @module
 */

import type { ToolHealthRow } from './panes.js';

// Latency buckets grow by 2^(1/8) (about 9 %): a quantile read from them is within ~4.5 % of the
// truth, and 1 µs to a day needs under 300 buckets.
const bucketsPerDoubling = 8;
const bucketBase = 2 ** (1 / bucketsPerDoubling);
const smallestMs = 0.001;

/** The bucket a latency of `ms` falls in (0 holds everything at or under a microsecond). */
export function latencyBucket(ms: number): number {
  if (!(ms > smallestMs)) return 0;
  return Math.ceil(Math.log(ms / smallestMs) / Math.log(bucketBase));
}

/** The upper bound of bucket `index`, in ms: what a quantile in it reads as. */
export function bucketUpperMs(index: number): number {
  return index <= 0 ? smallestMs : smallestMs * bucketBase ** index;
}

/** A latency histogram as it travels between processes: `[bucket, count]` pairs. */
export type LatencyBuckets = ReadonlyArray<readonly [number, number]>;

/** The `q` quantile (0..1) of `buckets`; `undefined` when they hold nothing. */
export function quantileOf(buckets: ReadonlyMap<number, number>, q: number): number | undefined {
  let total = 0;
  for (const count of buckets.values()) total += count;
  if (total === 0) return undefined;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (const index of [...buckets.keys()].sort((a, b) => a - b)) {
    seen += buckets.get(index) ?? 0;
    if (seen >= rank) return roundMs(bucketUpperMs(index));
  }
  return undefined;
}

function roundMs(ms: number): number {
  return ms >= 100 ? Math.round(ms) : Math.round(ms * 1000) / 1000;
}

/** A tool's row as a process shares it: the row, and the histogram its quantiles came from. */
export interface SharedToolRow extends ToolHealthRow {
  /** The latency histogram behind `p50`/`p95`/`p99`, so that merged quantiles stay exact. */
  readonly latency?: LatencyBuckets;
}

/** What one process counted about one tool in one time slice. */
class Slice {
  calls = 0;
  retries = 0;
  rateWaits = 0;
  rateRefusals = 0;
  readonly outcomes = new Map<string, number>();
  readonly latency = new Map<number, number>();
  budget: Map<string, { spent: number; refusals: number }> | undefined;

  constructor(readonly stamp: number) {}
}

/** Bounds on what the window keeps. */
export interface WindowBounds {
  /** Slices in the window. */
  readonly slices: number;
  /** The most budget keys (tenants) kept per tool; the rest count as `_OTHER`. */
  readonly maxTenants: number;
}

/** One tool's slices and the state it last reported. */
export class ToolWindow {
  readonly #ring: (Slice | undefined)[];
  breaker: ToolHealthRow['breaker'];
  /** The bucket's fill as the last reservation left it (0 to 1), if a store said. */
  rateFill: number | undefined;
  autopilot:
    | { timeoutMs?: number; source?: string; hedges?: number; hedgeAfterMs?: number; concurrency?: number }
    | undefined;
  /** The newest slice stamp with anything in it. */
  lastStamp = Number.NEGATIVE_INFINITY;

  constructor(
    readonly tool: string,
    private readonly bounds: WindowBounds,
  ) {
    this.#ring = new Array<Slice | undefined>(bounds.slices).fill(undefined);
  }

  /** The slice for `stamp`, reusing the ring's oldest when it is stale. */
  slice(stamp: number): Slice {
    const at = stamp % this.#ring.length;
    let slice = this.#ring[at];
    if (slice === undefined || slice.stamp !== stamp) {
      slice = new Slice(stamp);
      this.#ring[at] = slice;
    }
    if (stamp > this.lastStamp) this.lastStamp = stamp;
    return slice;
  }

  /** Counts one settled call of `kind` (`ok` for a success) that took `durationMs`. */
  settled(stamp: number, kind: string, durationMs: number): void {
    const slice = this.slice(stamp);
    slice.calls += 1;
    slice.outcomes.set(kind, (slice.outcomes.get(kind) ?? 0) + 1);
    if (Number.isFinite(durationMs)) {
      const bucket = latencyBucket(Math.max(0, durationMs));
      slice.latency.set(bucket, (slice.latency.get(bucket) ?? 0) + 1);
    }
  }

  /** Adds `spent` units and `refusals` to `tenant`'s budget burn. */
  budget(stamp: number, tenant: string, spent: number, refusals: number): void {
    const slice = this.slice(stamp);
    const budget = (slice.budget ??= new Map());
    let entry = budget.get(tenant);
    if (entry === undefined) {
      // A tool's tenants are bounded: a flood of keys must not grow the window without end.
      const name = budget.size >= this.bounds.maxTenants ? '_OTHER' : tenant;
      entry = budget.get(name) ?? { spent: 0, refusals: 0 };
      budget.set(name, entry);
    }
    entry.spent += spent;
    entry.refusals += refusals;
  }

  /** Whether nothing of the window is left and nothing needs showing (the breaker is closed). */
  idle(oldestStamp: number): boolean {
    return this.lastStamp < oldestStamp && (this.breaker === undefined || this.breaker === 'closed');
  }

  /** The row over slices stamped `oldestStamp` or later, with its histogram. */
  row(oldestStamp: number, windowMs: number): SharedToolRow {
    let calls = 0;
    let retries = 0;
    let waits = 0;
    let refusals = 0;
    const outcomes: Record<string, number> = {};
    const latency = new Map<number, number>();
    let budget: Record<string, { spent: number; refusals: number }> | undefined;
    for (const slice of this.#ring) {
      if (slice === undefined || slice.stamp < oldestStamp) continue;
      calls += slice.calls;
      retries += slice.retries;
      waits += slice.rateWaits;
      refusals += slice.rateRefusals;
      for (const [kind, count] of slice.outcomes) outcomes[kind] = (outcomes[kind] ?? 0) + count;
      for (const [bucket, count] of slice.latency) latency.set(bucket, (latency.get(bucket) ?? 0) + count);
      if (slice.budget === undefined) continue;
      budget ??= {};
      for (const [tenant, burn] of slice.budget) {
        const entry = (budget[tenant] ??= { spent: 0, refusals: 0 });
        entry.spent += burn.spent;
        entry.refusals += burn.refusals;
      }
    }
    return rowOf({
      tool: this.tool,
      calls,
      windowMs,
      latency,
      outcomes,
      retries,
      breaker: this.breaker,
      rateLimit:
        waits > 0 || refusals > 0 || this.rateFill !== undefined
          ? { waits, refusals, ...(this.rateFill === undefined ? {} : { fill: this.rateFill }) }
          : undefined,
      budget,
      autopilot: this.autopilot,
    });
  }
}

/** What a row is made of, before its quantiles are read. */
interface RowParts {
  readonly tool: string;
  readonly calls: number;
  readonly windowMs: number;
  readonly latency: ReadonlyMap<number, number>;
  readonly outcomes: Record<string, number>;
  readonly retries: number;
  readonly breaker: ToolHealthRow['breaker'];
  readonly rateLimit: ToolHealthRow['rateLimit'];
  readonly budget: ToolHealthRow['budget'];
  readonly autopilot: ToolHealthRow['autopilot'];
}

/** The row `parts` make: rates and quantiles computed, absent parts left out. */
export function rowOf(parts: RowParts): SharedToolRow {
  const row: { -readonly [Field in keyof SharedToolRow]: SharedToolRow[Field] } = {
    tool: parts.tool,
    callsPerSecond: Math.round((parts.calls / (parts.windowMs / 1000)) * 1000) / 1000,
    calls: parts.calls,
    p50: quantileOf(parts.latency, 0.5),
    p95: quantileOf(parts.latency, 0.95),
    p99: quantileOf(parts.latency, 0.99),
    outcomes: parts.outcomes,
    retries: parts.retries,
    latency: [...parts.latency].sort((a, b) => a[0] - b[0]),
  };
  if (parts.breaker !== undefined) row.breaker = parts.breaker;
  if (parts.rateLimit !== undefined) row.rateLimit = parts.rateLimit;
  if (parts.budget !== undefined) row.budget = parts.budget;
  if (parts.autopilot !== undefined) row.autopilot = parts.autopilot;
  return row;
}

const breakerRank = { closed: 0, half_open: 1, open: 2 } as const;

/**
 * Merges the same tool's rows from several processes: counts summed, histograms merged (the
 * quantiles read again from them), the most alarming breaker state kept.
 */
export function mergeRows(rows: readonly SharedToolRow[], windowMs: number): SharedToolRow {
  const first = rows[0];
  if (first === undefined) throw new RangeError('mergeRows needs at least one row');
  let calls = 0;
  let retries = 0;
  const outcomes: Record<string, number> = {};
  const latency = new Map<number, number>();
  let breaker: ToolHealthRow['breaker'];
  let rateLimit: { waits: number; refusals: number; fill?: number } | undefined;
  let budget: Record<string, { spent: number; refusals: number }> | undefined;
  let autopilot: ToolHealthRow['autopilot'];
  for (const row of rows) {
    calls += row.calls;
    retries += row.retries;
    for (const [kind, count] of Object.entries(row.outcomes)) outcomes[kind] = (outcomes[kind] ?? 0) + count;
    for (const [bucket, count] of row.latency ?? []) latency.set(bucket, (latency.get(bucket) ?? 0) + count);
    if (
      row.breaker !== undefined &&
      (breaker === undefined || breakerRank[row.breaker] > breakerRank[breaker])
    )
      breaker = row.breaker;
    if (row.rateLimit !== undefined) {
      rateLimit ??= { waits: 0, refusals: 0 };
      rateLimit.waits += row.rateLimit.waits;
      rateLimit.refusals += row.rateLimit.refusals;
      // The emptiest bucket of the fleet's is the one that makes callers wait.
      const fill = row.rateLimit.fill;
      if (fill !== undefined) rateLimit.fill = Math.min(rateLimit.fill ?? 1, fill);
    }
    for (const [tenant, burn] of Object.entries(row.budget ?? {})) {
      budget ??= {};
      const entry = (budget[tenant] ??= { spent: 0, refusals: 0 });
      entry.spent += burn.spent;
      entry.refusals += burn.refusals;
    }
    autopilot ??= row.autopilot;
  }
  return rowOf({
    tool: first.tool,
    calls,
    windowMs,
    latency,
    outcomes,
    retries,
    breaker,
    rateLimit,
    budget,
    autopilot,
  });
}

/** Counts a retry, a rate-limit wait or refusal in `window`'s slice for `stamp`. */
export function countIn(window: ToolWindow, stamp: number, what: 'retry' | 'wait' | 'refusal'): void {
  const slice = window.slice(stamp);
  if (what === 'retry') slice.retries += 1;
  else if (what === 'wait') slice.rateWaits += 1;
  else slice.rateRefusals += 1;
}
