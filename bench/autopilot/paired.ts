/**
 * The autopilot's two per-dispatch rows on two or more builds, each run in processes of its own,
 * taken in turn (A, B, A, B, …): the same build measures up to 0.1× apart from one process to the
 * next on a shared VM, so a change is judged on the medians of several processes each, never on
 * one run. Each process runs the micro rows of `bench/autopilot.ts` (`--quick` rounds): the bare
 * default stack, the autopilot idle and past warm-up, in interleaved rounds, and prints their ratios.
 *
 *   npx tsx bench/autopilot/paired.ts [--runs 8] <build>/index.js <other build>/index.js …
 *
 * A build is tsc output, e.g. `git worktree add /tmp/a <commit>` then, in it,
 * `npx tsc -p tsconfig.build.json --outDir /tmp/a-build`.
 * @module
 */

import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadLibrary } from '../library.js';
import { perDispatch } from './micro.js';
import { pilotConfig } from './scenarios.js';

interface Measured {
  idle: number;
  warm: number;
  bareNs: number;
}

// One process: the micro rows' three cases of one build, in interleaved rounds.
async function measure(library: string): Promise<Measured> {
  const { lib } = await loadLibrary({ path: library });
  const { idleVsBare, warmVsBare, nsPerDispatch } = await perDispatch({
    lib,
    config: pilotConfig(),
    quick: true,
  });
  return { idle: idleVsBare.median, warm: warmVsBare.median, bareNs: nsPerDispatch.bare };
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
