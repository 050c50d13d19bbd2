/**
 * The floor under the autopilot's per-dispatch rows (issue 34): what any layer in its place must
 * pay, measured beside the bare default stack and the autopilot itself in the same interleaved
 * rounds. Each floor is a bare layer right outside `timeout`, as the autopilot sits:
 *
 * - `hop`: a layer that answers its inner layers with one `.then` and does nothing else;
 * - `timed`: the same, timing the attempt (a clock reading at each end) into a tool window (one
 *   sketch insert): the least an autopilot that learns latencies can do;
 * - `timed+deposit`: `timed` with a `retryBudget()` deposit per call (one clock reading, the
 *   memory ledger and its throttle);
 * - `timed+limit`: `timed` under an enforced deadline of its own (`ctx.limit` with `timeoutMs`,
 *   and `untilLimitEnds`): the least an adaptive timeout can cost on the core's limits;
 * - `idle` and `warm`: the autopilot on the options, before `minSamples` and past it,
 *   for a hedge-eligible tool (the rows of `bench/autopilot.ts`).
 *
 *   npx tsx bench/autopilot/floor.ts [--quick] [--source | --prebuilt | --library path]
 * @module
 */

import { caseById, type GroupResult, runGroup } from '../harness.js';
import { loadLibrary, loadOptionsFromArgv } from '../library.js';
import { argsSchema, immediateHandler, smallArgs } from '../stacks.js';
import { successCase } from './micro.js';
import { pilotConfig } from './scenarios.js';

type Next = () => Promise<void>;
interface LimitContext {
  readonly toolName: string;
  limit(limits: object): () => void;
}
interface Window {
  record(tool: string, outcome: 'success', latencyMs: number, now: number): void;
}

const loaded = await loadLibrary(loadOptionsFromArgv(process.argv));
const { lib } = loaded;
// The library's own internals, from the same build: a floor layer is trusted as the autopilot is.
const internal = async <T>(path: string): Promise<T> => (await import(new URL(path, loaded.entry).href)) as T;
const { trusted } = await internal<{ trusted: <T>(layer: T) => T }>('./src/internal/trusted.js');
const { toolStats } = await internal<{ toolStats: () => Window }>('./middleware/autopilot/tool-stats.js');
const { untilLimitEnds, systemClock } = await internal<{
  untilLimitEnds: (ctx: unknown, running: Promise<void>) => Promise<void>;
  systemClock: unknown;
}>('./middleware/kit.js');

const toolName = 'bench.pilot';
const registry = new lib.ToolRegistry().register({
  name: toolName,
  inputSchema: argsSchema,
  idempotent: true,
  handler: immediateHandler,
});
const bare = lib.defaultStack({ registry });
// `layer` where the autopilot sits: inside retry (and the rate limits), right outside `timeout`.
const stackWith = (layer: unknown, stack = lib.defaultStack({ registry })) => {
  stack.splice(stack.length - 1, 0, layer as (typeof stack)[number]);
  return lib.createDispatcher(stack);
};

const window = toolStats();
const timedLayer = (limits?: object) =>
  trusted((ctx: LimitContext, next: Next): Promise<void> => {
    const startedAt = Date.now();
    if (limits === undefined) {
      return next().then(() => {
        const now = Date.now();
        window.record(ctx.toolName, 'success', now - startedAt, now);
      });
    }
    const restore = ctx.limit(limits);
    return untilLimitEnds(ctx, next()).then(() => {
      restore();
      const now = Date.now();
      window.record(ctx.toolName, 'success', now - startedAt, now);
    });
  });
const budget = lib.retryBudget({ ratio: 0.2, minPerSecond: 10 });
const withDeposit = lib.defaultStack({
  registry,
  retry: { budget: { deposit: () => budget.deposit(), tryWithdraw: async () => budget.tryWithdraw() } },
});

const { options } = pilotConfig();
const never = 1_000_000_000;
const idleOptions = {
  ...options,
  timeout: { ...(options.timeout || {}), minSamples: never },
  hedge: { ...(options.hedge || {}), minSamples: never },
};
const dispatchers = {
  bare: lib.createDispatcher(bare),
  hop: stackWith(trusted((_ctx: unknown, next: Next) => next().then(() => undefined))),
  timed: stackWith(timedLayer()),
  'timed+deposit': stackWith(timedLayer(), withDeposit),
  'timed+limit': stackWith(timedLayer(Object.freeze({ timeoutMs: 1_000, clock: systemClock }))),
  idle: lib.createDispatcher(lib.defaultStack({ registry, autopilot: lib.autopilot(idleOptions) })),
  warm: lib.createDispatcher(lib.defaultStack({ registry, autopilot: lib.autopilot(options) })),
};
for (let call = 0; call < 1_000; call++) await dispatchers.warm.dispatch(toolName, smallArgs);

const quick = process.argv.includes('--quick');
const group = await runGroup(
  Object.entries(dispatchers).map(([id, dispatcher]) => successCase(id, dispatcher, toolName)),
  quick
    ? { rounds: 21, warmupRounds: 3, warmupMs: 1_000, batchMs: 10 }
    : { rounds: 40, warmupRounds: 5, warmupMs: 3_000, batchMs: 25 },
);

// The median over rounds of each round's ratio to the bare stack, in wall and in CPU time.
function ratioToBare(result: GroupResult, id: string, kind: 'nsPerOp' | 'cpuNsPerOp'): number {
  const own = caseById(result, id)[kind];
  const base = caseById(result, 'bare')[kind];
  const ratios = own.map((value, round) => value / (base[round] as number)).sort((a, b) => a - b);
  return ratios[Math.floor(ratios.length / 2)] as number;
}

console.log('per dispatch / bare default stack (median of interleaved rounds)');
for (const id of Object.keys(dispatchers)) {
  const wall = caseById(group, id).wall.median;
  console.log(
    `  ${id.padEnd(14)} ${(wall / 1_000).toFixed(2)} µs   ${ratioToBare(group, id, 'nsPerOp').toFixed(2)}× wall   ${ratioToBare(group, id, 'cpuNsPerOp').toFixed(2)}× cpu`,
  );
}
