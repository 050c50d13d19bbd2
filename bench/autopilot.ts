/**
 * Issue 34's autopilot bench: seeded traces of 200 000 calls replayed through the real layers on
 * a virtual clock against a simulated tool (bench/autopilot/), each row beside today's static
 * defaults (30 s timeout, 3 attempts, concurrency `max` 8); then the autopilot's cost per dispatch
 * and memory per tool. Prints measured against target and PASS/FAIL; a FAIL never fails the
 * process (the bench's only failing guard is `bench/run.ts --quick`'s per-dispatch ratio).
 *
 *   npx tsx bench/autopilot.ts             200 000 calls a trace; writes docs/charts/autopilot-*.svg
 *   npx tsx bench/autopilot.ts --quick     20 000 calls a trace, 1 000 tools; writes nothing
 *   --calls N (calls a trace), --seed N, --no-write, --markdown (print the docs table),
 *   --only tails,degrading,brownout,capacity,micro (some rows only; writes nothing),
 *   --source / --prebuilt / --library path (the micro rows' library, see bench/library.ts)
 * @module
 */

import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type MicroResults, runMicro } from './autopilot/micro.js';
import {
  type AutopilotRow,
  type PilotConfig,
  pilotConfig,
  runScenarios,
  type TraceFigures,
} from './autopilot/scenarios.js';
import { type Chart, chartSvg } from './charts.js';
import { type LoadedLibrary, loadLibrary, loadOptionsFromArgv } from './library.js';
import { environment } from './report.js';

/** Everything one run of the autopilot bench measured. */
export interface AutopilotBenchResult {
  /** Logical calls per trace. */
  readonly calls: number;
  readonly seed: number;
  /** Which of the knobs this build has (the rows of a missing one say `n/a (not wired)`). */
  readonly wired: PilotConfig['wired'];
  readonly rows: AutopilotRow[];
  readonly figures: TraceFigures[];
  /** Empty when `only` left the micro rows out. */
  readonly micro: Partial<Omit<MicroResults, 'rows'>>;
}

/** How `runAutopilotBench` runs. */
export interface AutopilotBenchOptions {
  readonly library: LoadedLibrary;
  readonly log: (line?: string) => void;
  /** 20 000 calls a trace and 1 000 tools, for the `--quick` guard. */
  readonly quick: boolean;
  /** Calls a trace. @default 200_000 (20 000 with `quick`) */
  readonly calls?: number;
  /** The traces' seed. @default 34 */
  readonly seed?: number;
  /** Only these row groups (`tails`, `degrading`, `brownout`, `capacity`, `micro`). @default all */
  readonly only?: readonly string[];
}

/** The traces' calls in a full run, and in `--quick`. */
export const autopilotCalls = { full: 200_000, quick: 20_000 } as const;

/**
 * Runs every row and prints it as it goes; returns the rows for the page and the charts.
 *
 * @example
 * const result = await runAutopilotBench({ library: await loadLibrary(), log: console.log, quick: true });
 */
export async function runAutopilotBench(options: AutopilotBenchOptions): Promise<AutopilotBenchResult> {
  const { log, quick } = options;
  const calls = options.calls ?? (quick ? autopilotCalls.quick : autopilotCalls.full);
  const seed = options.seed ?? 34;
  const config = pilotConfig();
  const missing = (['hedge', 'concurrency'] as const).filter((knob) => !config.wired[knob]);
  log(
    `   virtual-clock replay of ${calls.toLocaleString('en-US')} calls a trace (seed ${seed}); ` +
      `static = 30 s timeout, 3 attempts, max 8; autopilot = the issue's options` +
      (missing.length === 0 ? '' : ` less ${missing.join(' and ')} (not wired in this build)`),
  );
  const only = options.only;
  const scenarios = await runScenarios({ calls, seed, config, log: (line) => log(line), only });
  const micro =
    only === undefined || only.includes('micro')
      ? await runMicro({ lib: options.library.lib, config, quick })
      : undefined;
  const rows = [...scenarios.rows, ...(micro?.rows ?? [])];
  log();
  log(consoleRows(rows));
  const { rows: _microRows, ...microFigures } = micro ?? { rows: [] };
  return { calls, seed, wired: config.wired, rows, figures: scenarios.figures, micro: microFigures };
}

function consoleRows(rows: readonly AutopilotRow[]): string {
  const lines: string[] = [];
  let trace = '';
  for (const row of rows) {
    if (row.trace !== trace) {
      trace = row.trace;
      lines.push(`   ${trace}`);
    }
    lines.push(
      `     [${row.verdict}] ${row.measure}: static ${row.static}, autopilot ${row.autopilot} → ${row.measured} (target ${row.target})`,
    );
  }
  return lines.join('\n');
}

