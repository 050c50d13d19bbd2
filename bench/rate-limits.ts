// Issue 22's per-dispatch targets, as ratios in one run: `rateLimit` and `windowedBudget` in
// memory, present but never limiting, against the bare default stack (each ≤ 1.15×), and a keyed
// `concurrencyLimit` against an unkeyed one (≤ 1.1×). bench/run.ts runs it as its section 7 and
// puts its rows in the targets table; alone (the tsc build, as bench/run.ts measures it):
//
//   npx tsx bench/rate-limits.ts [--quick] [--source | --prebuilt | --library path/to/index.js]
//
// The Redis stores' round trips and throughput are bench/redis.ts's (section 6).

import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { pairedRatio, runGroup, type BenchCase, type GroupResult, type Ratio } from './harness.js';
import { loadLibrary, loadOptionsFromArgv, type Library } from './library.js';
import { formatRatio } from './report.js';

/** Issue 22's targets: each case / its baseline, per dispatch, at most this. */
export const rateLimitTargets = { rateLimit: 1.15, windowedBudget: 1.15, keyed: 1.1 } as const;

/** One row: a ratio against its target. */
export interface RateLimitRow {
  name: string;
  ratio: Ratio;
  target: number;
}

/** What the section measured: its group (ns per dispatch per case) and its rows. */
export interface RateLimitBenchResult {
  group: GroupResult;
  rows: RateLimitRow[];
}

function cases(lib: Library): BenchCase[] {
  const { ToolRegistry, createDispatcher, defaultStack } = lib;
  const registry = new ToolRegistry().register({
    name: 'search.web',
    inputSchema: z.object({ query: z.string(), limit: z.number() }),
    handler: ({ limit }) => limit,
  });
  const args = { query: 'q', limit: 3 };
  const never = { rate: 1e12, intervalMs: 1_000 };
  const dispatchers = {
    bare: createDispatcher(defaultStack({ registry })),
    rateLimit: createDispatcher(defaultStack({ registry, rateLimit: never })),
    windowedBudget: createDispatcher(
      defaultStack({
        registry,
        windowedBudget: { key: (ctx) => ctx.options.tenant, limit: Infinity, windowMs: 60_000 },
      }),
    ),
    keyed: createDispatcher(defaultStack({ registry, concurrency: { key: (ctx) => ctx.options.tenant } })),
  };
  const tenants = Array.from({ length: 64 }, (_, i) => `tenant-${i}`);
  return Object.entries(dispatchers).map(([id, dispatcher]) => ({
    id,
    label: id,
    async batch(n: number) {
      for (let i = 0; i < n; i++) {
        const outcome = await dispatcher.dispatch('search.web', args, { tenant: tenants[i & 63] as string });
        if (!outcome.ok) throw new Error(`${id}: ${outcome.kind}`);
      }
    },
  }));
}

/** Runs the group on `lib` and answers its rows, logging them. */
export async function runRateLimitBench(
  lib: Library,
  log: (text?: string) => void = console.log,
  quick = false,
): Promise<RateLimitBenchResult> {
  const group = await runGroup(
    cases(lib),
    quick
      ? { rounds: 21, warmupRounds: 3, warmupMs: 1_000, batchMs: 10 }
      : { rounds: 41, warmupRounds: 5, warmupMs: 2_000, batchMs: 20 },
  );
  const rows: RateLimitRow[] = [
    {
      name: 'rateLimit (memory, never limiting) / bare default stack',
      ratio: pairedRatio(group, 'rateLimit', 'bare'),
      target: rateLimitTargets.rateLimit,
    },
    {
      name: 'windowedBudget (memory, never refusing) / bare default stack',
      ratio: pairedRatio(group, 'windowedBudget', 'bare'),
      target: rateLimitTargets.windowedBudget,
    },
    {
      name: 'keyed concurrencyLimit (64 tenants) / unkeyed',
      ratio: pairedRatio(group, 'keyed', 'bare'),
      target: rateLimitTargets.keyed,
    },
  ];
  for (const row of rows) {
    const met = row.ratio.median <= row.target ? '' : '  MISSED';
    log(`   ${row.name.padEnd(62)} ${formatRatio(row.ratio)}   (target ≤ ${row.target}×)${met}`);
  }
  return { group, rows };
}

/** The rows of the targets table. */
export function rateLimitChecks(
  result: RateLimitBenchResult,
): Array<{ name: string; target: string; measured: string; met: boolean }> {
  return result.rows.map((row) => ({
    name: `per-dispatch: ${row.name}`,
    target: `≤ ${row.target}×`,
    measured: formatRatio(row.ratio),
    met: row.ratio.median <= row.target,
  }));
}

/** Section 7 of docs/benchmarks.md. */
export function rateLimitMarkdown(result: RateLimitBenchResult | undefined): string {
  if (result === undefined) return 'Not measured in this run (`bench/results.json` has no `rateLimits`).';
  const ns = (id: string) => result.group.cases.find((c) => c.id === id)?.wall.median ?? Number.NaN;
  return `Issue 22's per-dispatch targets, as ratios in one run (\`bench/rate-limits.ts\`): the default
stack with an idle \`rateLimit\` (a memory bucket that never runs dry) or an idle \`windowedBudget\`
(a memory ledger keyed by tenant, limit \`Infinity\`), and a \`concurrencyLimit\` keyed by 64
tenants, each against the bare default stack. One call at a time; ${result.group.rounds} rounds.

| ratio | median (IQR) | target |
| --- | ---: | ---: |
${result.rows.map((row) => `| ${row.name} | ${formatRatio(row.ratio)} | ≤ ${row.target}× |`).join('\n')}

Medians per dispatch: bare ${ns('bare').toFixed(0)} ns, rateLimit ${ns('rateLimit').toFixed(0)} ns,
windowedBudget ${ns('windowedBudget').toFixed(0)} ns, keyed concurrencyLimit ${ns('keyed').toFixed(0)} ns.
An idle limiter costs its key and cost functions, one map lookup and a promise turn per
attempt; an idle budget the same plus the settle check. A keyed \`concurrencyLimit\`
costs its key function and one map lookup: an idle key's partition is kept for its next call and
swept once the map has doubled (so 100 000 tenants seen once are not kept), since a partition made
and dropped per call cost some 0.9 µs of \`Map\` insert and delete (1.34× → about 1.0×). The Redis
stores' round trips (acquire 1, reserve 1, settle 0 or 1) and throughput are in section 6.`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const { lib } = await loadLibrary(loadOptionsFromArgv(argv));
  const result = await runRateLimitBench(lib, console.log, argv.includes('--quick'));
  if (argv.includes('--json')) console.log(JSON.stringify(result));
}
