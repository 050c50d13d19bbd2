// The interleaved-rounds harness: every case of a group runs one batch per round, so drift hits all alike.

/** One thing to measure: `batch(n)` performs `n` operations, one after another. */
export interface BenchCase {
  /** A short, stable id (`results.json` keys and ratios use it). */
  readonly id: string;
  /** What the table shows. */
  readonly label: string;
  /** Runs `n` operations and resolves when the last has finished. */
  batch(n: number): Promise<void>;
  /**
   * Fixes the batch size instead of calibrating it (e.g. 1 for a 10 000-call fan-out).
   * @default calibrated so one batch takes about `batchMs`
   */
  readonly opsPerBatch?: number;
  /** Units of work in one operation (10 000 calls in a fan-out); used for throughput. */
  readonly unitsPerOp?: number;
}

/** How a group is run. */
export interface GroupOptions {
  /** Measured rounds; each runs one batch of every case. */
  rounds: number;
  /** Rounds run first and thrown away (JIT warm-up, caches filled, heap grown). */
  warmupRounds: number;
  /**
   * Keep warming up, in interleaved rounds, until this much time has passed: V8 needs some
   * 10 000 dispatches before the young generation and the optimized code settle.
   * @default 0
   */
  warmupMs?: number;
  /** The wall time a calibrated batch aims at, in milliseconds. */
  batchMs: number;
  /** Seed of the per-round case order. */
  seed?: number;
}

/** Summary statistics of a sample. */
export interface Summary {
  median: number;
  q1: number;
  q3: number;
  min: number;
  max: number;
  /** (q3 − q1) / median, as a fraction. */
  relIqr: number;
}

/** What one case measured. */
export interface CaseResult {
  id: string;
  label: string;
  opsPerBatch: number;
  unitsPerOp: number;
  /** Wall nanoseconds per operation, one sample per round. */
  nsPerOp: number[];
  /** Process CPU nanoseconds (user + system, all threads) per operation, one per round. */
  cpuNsPerOp: number[];
  wall: Summary;
  cpu: Summary;
}

/** What a group measured. */
export interface GroupResult {
  rounds: number;
  cases: CaseResult[];
}

/**
 * Runs every case of a group in interleaved rounds: for each round, a batch of every case, in an
 * order shuffled per round. Returns per-round ns/op samples and their summaries.
 */
export async function runGroup(cases: readonly BenchCase[], options: GroupOptions): Promise<GroupResult> {
  const random = lcg(options.seed ?? 0x5eed);
  const sizes = new Map<string, number>();
  for (const benchCase of cases) {
    sizes.set(benchCase.id, benchCase.opsPerBatch ?? (await calibrate(benchCase, options.batchMs)));
  }
  const order = [...cases];
  const runBatch = async (benchCase: BenchCase) => {
    const n = sizes.get(benchCase.id) ?? 1;
    const cpuBefore = process.cpuUsage();
    const start = process.hrtime.bigint();
    await benchCase.batch(n);
    const elapsed = Number(process.hrtime.bigint() - start);
    const cpuUsed = process.cpuUsage(cpuBefore);
    return { wallNs: elapsed / n, cpuNs: ((cpuUsed.user + cpuUsed.system) * 1_000) / n };
  };

  // Warm-up rounds, then batch sizes calibrated again on the warm code.
  const warmupStart = process.hrtime.bigint();
  const lastWarm = new Map<string, number>();
  for (
    let round = 0;
    round < options.warmupRounds ||
    Number(process.hrtime.bigint() - warmupStart) / 1e6 < (options.warmupMs ?? 0);
    round++
  ) {
    shuffle(order, random);
    for (const benchCase of order) lastWarm.set(benchCase.id, (await runBatch(benchCase)).wallNs);
  }
  for (const benchCase of cases) {
    const nsPerOp = lastWarm.get(benchCase.id);
    if (benchCase.opsPerBatch === undefined && nsPerOp !== undefined) {
      sizes.set(benchCase.id, Math.max(1, Math.round((options.batchMs * 1e6) / nsPerOp)));
    }
  }

  const wall = new Map<string, number[]>(cases.map((c) => [c.id, []]));
  const cpu = new Map<string, number[]>(cases.map((c) => [c.id, []]));
  for (let round = 0; round < options.rounds; round++) {
    shuffle(order, random);
    for (const benchCase of order) {
      const { wallNs, cpuNs } = await runBatch(benchCase);
      wall.get(benchCase.id)?.push(wallNs);
      cpu.get(benchCase.id)?.push(cpuNs);
    }
  }
  return {
    rounds: options.rounds,
    cases: cases.map((benchCase) => {
      const nsPerOp = wall.get(benchCase.id) ?? [];
      const cpuNsPerOp = cpu.get(benchCase.id) ?? [];
      return {
        id: benchCase.id,
        label: benchCase.label,
        opsPerBatch: sizes.get(benchCase.id) ?? 1,
        unitsPerOp: benchCase.unitsPerOp ?? 1,
        nsPerOp,
        cpuNsPerOp,
        wall: summarize(nsPerOp),
        cpu: summarize(cpuNsPerOp),
      };
    }),
  };
}

