// The brownout target of issue 34: every call 10× slower and 30 % failing transiently, replayed
// from the seeded bench trace through the real layers on a virtual clock. The retry budget's
// throttle holds attempts per logical call to ≤ 1.10 during the brownout (Finagle's deposits
// alone give ≈ 1.2, and the reserve of 10 a second lets a 5-a-second tool retry everything), and
// retries come back within two of the budget's windows after it ends.

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { mixSeeds, seededRandom } from '../../bench/autopilot/random.js';
import { simulatedTool } from '../../bench/autopilot/simulated-tool.js';
import { makeTrace, type Trace, traceParameters } from '../../bench/autopilot/traces.js';
import { VirtualClock } from '../../bench/autopilot/virtual-clock.js';
import {
  type AutopilotOptions,
  autopilot,
  createDispatcher,
  defaultStack,
  type Outcome,
  ToolRegistry,
} from '../../index.js';

const budgetWindowMs = 10_000;
// Outside the brownout, this share of attempts fails too: rare failures, which retries should fix.
const rareFailShare = 0.03;

// The bench's brownout trace with rare failures around the brownout, so that "retries as normal"
// before and after it can be seen (the trace alone never fails there).
function withRareFailures(trace: Trace): Trace {
  const last = trace.arrivals[trace.calls - 1] as number;
  const { from, to } = traceParameters.brownout;
  const inBrownout = (call: number) => {
    const progress = (trace.arrivals[call] as number) / last;
    return progress >= from && progress < to;
  };
  return {
    ...trace,
    plan: (call, attempt) => {
      const plan = trace.plan(call, attempt);
      if (inBrownout(call)) return plan;
      const random = seededRandom(mixSeeds(0x72617265, call, attempt));
      return random.chance(rareFailShare) ? { ...plan, fails: true } : plan;
    },
  };
}

interface Replay {
  /** Per call: arrival time and attempts its handler ran. */
  readonly arrivals: Float64Array;
  readonly attempts: Uint8Array;
  readonly outcomes: Outcome[];
  /** When the brownout starts and ends, in virtual ms. */
  readonly from: number;
  readonly to: number;
}

// Replays `trace` through defaultStack with an autopilot, every call dispatched at its arrival.
async function replay(
  trace: Trace,
  retryBudget: NonNullable<AutopilotOptions['retryBudget']>,
): Promise<Replay> {
  const clock = new VirtualClock();
  const tool = simulatedTool(trace, clock);
  const attempts = new Uint8Array(trace.calls);
  const registry = new ToolRegistry().register({
    name: 'sim',
    inputSchema: z.object({ call: z.number() }),
    idempotent: true,
    timeoutMs: 30_000,
    handler: async (args, ctx) => {
      attempts[args.call] = (attempts[args.call] as number) + 1;
      return await tool.handler(args, ctx);
    },
  });
  const pilot = autopilot({ clock, retryBudget, timeout: false });
  let seed = 1;
  const dispatcher = createDispatcher(
    defaultStack({
      registry,
      autopilot: pilot,
      concurrency: { max: 10_000 },
      retry: { clock, random: () => (seed = (seed * 16_807) % 2_147_483_647) / 2_147_483_647 },
      timeout: { clock },
    }),
    { now: clock.now },
  );
  const outcomes: Outcome[] = new Array(trace.calls);
  const pending: Promise<void>[] = [];
  for (let call = 0; call < trace.calls; call++) {
    clock.setTimeout(() => {
      pending.push(
        dispatcher.dispatch('sim', { call }).then((outcome) => {
          outcomes[call] = outcome;
        }),
      );
    }, trace.arrivals[call] as number);
  }
  await clock.run();
  await Promise.all(pending);
  const last = trace.arrivals[trace.calls - 1] as number;
  const { from, to } = traceParameters.brownout;
  return { arrivals: trace.arrivals, attempts, outcomes, from: from * last, to: to * last };
}

function attemptsPerCall(run: Replay, fromMs: number, toMs: number): number {
  let calls = 0;
  let attempts = 0;
  run.arrivals.forEach((at, call) => {
    if (at < fromMs || at >= toMs) return;
    calls++;
    attempts += run.attempts[call] as number;
  });
  return attempts / calls;
}

// Calls whose first attempt failed, and of those, how many were retried: retries "as normal".
function retriedShare(run: Replay, trace: Trace, fromMs: number, toMs: number): number {
  let failedFirst = 0;
  let retried = 0;
  run.arrivals.forEach((at, call) => {
    if (at < fromMs || at >= toMs || !trace.plan(call, 0).fails) return;
    failedFirst++;
    if ((run.attempts[call] as number) > 1) retried++;
  });
  return failedFirst === 0 ? Number.NaN : retried / failedFirst;
}

describe('the brownout trace through the real layers', () => {
  const trace = withRareFailures(makeTrace('brownout', { seed: 7, calls: 20_000, ratePerSecond: 5 }));

  it('holds attempts per logical call to 1.10 during the brownout, and retries as normal within two windows of its end', async () => {
    const run = await replay(trace, { ratio: 0.2, minPerSecond: 10 });
    const during = attemptsPerCall(run, run.from, run.to);
    expect(during).toBeLessThanOrEqual(1.1);
    // Rare failures before it are all retried; so are those from two windows after its end on.
    expect(retriedShare(run, trace, 0, run.from)).toBe(1);
    expect(retriedShare(run, trace, run.to + 2 * budgetWindowMs, Infinity)).toBe(1);
    expect(attemptsPerCall(run, run.to + 2 * budgetWindowMs, Infinity)).toBeGreaterThan(
      1 + rareFailShare * 0.8,
    );
  }, 60_000);

  it("is what Finagle's deposits alone cannot do at this rate (the reserve covers every retry)", async () => {
    const run = await replay(trace, { ratio: 0.2, minPerSecond: 10, throttle: false });
    // Close to the static policy's 1 + 0.3 + 0.09.
    expect(attemptsPerCall(run, run.from, run.to)).toBeGreaterThan(1.3);
  }, 60_000);
});
