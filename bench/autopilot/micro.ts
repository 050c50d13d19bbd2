/**
 * The autopilot bench's micro rows (issue 34): the autopilot's cost per dispatch, idle and past
 * warm-up, against the bare default stack in interleaved rounds, and its memory per tool at
 * 10 000 tools. Measured on the library under test (the tsc build unless told otherwise).
 * @module
 */

import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { caseById, type GroupOptions, pairedRatio, type Ratio, runGroup } from '../harness.js';
import type { Library } from '../library.js';
import type { Dispatcher } from '../../index.js';
import { formatNs, formatRatio } from '../report.js';
import { argsSchema, immediateHandler, smallArgs } from '../stacks.js';
import type { AutopilotRow, PilotConfig, Verdict } from './scenarios.js';

/** What the micro rows measured. */
export interface MicroResults {
  readonly rows: AutopilotRow[];
  readonly idleVsBare: Ratio;
  readonly warmVsBare: Ratio;
  /** Median wall ns per dispatch: bare, idle, warm. */
  readonly nsPerDispatch: { readonly bare: number; readonly idle: number; readonly warm: number };
  readonly bytesPerTool: number;
  readonly tools: number;
}

/** How the micro rows run. */
export interface MicroSettings {
  readonly lib: Library;
  readonly config: PilotConfig;
  readonly quick: boolean;
}

/** The micro rows' tool. */
export const toolName = 'bench.pilot';
// More samples than any window refresh needs, never reached: the autopilot stays idle.
const neverMinSamples = 1_000_000_000;

/** A bench case of `n` sequential dispatches of `toolName` with the small args, each a success. */
export function successCase(id: string, dispatcher: Pick<Dispatcher, 'dispatch'>, toolName: string) {
  return {
    id,
    label: id,
    async batch(n: number) {
      for (let i = 0; i < n; i++) {
        const outcome = await dispatcher.dispatch(toolName, smallArgs);
        if (!outcome.ok)
          throw new Error(`${id}: expected a success, got ${outcome.kind}: ${outcome.message}`);
      }
    },
  };
}

/** Runs the per-dispatch ratios and the memory row. */
export async function runMicro(settings: MicroSettings): Promise<MicroResults> {
  const { idleVsBare, warmVsBare, nsPerDispatch } = await perDispatch(settings);
  const tools = settings.quick ? 1_000 : 10_000;
  const bytesPerTool = await memoryPerTool(settings, tools);
  const verdict = (pass: boolean, needsHedge: boolean): Verdict =>
    needsHedge && !settings.config.wired.hedge ? 'n/a (not wired)' : pass ? 'PASS' : 'FAIL';
  const rows: AutopilotRow[] = [
    {
      trace: 'per dispatch, immediate tool',
      measure: 'autopilot present and idle (before minSamples) / bare default stack',
      static: formatNs(nsPerDispatch.bare),
      autopilot: formatNs(nsPerDispatch.idle),
      measured: formatRatio(idleVsBare),
      target: '≤ 1.15×',
      verdict: verdict(idleVsBare.median <= 1.15, false),
    },
    {
      trace: 'per dispatch, immediate tool',
      measure: `hedge-eligible success past warm-up / bare default stack${settings.config.wired.hedge ? '' : ' (measured without hedging)'}`,
      static: formatNs(nsPerDispatch.bare),
      autopilot: formatNs(nsPerDispatch.warm),
      measured: formatRatio(warmVsBare),
      target: '≤ 1.3×',
      verdict: verdict(warmVsBare.median <= 1.3, true),
    },
    {
      trace: `memory, ${tools.toLocaleString('en-US').replaceAll(',', ' ')} tools`,
      measure: 'heap per tool, each with a full window of spread latencies',
      static: '—',
      autopilot: `${(bytesPerTool / 1_024).toFixed(2)} KiB`,
      measured: `${(bytesPerTool / 1_024).toFixed(2)} KiB`,
      target: '≤ 16 KiB',
      verdict: verdict(bytesPerTool <= 16 * 1_024, false),
    },
  ];
  return { rows, idleVsBare, warmVsBare, nsPerDispatch, bytesPerTool, tools };
}

/**
 * The micro rows' three dispatchers of `toolName` (a hedge-eligible immediate tool): the bare
 * default stack, the autopilot on `config`'s options kept idle (`minSamples` never reached), and
 * the autopilot past warm-up (its samples taken before this returns).
 */
