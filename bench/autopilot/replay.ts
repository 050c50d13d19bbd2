/**
 * The autopilot bench's replay: one seeded trace through the real default stack (error mapping to
 * timeout, with or without an `autopilot()`), on the virtual clock, against the simulated tool.
 * Only time and the tool are simulated; every layer runs as in production.
 * @module
 */

import { z } from 'zod';
import {
  type AutopilotOptions,
  type AutopilotSnapshot,
  autopilot,
  createDispatcher,
  defaultStack,
  type Outcome,
  ToolRegistry,
} from '../../index.js';
import type { ToolContext } from '../../src/types.js';
import { mixSeeds, seededRandom } from './random.js';
import { ServerPool, type SimulatedCall, simulatedTool } from './simulated-tool.js';
import { type Trace, traceParameters } from './traces.js';
import { VirtualClock } from './virtual-clock.js';

/** The simulated tool's name in every replay. */
export const simulatedToolName = 'sim.search';

/** How one replay is set up. */
export interface ReplaySetup {
  /** The autopilot's options (its clock is the replay's), or `undefined` for today's static stack. */
  readonly autopilot?: AutopilotOptions | undefined;
  /** The tool's own `timeoutMs`. @default undefined (the timeout layer's 30 s) */
  readonly toolTimeoutMs?: number | undefined;
  /** The static `concurrencyLimit` max. @default 8 */
  readonly concurrencyMax?: number | undefined;
  /** Called on every call's outcome, at its virtual time, with the autopilot's snapshot reader. */
  readonly onSettled?: ((call: number, outcome: Outcome, at: number, pilot: PilotView) => void) | undefined;
}

/** What `onSettled` may read of the autopilot (nothing when the replay is static). */
export interface PilotView {
  snapshot(): AutopilotSnapshot | undefined;
}

/** What one replay measured. */
export interface ReplayResult {
  /** Each call's time from arrival to outcome, in virtual ms. */
  readonly latencyMs: Float64Array;
  /** 1 where the call succeeded. */
  readonly ok: Uint8Array;
  /** Tool attempts started (the handler ran), first attempts, retries and hedges. */
  readonly attempts: number;
  /** Attempts started per call. */
  readonly attemptsByCall: Uint8Array;
  /** Attempts a timeout cut off whose plan would have answered. */
  readonly cutOffWouldSucceed: number;
  /** For each hung attempt (one that never answers), the virtual ms until it was cut off. */
  readonly hungLostMs: readonly number[];
  /** Real milliseconds the replay took. */
  readonly wallMs: number;
}

// The timeout layer and the autopilot abort an attempt they cut off with a `timeout` envelope.
function isTimeoutReason(reason: unknown): boolean {
  return typeof reason === 'object' && reason !== null && (reason as { kind?: unknown }).kind === 'timeout';
}

/**
 * Replays `trace` through `createDispatcher(defaultStack(...))`: each call dispatched at its
 * arrival on the virtual clock, the clock run until every call has its outcome.
 *
 * @example
 * const result = await replay(makeTrace('steady', { calls: 20_000 }), { autopilot: {} });
 */
export async function replay(trace: Trace, setup: ReplaySetup = {}): Promise<ReplayResult> {
  const startedAt = performance.now();
  const clock = new VirtualClock();
  const pool =
    trace.servers === undefined
      ? undefined
      : new ServerPool(clock, trace.servers, traceParameters.capacity.queueLimit);
  const tool = simulatedTool(trace, clock, pool);
  let cutOffWouldSucceed = 0;
  const attemptsByCall = new Uint8Array(trace.calls);
  const hungLostMs: number[] = [];
  const handler = async (args: SimulatedCall, ctx: ToolContext): Promise<string> => {
    const attemptStartedAt = clock.now();
    attemptsByCall[args.call] = Math.min(255, (attemptsByCall[args.call] as number) + 1);
    try {
      return await tool.handler(args, ctx);
    } catch (error) {
      if (ctx.signal.aborted && isTimeoutReason(ctx.signal.reason)) {
        const plan = trace.plan(args.call, ctx.attempt - 1);
        if (Number.isFinite(plan.latencyMs)) cutOffWouldSucceed++;
        else hungLostMs.push(clock.now() - attemptStartedAt);
      }
      throw error;
    }
  };
  const registry = new ToolRegistry().register({
    name: simulatedToolName,
    inputSchema: z.object({ call: z.number() }),
    idempotent: true,
    ...(setup.toolTimeoutMs === undefined ? {} : { timeoutMs: setup.toolTimeoutMs }),
    handler,
  });
  const jitter = seededRandom(mixSeeds(0x6a697474, trace.calls));
  const probes = seededRandom(mixSeeds(0x70726f62, trace.calls));
  const pilot =
    setup.autopilot === undefined ? undefined : autopilot({ random: probes.next, ...setup.autopilot, clock });
  const dispatcher = createDispatcher(
    defaultStack({
      registry,
      retry: { clock, random: jitter.next },
      timeout: { clock },
      concurrency: { clock, max: setup.concurrencyMax ?? 8 },
      ...(pilot === undefined ? {} : { autopilot: pilot }),
    }),
    { now: clock.now },
  );
  const view: PilotView = { snapshot: () => pilot?.snapshot(simulatedToolName) };
  const latencyMs = new Float64Array(trace.calls);
  const ok = new Uint8Array(trace.calls);
  let settled = 0;
  for (let call = 0; call < trace.calls; call++) {
    const arrival = trace.arrivals[call] as number;
    clock.setTimeout(() => {
      void dispatcher.dispatch(simulatedToolName, { call }).then((outcome) => {
        const at = clock.now();
        latencyMs[call] = at - arrival;
        ok[call] = outcome.ok ? 1 : 0;
        settled++;
        setup.onSettled?.(call, outcome, at, view);
      });
    }, arrival);
  }
  await clock.run();
  if (settled !== trace.calls) {
    throw new Error(`replay of ${trace.name}: ${trace.calls - settled} calls never settled`);
  }
  return {
    latencyMs,
    ok,
    attempts: tool.started(),
    attemptsByCall,
    cutOffWouldSucceed,
    hungLostMs,
    wallMs: performance.now() - startedAt,
  };
}

/** The `q` quantile (0..1) of `values` (nearest rank), over the calls `include` keeps. */
export function quantileOf(
  values: Float64Array,
  q: number,
  include: (call: number) => boolean = () => true,
): number {
  const kept: number[] = [];
  for (let call = 0; call < values.length; call++) if (include(call)) kept.push(values[call] as number);
  if (kept.length === 0) return Number.NaN;
  const sorted = Float64Array.from(kept).sort();
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}
