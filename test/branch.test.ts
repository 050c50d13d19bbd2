// runBranch: one of the library's layers (the autopilot's hedge) runs the layers inside a second time beside the first (a hedge):
// the second under a limit set like the first's, so either ends alone, and the context's limits stay as the layer found them.

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

// What a branching layer does first: sets the limit the first run goes under (the autopilot's deadline).
function limited(ctx: DispatchContext, timeoutMs?: number): () => void {
  return ctx.limit(timeoutMs === undefined ? {} : { timeoutMs });
}

describe('runBranch', () => {
  it('runs an attempt beside the one under the current limit; either ends alone; the limits are as found', async () => {
    const seen = { signals: [] as AbortSignal[], gates: [] as Gate<string>[] };
    const found: { signal?: AbortSignal; deadline?: number; after?: [AbortSignal, number] } = {};
    const outcomes: Array<Outcome | undefined> = [];
    const hedging: Middleware = trusted(async (ctx: DispatchContext, next) => {
      const restore = limited(ctx, 1_000);
      found.signal = ctx.signal;
      found.deadline = ctx.deadline;
      const first = next();
      const second = runBranch(ctx, next);
      if (second === undefined) throw new Error('no branch on the context');
      // The run beside was started on the limits outside the current one, and they are put back.
      expect([ctx.signal, ctx.deadline]).toEqual([found.signal, found.deadline]);
      outcomes.push(await settledOf(ctx, second));
      second.endBeside(new DispatchError('cancelled', 'the other attempt answered first'), 'lost');
      await first.catch((error: unknown) => outcomes.push(error as Outcome));
      found.after = [ctx.signal, ctx.deadline];
      restore();
      ctx.outcome = outcomes[0];
    });
    const dispatcher = createDispatcher([errorMapping(), toolLookup(twoRuns(seen)), hedging]);
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

  it('ends the run beside alone, and the first one goes on', async () => {
    const seen = { signals: [] as AbortSignal[], gates: [] as Gate<string>[] };
    const both: Middleware = trusted(async (ctx: DispatchContext, next) => {
      const restore = limited(ctx);
      const first = next();
      const second = runBranch(ctx, next) as Branch;
      second.end(new DispatchError('cancelled', 'the other attempt answered first'), 'lost');
      await expect(settledOf(ctx, second)).rejects.toMatchObject({ kind: 'cancelled' });
      seen.gates[0]?.open('first');
      await first;
      restore();
    });
    const dispatcher = createDispatcher([errorMapping(), toolLookup(twoRuns(seen)), both]);
    expect(await dispatcher.dispatch('op', {})).toMatchObject({ ok: true, result: 'first' });
    expect(seen.signals.map((signal) => signal.aborted)).toEqual([false, true]);
  });

  it('reads each run its own outcome, whichever settles last', async () => {
    const seen = { signals: [] as AbortSignal[], gates: [] as Gate<string>[] };
    let settled: Array<Outcome | undefined> = [];
    const both: Middleware = trusted(async (ctx: DispatchContext, next) => {
      const restore = limited(ctx);
      const first = next().then(() => ctx.outcome);
      const second = settledOf(ctx, runBranch(ctx, next));
      settled = await Promise.all([first, second]);
      restore();
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

  it("gives the run beside a deadline of the current limit's length, counted from its own start", async () => {
    const seen = { signals: [] as AbortSignal[], gates: [] as Gate<string>[] };
    const ends: Array<[string, number]> = [];
    const both: Middleware = trusted(async (ctx: DispatchContext, next) => {
      const restore = limited(ctx, 100);
      const first = next().catch((error: unknown) => {
        ends.push([(error as DispatchError).kind, Date.now()]);
      });
      await vi.advanceTimersByTimeAsync(40);
      const second = settledOf(ctx, runBranch(ctx, next)).catch((error: unknown) => {
        ends.push([(error as DispatchError).kind, Date.now()]);
      });
      await Promise.all([first, second]);
      restore();
      throw new DispatchError('timeout', 'both timed out');
    });
    const dispatcher = createDispatcher([errorMapping(), toolLookup(twoRuns(seen)), both]);
    const call = dispatcher.dispatch('op', {});
    await vi.advanceTimersByTimeAsync(200);
    expect(await call).toMatchObject({ ok: false, kind: 'timeout' });
    expect(ends).toEqual([
      ['timeout', 100],
      ['timeout', 140],
    ]);
  });

  it('ends both runs with the deadline outside them', async () => {
    const seen = { signals: [] as AbortSignal[], gates: [] as Gate<string>[] };
    const both: Middleware = trusted(async (ctx: DispatchContext, next) => {
      const restore = limited(ctx);
      const runs = [next(), settledOf(ctx, runBranch(ctx, next))];
      const ends = await Promise.allSettled(runs);
      restore();
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

  it('is undefined with no current limit, and on a context the dispatcher did not make', async () => {
    const branches: unknown[] = [];
    const bare: Middleware = trusted(async (ctx: DispatchContext, next) => {
      branches.push(runBranch(ctx, next));
      await next();
    });
    const dispatcher = createDispatcher([
      errorMapping(),
      toolLookup(new ToolRegistry().register({ name: 'op', inputSchema: z.object({}), handler: () => 'ok' })),
      bare,
    ]);
    expect(await dispatcher.dispatch('op', {})).toMatchObject({ ok: true });
    expect(branches).toEqual([undefined]);
    expect(runBranch({} as DispatchContext, () => Promise.resolve())).toBeUndefined();
  });
});