/** A ratio between two cases of one group, from the per-round pairs (a/b in the same round). */
export interface Ratio {
  /** Median over rounds of a[round] / b[round]. */
  median: number;
  q1: number;
  q3: number;
}

/**
 * The ratio of case `a` to case `b` (wall ns/op), paired by round so that a slow round
 * affects both sides alike; the median of the per-round ratios, with its quartiles.
 */
export function pairedRatio(group: GroupResult, a: string, b: string): Ratio {
  const left = caseById(group, a).nsPerOp;
  const right = caseById(group, b).nsPerOp;
  const ratios = left.map((value, i) => value / (right[i] ?? Number.NaN));
  const { median, q1, q3 } = summarize(ratios);
  return { median, q1, q3 };
}

/** The case with `id`; throws when there is none (a typo in a ratio definition). */
export function caseById(group: GroupResult, id: string): CaseResult {
  const found = group.cases.find((c) => c.id === id);
  if (found === undefined) throw new Error(`No case "${id}" in this group`);
  return found;
}

/** Median, quartiles (linear interpolation), extremes and relative IQR. */
export function summarize(sample: readonly number[]): Summary {
  if (sample.length === 0) {
    return {
      median: Number.NaN,
      q1: Number.NaN,
      q3: Number.NaN,
      min: Number.NaN,
      max: Number.NaN,
      relIqr: Number.NaN,
    };
  }
  const sorted = [...sample].sort((x, y) => x - y);
  const median = quantile(sorted, 0.5);
  const q1 = quantile(sorted, 0.25);
  const q3 = quantile(sorted, 0.75);
  return {
    median,
    q1,
    q3,
    min: sorted[0] ?? Number.NaN,
    max: sorted[sorted.length - 1] ?? Number.NaN,
    relIqr: (q3 - q1) / median,
  };
}

function quantile(sorted: readonly number[], q: number): number {
  const position = (sorted.length - 1) * q;
  const low = Math.floor(position);
  const high = Math.ceil(position);
  const a = sorted[low] ?? Number.NaN;
  const b = sorted[high] ?? Number.NaN;
  return a + (b - a) * (position - low);
}

// Doubles the batch until one takes a quarter of the target, then scales to the target; the
// doubling runs double as a first warm-up.
async function calibrate(benchCase: BenchCase, batchMs: number): Promise<number> {
  let n = 1;
  for (;;) {
    const start = process.hrtime.bigint();
    await benchCase.batch(n);
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (ms >= batchMs / 4 || n >= 1 << 24) {
      return Math.max(1, Math.round((n * batchMs) / Math.max(ms, 1e-3)));
    }
    n *= 2;
  }
}

// A small deterministic PRNG, so a run's case orders can be reproduced.
function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

function shuffle<T>(items: T[], random: () => number): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const a = items[i] as T;
    items[i] = items[j] as T;
    items[j] = a;
  }
}