/** The rows as `bench/run.ts`'s target checks (`met` undefined for a knob not wired). */
export function autopilotChecks(
  result: AutopilotBenchResult,
): { name: string; target: string; measured: string; met: boolean | undefined }[] {
  return result.rows.map((row) => ({
    name: `autopilot: ${row.trace}: ${row.measure}`,
    target: row.target,
    measured: `${row.measured} (static ${row.static}, autopilot ${row.autopilot})`,
    met: row.verdict === 'n/a (not wired)' ? undefined : row.verdict === 'PASS',
  }));
}

/** The rows as a Markdown table, for docs/autopilot.md and docs/benchmarks.md. */
export function autopilotMarkdown(result: AutopilotBenchResult | undefined): string {
  if (result === undefined) return 'Not measured in this run.';
  const cell = (text: string) => text.replaceAll('|', '\\|');
  return [
    '| trace | measure | static defaults | autopilot | measured | target | verdict |',
    '| --- | --- | ---: | ---: | ---: | ---: | --- |',
    ...result.rows.map(
      (row) =>
        `| ${cell(row.trace)} | ${cell(row.measure)} | ${row.static} | ${row.autopilot} | ${row.measured} | ${row.target} | ${row.verdict} |`,
    ),
  ].join('\n');
}

const traceLabels: Record<TraceFigures['trace'], string> = {
  steady: 'steady, 3 % stragglers',
  bimodal: 'bimodal, 1 % stragglers',
  degrading: 'degrading 1× → 4×',
  brownout: 'brownout 10×, 30 % failing',
  capacity: 'capacity doubles (static max 8)',
};

/**
 * Two charts (docs/charts/autopilot-*.svg): each trace's p99 and its tool calls per logical call,
 * the autopilot's over the static defaults', from one run (no spread: one replay each).
 */
export function autopilotCharts(result: AutopilotBenchResult): Chart[] {
  const p99Targets: Partial<Record<TraceFigures['trace'], number>> = { steady: 0.2, bimodal: 0.7 };
  const loadTargets: Partial<Record<TraceFigures['trace'], number>> = { steady: 1.05, bimodal: 1.05 };
  const bar = (label: string, value: number, target: number | undefined) => ({
    label,
    median: value,
    q1: value,
    q3: value,
    ...(target === undefined ? {} : { target: { value: target, kind: 'max' as const } }),
  });
  const legend = `one virtual-clock replay of ${result.calls.toLocaleString('en-US')} calls a trace · dashed: target`;
  return [
    {
      file: 'autopilot-p99.svg',
      title: 'p99 per trace: autopilot / static defaults (lower is better)',
      scale: 'log',
      legend,
      bars: result.figures.map((figures) =>
        bar(traceLabels[figures.trace], figures.autopilotP99 / figures.staticP99, p99Targets[figures.trace]),
      ),
    },
    {
      file: 'autopilot-load.svg',
      title: 'tool calls per trace: autopilot / static defaults',
      scale: 'linear',
      legend,
      bars: result.figures.map((figures) =>
        bar(
          traceLabels[figures.trace],
          figures.autopilotCallsPerCall / figures.staticCallsPerCall,
          loadTargets[figures.trace],
        ),
      ),
    },
  ];
}

/** Writes the autopilot charts into docs/charts/. */
export function writeAutopilotCharts(result: AutopilotBenchResult, root: string): void {
  mkdirSync(`${root}docs/charts`, { recursive: true });
  for (const chart of autopilotCharts(result))
    writeFileSync(`${root}docs/charts/${chart.file}`, chartSvg(chart));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const flag = (name: string) => {
    const at = argv.indexOf(name);
    return at === -1 ? undefined : Number(argv[at + 1]);
  };
  const quick = argv.includes('--quick');
  const env = environment();
  console.log(`Autopilot (issue 34)${quick ? ', --quick' : ''}: ${env.cpu} × ${env.cores}, Node ${env.node}`);
  const library = await loadLibrary(loadOptionsFromArgv(argv));
  const result = await runAutopilotBench({
    library,
    log: (line = '') => console.log(line),
    quick,
    ...(flag('--calls') === undefined ? {} : { calls: flag('--calls') as number }),
    ...(flag('--seed') === undefined ? {} : { seed: flag('--seed') as number }),
    ...(argv.includes('--only') ? { only: (argv[argv.indexOf('--only') + 1] ?? '').split(',') } : {}),
  });
  if (argv.includes('--markdown')) console.log(`\n${autopilotMarkdown(result)}`);
  if (!quick && !argv.includes('--no-write') && !argv.includes('--only')) {
    writeAutopilotCharts(result, fileURLToPath(new URL('..', import.meta.url)));
    console.log('Wrote docs/charts/autopilot-p99.svg and docs/charts/autopilot-load.svg');
  }
}
