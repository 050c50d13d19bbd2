/**
 * The autopilot's two per-dispatch rows on two or more builds, each run in processes of its own,
 * taken in turn (A, B, A, B, …): the same build measures up to 0.1× apart from one process to the
 * next on a shared VM, so a change is judged on the medians of several processes each, never on
 * one run. Each process measures the bare default stack, the autopilot idle and the autopilot past
 * warm-up in interleaved rounds (as `bench/autopilot.ts` does) and prints their ratios.
 *
 *   npx tsx bench/autopilot/paired.ts [--runs 8] <build>/index.js <other build>/index.js …
 *
 * A build is tsc output, e.g. `git worktree add /tmp/a <commit>` then, in it,
 * `npx tsc -p tsconfig.build.json --outDir /tmp/a-build`.
 * @module
 */

import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { caseById, pairedRatio, runGroup } from '../harness.js';
import { loadLibrary } from '../library.js';
import { argsSchema, immediateHandler, smallArgs } from '../stacks.js';
import { successCase } from './micro.js';
import { pilotConfig } from './scenarios.js';

interface Measured {
  idle: number;
  warm: number;
  bareNs: number;
}

// One process: the three cases of one build, in interleaved rounds.
async function measure(library: string): Promise<Measured> {
  const { lib } = await loadLibrary({ path: library });
  const { options } = pilotConfig();
  const never = 1_000_000_000;
  const idleOptions = {
    ...options,
    timeout: { ...(options.timeout || {}), minSamples: never },
    hedge: { ...(options.hedge || {}), minSamples: never },
  };
  const registry = new lib.ToolRegistry().register({
    name: 'bench.pilot',
    inputSchema: argsSchema,
    idempotent: true,
    handler: immediateHandler,
  });
  const dispatchers = {
    bare: lib.createDispatcher(lib.defaultStack({ registry })),
    idle: lib.createDispatcher(lib.defaultStack({ registry, autopilot: lib.autopilot(idleOptions) })),
    warm: lib.createDispatcher(lib.defaultStack({ registry, autopilot: lib.autopilot(options) })),
  };
  for (let call = 0; call < 1_000; call++) await dispatchers.warm.dispatch('bench.pilot', smallArgs);
  const group = await runGroup(
    Object.entries(dispatchers).map(([id, dispatcher]) => successCase(id, dispatcher, 'bench.pilot')),
    { rounds: 30, warmupRounds: 5, warmupMs: 2_000, batchMs: 20 },
  );
  return {
    idle: pairedRatio(group, 'idle', 'bare').median,
    warm: pairedRatio(group, 'warm', 'bare').median,
    bareNs: caseById(group, 'bare').wall.median,
  };
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const child = args.indexOf('--child');
  if (child !== -1) {
    process.stdout.write(`${JSON.stringify(await measure(args[child + 1] as string))}\n`);
    return;
  }
  const runsAt = args.indexOf('--runs');
  const runs = runsAt === -1 ? 8 : Number(args[runsAt + 1]);
  const builds = args.filter((arg, i) => !arg.startsWith('--') && (runsAt === -1 || i !== runsAt + 1));
  if (!Number.isInteger(runs) || runs < 1 || builds.length === 0) {
    throw new TypeError('usage: paired.ts [--runs N] <build>/index.js [<other build>/index.js …]');
  }
  const script = fileURLToPath(import.meta.url);
  const results = new Map<string, Measured[]>(builds.map((build) => [build, []]));
  for (let run = 0; run < runs; run++) {
    for (const build of builds) {
      const out = spawnSync(process.execPath, ['--import', 'tsx', script, '--child', build], {
        encoding: 'utf8',
      });
      if (out.status !== 0) throw new Error(`${build}: the measuring process failed:\n${out.stderr}`);
      results.get(build)?.push(JSON.parse(out.stdout.trim().split('\n').pop() as string) as Measured);
    }
  }
  console.log(`per dispatch / bare default stack, medians of ${runs} processes per build`);
  for (const [build, measured] of results) {
    const idle = median(measured.map((m) => m.idle)).toFixed(3);
    const warm = median(measured.map((m) => m.warm)).toFixed(3);
    const bare = median(measured.map((m) => m.bareNs)).toFixed(0);
    console.log(`  idle ${idle}×   hedge-eligible, warm ${warm}×   bare ${bare} ns   ${build}`);
  }
}

await main();
