// runBranch: one of the library's layers (the autopilot's hedge) runs the layers inside more than once at the same time (a hedge); each run
// has a limit of its own, ends alone, and leaves the context's limits as the layer found them.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createDispatcher,
  type DispatchContext,
  DispatchError,
  errorMapping,
  type Middleware,
  type Outcome,
  timeout,
  type ToolContext,
  ToolRegistry,
  toolLookup,
} from '../index.js';
import { type Branch, runBranch } from '../middleware/internal-kit.js';
import { trusted } from '../src/internal/trusted.js';
import { flush, gate, type Gate } from './helpers/gate.js';

beforeEach(() => vi.useFakeTimers({ now: 0 }));
afterEach(() => vi.useRealTimers());

// What a branching layer does as a run settles: reads the outcome it left, then restores its limits.
function settledOf(ctx: DispatchContext, branch: Branch | undefined): Promise<Outcome | undefined> {
  if (branch === undefined) throw new Error('no branch on the context');
  return branch.running.then(
    () => {
      const { outcome } = ctx;
      branch.restore();
      return outcome;
    },
    (error: unknown) => {
      branch.restore();
      throw error;
    },
  );
}

// Two runs of the handler: the first held open, the second answering when its gate opens.
function twoRuns(seen: { signals: AbortSignal[]; gates: Gate<string>[] }) {
  return new ToolRegistry().register({
    name: 'op',
    inputSchema: z.object({}),
    idempotent: true,
    handler: (_args, ctx: ToolContext) => {
      seen.signals.push(ctx.signal);
      const held = gate<string>();
      seen.gates.push(held);
      return held.promise;
    },
  });
}

describe('runBranch', () => {
  it('runs two attempts side by side, ends the loser alone and restores the limits as found', async () => {
    const seen = { signals: [] as AbortSignal[], gates: [] as Gate<string>[] };
    const found: { signal?: AbortSignal; deadline?: number; after?: [AbortSignal, number] } = {};
    const outcomes: Array<Outcome | undefined> = [];
    const hedging: Middleware = trusted(async (ctx: DispatchContext, next) => {
      found.signal = ctx.signal;
      found.deadline = ctx.deadline;
      const first = runBranch(ctx, next);
      const second = runBranch(ctx, next);
      if (first === undefined || second === undefined) throw new Error('no branch on the context');
      // Each run's limits were put back as its synchronous part returned.
      expect([ctx.signal, ctx.deadline]).toEqual([found.signal, found.deadline]);
      outcomes.push(await settledOf(ctx, second));
      first.end(new DispatchError('cancelled', 'the other attempt answered first'), 'lost');
      await settledOf(ctx, first).catch((error: unknown) => outcomes.push(error as Outcome));
      found.after = [ctx.signal, ctx.deadline];
      ctx.outcome = outcomes[0];
    });
    const dispatcher = createDispatcher([errorMapping(), toolLookup(twoRuns(seen)), hedging, timeout()]);
    const call = dispatcher.dispatch('op', {});
    await flush();
    expect(seen.signals).toHaveLength(2);
    seen.gates[1]?.open('second');
    const outcome = await call;
    expect(outcome).toMatchObject({ ok: true, result: 'second' });
    expect(seen.signals[0]?.aborted).toBe(true);
    expect(seen.signals[0]?.reason).toBe('lost');
    expect(seen.signals[1]?.aborted).toBe(false);
    expect(outcomes[1]).toMatchObject({ kind: 'cancelled', message: 'the other attempt answered first' });
    expect(found.after).toEqual([found.signal, found.deadline]);
    // The loser's late answer changes nothing.
    seen.gates[0]?.open('first');
    await flush();
    expect(outcome).toMatchObject({ result: 'second' });
  });

  it('reads each run its own outcome, whichever settles last', async () => {
    const seen = { signals: [] as AbortSignal[], gates: [] as Gate<string>[] };
    let settled: Array<Outcome | undefined> = [];
    const both: Middleware = trusted(async (ctx: DispatchContext, next) => {
      const runs = [runBranch(ctx, next), runBranch(ctx, next)];
      settled = await Promise.all(runs.map((run) => settledOf(ctx, run)));
      ctx.outcome = settled[0];
    });
    const dispatcher = createDispatcher([errorMapping(), toolLookup(twoRuns(seen)), both]);
    const call = dispatcher.dispatch('op', {});
    await flush();
    seen.gates[1]?.open('second');
    await flush();
    seen.gates[0]?.open('first');
    expect(await call).toMatchObject({ ok: true, result: 'first' });
    expect(settled.map((outcome) => (outcome?.ok ? outcome.result : outcome))).toEqual(['first', 'second']);
  });

  it('ends both runs with the deadline outside them', async () => {
    const seen = { signals: [] as AbortSignal[], gates: [] as Gate<string>[] };
    const both: Middleware = trusted(async (ctx: DispatchContext, next) => {
      const runs = [runBranch(ctx, next), runBranch(ctx, next)];
      const ends = await Promise.allSettled(runs.map((run) => settledOf(ctx, run)));
      expect(ends.map((end) => end.status)).toEqual(['rejected', 'rejected']);
      throw (ends[0] as PromiseRejectedResult).reason;
    });
    const dispatcher = createDispatcher([
      errorMapping(),
      toolLookup(twoRuns(seen)),
      timeout({ defaultMs: 100 }),
      both,
    ]);
    const call = dispatcher.dispatch('op', {});
    await vi.advanceTimersByTimeAsync(100);
    expect(await call).toMatchObject({ ok: false, kind: 'timeout' });
    expect(seen.signals.every((signal) => signal.aborted)).toBe(true);
  });

  it('is undefined on a context the dispatcher did not make', () => {
    expect(runBranch({} as DispatchContext, () => Promise.resolve())).toBeUndefined();
  });
});
