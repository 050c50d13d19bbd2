/**
 * Where the autopilot's per-dispatch time goes (issue 34's two cost rows), by Linux `perf`: a hot
 * loop of the bare default stack, the autopilot idle and the autopilot past warm-up on a
 * hedge-eligible tool, each sampled in its own process, its symbols grouped (clock readings,
 * promise machinery, garbage collection, `Map` lookups, the autopilot's own functions, the timeout
 * layer's) and turned into nanoseconds per dispatch. Functions V8 inlined count in their caller.
 *
 *   npx tsx bench/autopilot/attribution.ts [dispatches] [--library path]
 *
 * Needs `perf` (Debian's `linux-perf`); the child is `attribution.ts --loop <case> <dispatches>`.
 * @module
 */

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildDir, buildLibrary, loadLibrary } from '../library.js';
import { smallArgs } from '../stacks.js';
import { microDispatchers, toolName } from './micro.js';
import { pilotConfig } from './scenarios.js';

type Case = 'bare' | 'idle' | 'warm';
const cases: readonly Case[] = ['bare', 'idle', 'warm'];

// The child: warm up, then time `count` sequential dispatches of one case and print ns each.
async function loop(which: Case, count: number, library: string): Promise<void> {
  const { lib } = await loadLibrary({ path: library });
  const dispatcher = (await microDispatchers(lib, pilotConfig()))[which];
  for (let i = 0; i < 200_000; i++) await dispatcher.dispatch(toolName, smallArgs);
  const start = process.hrtime.bigint();
  for (let i = 0; i < count; i++) await dispatcher.dispatch(toolName, smallArgs);
  process.stdout.write(`${Number(process.hrtime.bigint() - start) / count}\n`);
}

const groups: ReadonlyArray<readonly [string, RegExp]> = [
  ['clock readings', /gettimeofday|clock_gettime|ToJsTime|CurrentTimeValue|DateCurrentTime/],
  ['promise machinery', /Promise|Microtask|AsyncFunction/],
  [
    'garbage collection, allocation',
    /Scaveng|SemiSpace|Garbage|SizeFromMap|AllocateRaw|LinearAllocation|Evacuat/,
  ],
  ['Map lookups', /FindOrderedHashMapEntry/],
  ['the autopilot (its own functions)', /middleware\/autopilot\//],
  ['the timeout layer', /middleware\/timeout\//],
];
const rest = 'everything else (the other layers, the core)';

// `perf report`'s flat profile: the share of each symbol, grouped, in ns per dispatch; and each of
// the autopilot's own functions under `fn:<file> <name>`.
function attribute(data: string, nsPerDispatch: number): Map<string, number> {
  const report = spawnSync('perf', ['report', '-i', data, '--no-children', '--sort', 'symbol', '--stdio'], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const totals = new Map<string, number>();
  for (const line of report.stdout.split('\n')) {
    const match = /^\s+([\d.]+)%\s+\[[.k]\]\s+(.*)$/.exec(line);
    if (match === null) continue;
    const symbol = match[2] as string;
    const group = groups.find(([, pattern]) => pattern.test(symbol))?.[0] ?? rest;
    const ns = (Number(match[1]) * nsPerDispatch) / 100;
    totals.set(group, (totals.get(group) ?? 0) + ns);
    const own = /JS:\*?(\S*) \S*middleware\/autopilot\/([\w-]+\.js)/.exec(symbol);
    if (own !== null) {
      const name = `fn:${own[2]} ${own[1] || '(closure)'}`;
      totals.set(name, (totals.get(name) ?? 0) + ns);
    }
  }
  return totals;
}

async function main(): Promise<void> {
  const at = process.argv.indexOf('--loop');
  const libraryAt = process.argv.indexOf('--library');
  if (at !== -1) {
    return loop(
      process.argv[at + 1] as Case,
      Number(process.argv[at + 2]),
      process.argv[libraryAt + 1] as string,
    );
  }
  if (spawnSync('perf', ['--version']).status !== 0) {
    throw new Error('attribution.ts needs perf (Debian: apt-get install -y linux-perf)');
  }
  const count = Number(process.argv[2] ?? 2_000_000);
  if (!Number.isInteger(count) || count < 1) throw new TypeError('usage: attribution.ts [dispatches]');
  let library = libraryAt === -1 ? undefined : (process.argv[libraryAt + 1] as string);
  if (library === undefined) {
    buildLibrary();
    library = join(buildDir, 'index.js');
  }
  const dir = mkdtempSync(join(tmpdir(), 'td-attribution-'));
  const script = fileURLToPath(import.meta.url);
  const rows = new Map<Case, { ns: number; groups: Map<string, number> }>();
  try {
    for (const which of cases) {
      const data = join(dir, `${which}.data`);
      const run = spawnSync(
        'perf',
        [
          'record',
          '-F',
          '15000',
          '-e',
          'cpu-clock',
          '-o',
          data,
          '--',
          process.execPath,
          '--perf-basic-prof',
          // V8's own log goes to the run's directory, not into the working tree.
          '--no-logfile-per-isolate',
          `--logfile=${join(dir, `${which}.v8.log`)}`,
          '--import',
          'tsx',
          script,
          '--loop',
          which,
          String(count),
          '--library',
          library,
        ],
        { encoding: 'utf8' },
      );
      const ns = Number(run.stdout.trim().split('\n').pop());
      if (run.status !== 0 || !Number.isFinite(ns)) throw new Error(`perf record failed:\n${run.stderr}`);
      rows.set(which, { ns, groups: attribute(data, ns) });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const get = (which: Case) => rows.get(which) as { ns: number; groups: Map<string, number> };
  const cell = (which: Case, group: string) => `${Math.round(get(which).groups.get(group) ?? 0)}`;
  console.log("ns per dispatch under perf (immediate tool; the issue's options)");
  console.log('| where | bare | idle | hedge-eligible, warm |');
  console.log('| --- | ---: | ---: | ---: |');
  for (const group of [...groups.map(([name]) => name), rest]) {
    console.log(`| ${group} | ${cell('bare', group)} | ${cell('idle', group)} | ${cell('warm', group)} |`);
  }
  const total = (which: Case) => Math.round(get(which).ns);
  console.log(`| **per dispatch** | **${total('bare')}** | **${total('idle')}** | **${total('warm')}** |`);
  console.log("\nthe autopilot's largest functions, hedge-eligible past warm-up (ns per dispatch)");
  const own = [...get('warm').groups].filter(([name]) => name.startsWith('fn:'));
  for (const [name, ns] of own.sort((a, b) => b[1] - a[1]).slice(0, 10)) {
    console.log(`  ${ns.toFixed(0).padStart(4)}  ${name.slice(3)}`);
  }
}

await main();
