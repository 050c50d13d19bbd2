/**
 * The floor under the autopilot's per-dispatch rows (issue 34): what any layer in its place must
 * pay, measured beside the bare default stack and the autopilot itself in the same interleaved
 * rounds. `defaultStack({ autopilot })` puts the autopilot in the timeout layer's place, giving
 * each attempt its deadline; so each floor is a bare layer there, doing the timeout's work
 * (`ctx.limit` with the static 30 s, or a tuned 1 s, and `untilLimitEnds`) and little more:
 *
 * - `in place`: the timeout's work with one `.then`, and nothing else;
 * - `timed`: the same, timing the attempt (a clock reading at each end) into a tool window (one
 *   sketch insert): the least an autopilot that learns latencies can do;
 * - `timed+deposit`: `timed` paying into a per-tool `retryBudget()` on its start reading (the
 *   memory ledger and its throttle), as the autopilot's retry budget makes it;
 * - `beside`: `timed` right outside the timeout layer, as a layer of a hand-built stack sits
 *   (two limits per attempt: what the preset's autopilot no longer pays);
 * - `every knob`: `timed+deposit` with each other knob's least per attempt: a slot of a gradient
 *   limit's semaphore taken and given back, the round trip into its window, the hedge budget paid
 *   into and a frozen policy on the outcome; `every knob, hedged` adds the attempt's hedge timer
 *   (a node of a coalesced scheduler, set and cleared): the floor of the configuration,
 *   idle and past warm-up;
 * - `idle` and `warm`: the autopilot on the options, before `minSamples` and past it,
 *   for a hedge-eligible tool (the rows of `bench/autopilot.ts`).
 *
 *   npx tsx bench/autopilot/floor.ts [--quick] [--source | --prebuilt | --library path]
 * @module
 */

import { caseById, type GroupResult, runGroup } from '../harness.js';
import { loadLibrary, loadOptionsFromArgv } from '../library.js';
import { argsSchema, immediateHandler } from '../stacks.js';
import { microDispatchers, successCase, toolName } from './micro.js';
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

const registry = new lib.ToolRegistry().register({
  name: toolName,
  inputSchema: argsSchema,
  idempotent: true,
  handler: immediateHandler,
});
const bare = lib.defaultStack({ registry });
// `layer` where the preset's autopilot sits: inside retry (and the rate limits), in the timeout's place.
const inTimeoutPlace = (layer: unknown) => {
  const stack = lib.defaultStack({ registry });
  stack.splice(stack.length - 1, 1, layer as (typeof stack)[number]);
  return lib.createDispatcher(stack);
};
// `layer` right outside `timeout`, as in a hand-built stack.
const besideTimeout = (layer: unknown) => {
  const stack = lib.defaultStack({ registry });
  stack.splice(stack.length - 1, 0, layer as (typeof stack)[number]);
  return lib.createDispatcher(stack);
};

const window = toolStats();
const { storeRetryBudget } = await internal<{
  storeRetryBudget: (options: object) => { depositAt(now: number): void };
}>('./middleware/autopilot/retry-budget.js');
const budget = storeRetryBudget({ ratio: 0.2, minPerSecond: 10, key: `retry:${toolName}` });
const staticLimits = Object.freeze({ timeoutMs: 30_000, clock: systemClock });
// A layer that times each attempt into the window (and pays into the budget), under `limits`.
const timedLayer = (limits: object | undefined, deposit = false) =>
  trusted((ctx: LimitContext, next: Next): Promise<void> => {
    const startedAt = Date.now();
    if (deposit) budget.depositAt(startedAt);
    const restore = limits === undefined ? undefined : ctx.limit(limits);
    const running = restore === undefined ? next() : untilLimitEnds(ctx, next());
    return running.then(() => {
      restore?.();
      const now = Date.now();
      window.record(ctx.toolName, 'success', now - startedAt, now);
    });
  });
// Every knob at its least: `timed+deposit`, one of the tool's slots taken and given back (a
// gradient limit's semaphore), the round trip into its gradient window, the hedge budget paid
// into, a frozen policy on the outcome; `hedged` adds the attempt's hedge timer, set and cleared.
const { GradientLimit } = await internal<{
  GradientLimit: new (
    options: object,
  ) => { readonly limit: number; record(ms: number, now: number, inFlight: number): void };
}>('./middleware/autopilot/gradient.js');
const { LimitSemaphore } = await internal<{
  LimitSemaphore: new (
    capacity: () => number,
  ) => { tryTake(): boolean; give(): void; readonly inFlight: number };
}>('./middleware/autopilot/limit-semaphore.js');
const { HedgeBudget } = await internal<{ HedgeBudget: new () => { deposit(): void } }>(
  './middleware/autopilot/hedge.js',
);
const { DeadlineScheduler } = await internal<{
  DeadlineScheduler: new (clock: unknown) => { schedule(node: object): void; cancel(node: object): void };
}>('./middleware/internal-kit.js');
const gradient = new GradientLimit({ min: 1, max: 64, probeQuietCalls: true });
const slots = new LimitSemaphore(() => gradient.limit);
const hedgeBudget = new HedgeBudget();
const hedgeTimers = new DeadlineScheduler(systemClock);
const quietPolicy = Object.freeze({ mode: 'enforce', timeoutMs: 30_000, source: 'static', cutOff: false });
const everyKnobLayer = (hedged: boolean) =>
  trusted((ctx: LimitContext & { outcome?: object }, next: Next): Promise<void> => {
    const startedAt = Date.now();
    budget.depositAt(startedAt);
    hedgeBudget.deposit();
    slots.tryTake();
    const node = hedged
      ? {
          ms: 1_000,
          at: startedAt + 1_000,
          cancelled: false,
          list: undefined,
          previous: undefined,
          next: undefined,
          expire() {},
        }
      : undefined;
    if (node !== undefined) hedgeTimers.schedule(node);
    const restore = ctx.limit(staticLimits);
    return untilLimitEnds(ctx, next()).then(() => {
      restore();
      if (node !== undefined) hedgeTimers.cancel(node);
      const now = Date.now();
      window.record(ctx.toolName, 'success', now - startedAt, now);
      gradient.record(now - startedAt, now, slots.inFlight);
      slots.give();
      (ctx.outcome as { policy?: object }).policy = quietPolicy;
    });
  });
const inPlace = trusted((ctx: LimitContext, next: Next): Promise<void> => {
  const restore = ctx.limit(staticLimits);
  return untilLimitEnds(ctx, next()).then(restore);
});

// The autopilot's own cases are the micro rows' (the warm one past warm-up already).
const micro = await microDispatchers(lib, pilotConfig());
const dispatchers = {
  bare: lib.createDispatcher(bare),
  'in place': inTimeoutPlace(inPlace),
  timed: inTimeoutPlace(timedLayer(staticLimits)),
  'timed+deposit': inTimeoutPlace(timedLayer(staticLimits, true)),
  beside: besideTimeout(timedLayer(undefined)),
  'every knob': inTimeoutPlace(everyKnobLayer(false)),
  'every knob, hedged': inTimeoutPlace(everyKnobLayer(true)),
  idle: micro.idle,
  warm: micro.warm,
};

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