export async function microDispatchers(
  lib: Library,
  config: PilotConfig,
): Promise<Record<'bare' | 'idle' | 'warm', Dispatcher>> {
  const registry = new lib.ToolRegistry().register({
    name: toolName,
    inputSchema: argsSchema,
    idempotent: true,
    handler: immediateHandler,
  });
  const idleOptions = {
    ...config.options,
    timeout: { ...(config.options.timeout || {}), minSamples: neverMinSamples },
    ...(config.wired.hedge
      ? { hedge: { quantile: 0.95, maxExtraLoad: 0.05, minSamples: neverMinSamples } }
      : {}),
  };
  const dispatchers = {
    bare: lib.createDispatcher(lib.defaultStack({ registry })),
    idle: lib.createDispatcher(lib.defaultStack({ registry, autopilot: lib.autopilot(idleOptions) })),
    warm: lib.createDispatcher(lib.defaultStack({ registry, autopilot: lib.autopilot(config.options) })),
  };
  // Past warm-up: the warm case has its samples before the first round.
  for (let call = 0; call < 1_000; call++) await dispatchers.warm.dispatch(toolName, smallArgs);
  return dispatchers;
}

/** The two per-dispatch ratios and the three cases' ns, in interleaved rounds of one process. */
export async function perDispatch(
  settings: MicroSettings,
): Promise<Pick<MicroResults, 'idleVsBare' | 'warmVsBare' | 'nsPerDispatch'>> {
  const dispatchers = await microDispatchers(settings.lib, settings.config);
  const cases = Object.entries(dispatchers).map(([id, dispatcher]) => successCase(id, dispatcher, toolName));
  const options: GroupOptions = settings.quick
    ? { rounds: 21, warmupRounds: 3, warmupMs: 1_000, batchMs: 10 }
    : { rounds: 40, warmupRounds: 5, warmupMs: 3_000, batchMs: 25 };
  const group = await runGroup(cases, options);
  const ns = (id: string) => caseById(group, id).wall.median;
  return {
    idleVsBare: pairedRatio(group, 'idle', 'bare'),
    warmVsBare: pairedRatio(group, 'warm', 'bare'),
    nsPerDispatch: { bare: ns('bare'), idle: ns('idle'), warm: ns('warm') },
  };
}

// `gc()` without starting Node with --expose-gc: the flag, then a fresh context's global.
function collector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/**
 * Heap growth per tool once `tools` tools each have `samplesPerTool` successes of spread latencies
 * (lognormal, σ = 1, so a window's buckets fill as far as real latencies would). The autopilot's
 * clock is moved by the handler itself, so the latencies are virtual.
 */
async function memoryPerTool(settings: MicroSettings, tools: number): Promise<number> {
  const { lib, config } = settings;
  const gc = collector();
  let now = 0;
  let seed = 0x2545f491;
  const uniform = () => {
    seed = (Math.imul(seed, 1_664_525) + 1_013_904_223) >>> 0;
    return (seed + 0.5) / 4_294_967_296;
  };
  const clock = {
    now: () => now,
    setTimeout: (callback: () => void, ms: number) => setTimeout(callback, ms),
    clearTimeout: (handle: unknown) => clearTimeout(handle as NodeJS.Timeout),
  };
  const registry = new lib.ToolRegistry();
  const names = Array.from({ length: tools }, (_, index) => `bench.tool_${index}`);
  for (const name of names) {
    registry.register({
      name,
      inputSchema: argsSchema,
      idempotent: true,
      handler: async (args) => {
        // A lognormal latency of median 200 ms: Box–Muller on two uniforms.
        const normal = Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
        now += 200 * Math.exp(normal);
        return args.limit;
      },
    });
  }
  const pilot = lib.autopilot({ ...config.options, clock });
  const dispatcher = lib.createDispatcher(lib.defaultStack({ registry, autopilot: pilot }));
  // Every layer's own first-call state is made before the baseline.
  await dispatcher.dispatch(toolName, smallArgs).catch(() => undefined);
  gc();
  const before = process.memoryUsage().heapUsed;
  const samplesPerTool = 300;
  const baseStepMs = 60_000 / (tools * samplesPerTool);
  // Each call's latency is virtual and the clock returns to a base that creeps forward, so all of
  // the run stays inside one window and no tool goes idle: the window's worst case.
  let base = 0;
  for (let round = 0; round < samplesPerTool; round++) {
    for (const name of names) {
      await dispatcher.dispatch(name, smallArgs);
      base += baseStepMs;
      now = base;
    }
  }
  gc();
  const after = process.memoryUsage().heapUsed;
  if (pilot.snapshot(names[0] as string).samples < 200)
    throw new Error('memory: the tools lost their windows');
  return (after - before) / tools;
}
