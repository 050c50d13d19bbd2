// Issue 22's per-dispatch targets, as ratios in one run: `rateLimit` and `windowedBudget` in
// memory, present but never limiting, against the bare default stack (each ≤ 1.15×), and a keyed
// `concurrencyLimit` against an unkeyed one (≤ 1.1×). Run: npx tsx bench/rate-limits.ts [--quick]

import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../index.js';
import { pairedRatio, runGroup, type BenchCase } from './harness.js';

const quick = process.argv.includes('--quick');
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

const cases: BenchCase[] = Object.entries(dispatchers).map(([id, dispatcher]) => ({
  id,
  label: id,
  async batch(n: number) {
    for (let i = 0; i < n; i++) {
      const outcome = await dispatcher.dispatch('search.web', args, { tenant: tenants[i & 63] as string });
      if (!outcome.ok) throw new Error(`${id}: ${outcome.kind}`);
    }
  },
}));

const group = await runGroup(
  cases,
  quick
    ? { rounds: 21, warmupRounds: 3, warmupMs: 1_000, batchMs: 10 }
    : { rounds: 41, warmupRounds: 5, warmupMs: 2_000, batchMs: 20 },
);
const rows = [
  ['rateLimit (idle) / bare default stack', pairedRatio(group, 'rateLimit', 'bare'), 1.15],
  ['windowedBudget (idle) / bare default stack', pairedRatio(group, 'windowedBudget', 'bare'), 1.15],
  ['keyed concurrencyLimit / unkeyed', pairedRatio(group, 'keyed', 'bare'), 1.1],
] as const;
for (const [name, ratio, target] of rows) {
  const met = ratio.median <= target ? 'met' : 'MISSED';
  console.log(
    `${name}: ${ratio.median.toFixed(3)}× (q1 ${ratio.q1.toFixed(3)}, q3 ${ratio.q3.toFixed(3)}; target ≤ ${target}×) ${met}`,
  );
}
for (const result of group.cases) console.log(`${result.id}: ${result.wall.median.toFixed(0)} ns/op`);
