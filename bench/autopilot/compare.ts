/**
 * Two builds of the library in one process (issue 34's cost rows, before and after a change): the
 * bare default stack, the autopilot idle and the autopilot past warm-up on a hedge-eligible tool,
 * for each build, in one set of interleaved rounds, so both builds meet the same machine noise.
 * Prints each build's ratios to its own bare stack and the second build's over the first's, in CPU
 * time (less disturbed than wall time by other jobs on a shared machine).
 *
 *   npx tsc -p tsconfig.build.json --outDir /tmp/before   (on the old commit, e.g. in a worktree)
 *   npx tsx bench/autopilot/compare.ts /tmp/before/index.js bench/.build/index.js [--quick]
 *
 * Each build's `index.js` must resolve the package's dependencies (zod): build inside a checkout.
 * @module
 */

import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { caseById, type GroupResult, runGroup } from '../harness.js';
import type { Library } from '../library.js';
import { argsSchema, immediateHandler, smallArgs } from '../stacks.js';
import { successCase } from './micro.js';
import { pilotConfig } from './scenarios.js';

const [first, second] = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
if (first === undefined || second === undefined) {
  throw new TypeError('usage: bench/autopilot/compare.ts <before/index.js> <after/index.js> [--quick]');
}
const load = async (path: string) => (await import(pathToFileURL(resolve(path)).href)) as Library;
const builds = { A: await load(first), B: await load(second) };

const toolName = 'bench.pilot';
const never = 1_000_000_000;
const { options } = pilotConfig();
const idleOptions = {
  ...options,
  timeout: { ...(options.timeout || {}), minSamples: never },
  hedge: { ...(options.hedge || {}), minSamples: never },
};
type Dispatcher = ReturnType<Library['createDispatcher']>;
const dispatchers = new Map<string, Dispatcher>();
for (const [build, lib] of Object.entries(builds)) {
  const registry = new lib.ToolRegistry().register({
    name: toolName,
    inputSchema: argsSchema,
    idempotent: true,
    handler: immediateHandler,
  });
  dispatchers.set(`bare ${build}`, lib.createDispatcher(lib.defaultStack({ registry })));
  const idle = lib.autopilot(idleOptions);
  dispatchers.set(`idle ${build}`, lib.createDispatcher(lib.defaultStack({ registry, autopilot: idle })));
  const warm = lib.createDispatcher(lib.defaultStack({ registry, autopilot: lib.autopilot(options) }));
  for (let call = 0; call < 1_000; call++) await warm.dispatch(toolName, smallArgs);
  dispatchers.set(`warm ${build}`, warm);
}

const quick = process.argv.includes('--quick');
const group = await runGroup(
  [...dispatchers].map(([id, dispatcher]) => successCase(id, dispatcher, toolName)),
  quick
    ? { rounds: 21, warmupRounds: 3, warmupMs: 1_000, batchMs: 10 }
    : { rounds: 30, warmupRounds: 5, warmupMs: 3_000, batchMs: 25 },
);

// The median over rounds of a's CPU time over b's in the same round.
function cpuRatio(result: GroupResult, a: string, b: string): string {
  const over = caseById(result, a).cpuNsPerOp;
  const under = caseById(result, b).cpuNsPerOp;
  const ratios = over.map((value, round) => value / (under[round] as number)).sort((x, y) => x - y);
  return `${(ratios[Math.floor(ratios.length / 2)] as number).toFixed(2)}×`;
}

console.log(`A: ${first}\nB: ${second}`);
for (const row of ['idle', 'warm']) {
  console.log(
    `  ${row} / bare:  A ${cpuRatio(group, `${row} A`, 'bare A')}   B ${cpuRatio(group, `${row} B`, 'bare B')}   B / A ${cpuRatio(group, `${row} B`, `${row} A`)}`,
  );
}
console.log(`  bare B / bare A ${cpuRatio(group, 'bare B', 'bare A')}`);
