// Hedging and adaptive concurrency wired into the autopilot layer, through the real default stack
// on fake timers: the hedge starts past the live quantile, the first success wins, the loser is
// aborted, and only repeatable tools are ever hedged.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AutopilotOptions, Outcome } from '../../index.js';
import { countListeners } from '../helpers/listener-count.js';
import { scriptedTool } from '../helpers/scripted-tool.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

interface Setup {
  pilot?: AutopilotOptions;
  idempotent?: boolean;
  readOnly?: boolean;
  maxAttempts?: number;
}

const hedgeQuick = { quantile: 0.9, maxExtraLoad: 1, minSamples: 20 };

// The scripted 'quote' tool (then `fallbackMs` a call), answering how long it took.
function setup({
  pilot: options = { hedge: hedgeQuick },
  idempotent = true,
  readOnly,
  maxAttempts = 1,
}: Setup = {}) {
  let fallbackMs = 100;
  const world = scriptedTool({
    name: 'quote',
    timeoutMs: 10_000,
    idempotent,
    readOnly,
    pilot: { timeout: false, retryBudget: false, ...options },
    retry: { maxAttempts, random: () => 0, baseDelayMs: 10 },
    fallback: () => ({ ms: fallbackMs }),
    answer: (attempt) => `answered after ${attempt.ms} ms`,
  });
  const { dispatcher, script: plans } = world;
  const call = async (options: { idempotencyKey?: string } = {}): Promise<Outcome> => {
    const pending = dispatcher.dispatch('quote', {}, options);
    await vi.advanceTimersByTimeAsync(6_000);
    return await pending;
  };
  // One call at a time, each given just its time: the window (5 min) holds them all.
  const warmUp = async (count: number, ms: number) => {
    fallbackMs = ms;
    for (let i = 0; i < count; i++) {
      const pending = dispatcher.dispatch('quote', {});
      await vi.advanceTimersByTimeAsync(ms);
      expect((await pending).ok).toBe(true);
    }
  };
  // A call its caller cancels `afterMs` into it.
  const cancelledCall = async (afterMs: number): Promise<Outcome> => {
    const controller = new AbortController();
    const pending = dispatcher.dispatch('quote', {}, { signal: controller.signal });
    await vi.advanceTimersByTimeAsync(afterMs);
    controller.abort(new Error('user left'));
    await vi.advanceTimersByTimeAsync(0);
    return await pending;
  };
  return { ...world, plans, call, warmUp, cancelledCall };
}

describe('autopilot: hedging', () => {
  it('starts one hedge past the live quantile; the first success wins and the other is aborted', async () => {
    const { dispatcher, warmUp, plans, runs, events, pilot } = setup();
    await warmUp(20, 100);
    const hedgeAfterMs = pilot.snapshot('quote').hedgeAfterMs as number;
    expect(hedgeAfterMs).toBeGreaterThanOrEqual(99);
    expect(hedgeAfterMs).toBeLessThanOrEqual(102);
    events.length = 0;
    runs.started = 0;
    plans.push({ ms: 5_000 }, { ms: 100 });
    let outcome: Outcome | undefined;
    void dispatcher.dispatch('quote', {}).then((answered) => {
      outcome = answered;
    });
    // The hedge delay plus the hedge's own 100 ms, not the straggler's 5 s.
    await vi.advanceTimersByTimeAsync(hedgeAfterMs + 100);
    expect(outcome).toMatchObject({ ok: true, result: 'answered after 100 ms', policy: { hedged: true } });
    expect(runs).toMatchObject({ started: 2, aborted: 1 });
    expect(events.filter((event) => event.type === 'dispatch.attempt')).toHaveLength(2);
    expect(events.find((event) => event.type === 'autopilot.hedge')).toMatchObject({
      decision: 'started',
      hedgeAfterMs,
    });
    expect(vi.getTimerCount()).toBe(0);
    // One sample for the call: the first attempt's time at its abort, never the aborted one as fast.
    expect(pilot.snapshot('quote').samples).toBe(21);
  });

  it('keeps the first attempt when it answers first, and aborts the hedge', async () => {
    const { call, warmUp, plans, runs } = setup();
    await warmUp(20, 100);
    runs.aborted = 0;
    plans.push({ ms: 150 }, { ms: 1_000 });
    expect(await call()).toMatchObject({
      ok: true,
      result: 'answered after 150 ms',
      policy: { hedged: true },
    });
    expect(runs.aborted).toBe(1);
  });

  it('answers the first attempt’s failure when both fail, whichever fails first, and a success when either succeeds', async () => {
    const { call, warmUp, plans } = setup();
    await warmUp(20, 100);
    // The hedge fails otherwise than the first attempt, so the answer says whose failure it is.
    plans.push({ ms: 300, ends: 'transient' }, { ms: 300, ends: 'error' });
    expect(await call()).toMatchObject({ ok: false, kind: 'transient', policy: { hedged: true } });
    // The hedge fails first this time.
    plans.push({ ms: 400, ends: 'transient' }, { ms: 10, ends: 'error' });
    expect(await call()).toMatchObject({ ok: false, kind: 'transient', policy: { hedged: true } });
    plans.push({ ms: 150, ends: 'transient' }, { ms: 300 });
    expect(await call()).toMatchObject({ ok: true, result: 'answered after 300 ms' });
  });

  it('waits for the first attempt when the hedge fails first, and answers its success', async () => {
    const { call, warmUp, plans, runs } = setup();
    await warmUp(20, 100);
    runs.aborted = 0;
    plans.push({ ms: 400 }, { ms: 10, ends: 'transient' });
    expect(await call()).toMatchObject({
      ok: true,
      result: 'answered after 400 ms',
      policy: { hedged: true },
    });
    expect(runs.aborted).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('fails at once, with no hedge, when the first attempt fails before the hedge delay', async () => {
    const { call, warmUp, plans, runs, events } = setup();
    await warmUp(20, 100);
    runs.started = 0;
    events.length = 0;
    plans.push({ ms: 10, ends: 'transient' });
    expect(await call()).toMatchObject({ ok: false, kind: 'transient', policy: { hedged: false } });
    expect(runs.started).toBe(1);
    expect(events.some((event) => event.type === 'autopilot.hedge')).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('never hedges a tool that is neither idempotent nor read-only, whatever the options', async () => {
    const { call, warmUp, plans, runs, pilot } = setup({
      idempotent: false,
      pilot: { hedge: { quantile: 0.5, maxExtraLoad: 1, minSamples: 1 } },
    });
    await warmUp(30, 100);
    runs.started = 0;
    plans.push({ ms: 5_000 });
    expect(await call()).toMatchObject({ ok: true, policy: { hedged: false } });
    expect(runs.started).toBe(1);
    expect(pilot.snapshot('quote').hedgeAfterMs).toBeUndefined();
  });

  it('hedges a read-only tool', async () => {
    const { call, warmUp, plans, runs } = setup({ idempotent: false, readOnly: true });
    await warmUp(20, 100);
    runs.started = 0;
    plans.push({ ms: 5_000 }, { ms: 100 });
    expect(await call()).toMatchObject({ ok: true, policy: { hedged: true } });
    expect(runs.started).toBe(2);
  });

  it('hedges no more than the budget allows', async () => {
    const { call, warmUp, plans, runs, events } = setup({
      pilot: { hedge: { quantile: 0.9, maxExtraLoad: 0, minSamples: 20 } },
    });
    await warmUp(20, 100);
    runs.started = 0;
    plans.push({ ms: 500 });
    expect(await call()).toMatchObject({ ok: true, policy: { hedged: false } });
    expect(runs.started).toBe(1);
    expect(events.find((event) => event.type === 'autopilot.hedge')).toMatchObject({
      decision: 'budget_spent',
    });
  });

  it('pauses while over 10 % of the attempts in the window fail, says so, and resumes as they age out', async () => {
    const { call, warmUp, plans, runs, events, pilot } = setup();
    await warmUp(20, 100);
    for (let i = 0; i < 70; i++) plans.push({ ms: 10, ends: 'transient' });
    for (let i = 0; i < 70; i++) expect(await call()).toMatchObject({ ok: false, kind: 'transient' });
    runs.started = 0;
    plans.push({ ms: 5_000 }, { ms: 100 });
    expect(await call()).toMatchObject({ ok: true, policy: { hedged: false } });
    expect(runs.started).toBe(1);
    expect(pilot.snapshot('quote').hedgeAfterMs).toBeUndefined();
    const decisions = () =>
      events.filter((event) => event.type === 'autopilot.decision' && event.knob === 'hedge');
    expect(decisions().at(-1)).toMatchObject({
      to: undefined,
      source: 'paused: over 10 % of attempts failing',
    });
    // Successes enough to bring the failures under 10 % of the window.
    await warmUp(700, 100);
    expect(pilot.snapshot('quote').hedgeAfterMs).toBeGreaterThan(0);
    expect(decisions().at(-1)).toMatchObject({ from: undefined, to: expect.any(Number) });
    runs.started = 0;
    plans.push({ ms: 5_000 }, { ms: 100 });
    expect(await call()).toMatchObject({ ok: true, policy: { hedged: true } });
    expect(runs.started).toBe(2);
  });

  it('pays for a retry out of the hedge budget, so hedges and retries together keep to it', async () => {
    const { call, warmUp, plans, runs, events } = setup({
      maxAttempts: 2,
      pilot: { hedge: { quantile: 0.9, maxExtraLoad: 0.05, minSamples: 20 } },
    });
    // Twenty calls pay in one hedge; the failed first attempt's retry spends it.
    await warmUp(20, 100);
    runs.started = 0;
    plans.push({ ms: 10, ends: 'transient' }, { ms: 5_000 }, { ms: 100 });
    expect(await call()).toMatchObject({ ok: true, result: 'answered after 5000 ms', attempts: 2 });
    expect(runs.started).toBe(2);
    expect(events.filter((event) => event.type === 'autopilot.hedge')).toEqual([
      expect.objectContaining({ decision: 'budget_spent' }),
    ]);
  });

  it('waits for a later quantile as the budget runs dry, leaving its last tokens to the slowest calls', async () => {
    const { call, warmUp, plans, runs, events, pilot } = setup({
      pilot: { hedge: { quantile: 0.9, maxExtraLoad: 0.05, minSamples: 20 } },
    });
    await warmUp(18, 100);
    await warmUp(2, 300);
    // The live p90 is 100 ms; the bucket holds one token of ten, so the delay is most of the
    // way to the p95 (300 ms).
    expect(pilot.snapshot('quote').hedgeAfterMs).toBeLessThanOrEqual(102);
    runs.started = 0;
    plans.push({ ms: 200 });
    expect(await call()).toMatchObject({ ok: true, policy: { hedged: false } });
    expect(runs.started).toBe(1);
    expect(events.filter((event) => event.type === 'autopilot.hedge')).toEqual([]);
    plans.push({ ms: 5_000 }, { ms: 100 });
    expect(await call()).toMatchObject({ ok: true, policy: { hedged: true } });
    const hedge = events.find((event) => event.type === 'autopilot.hedge');
    expect(hedge).toMatchObject({ decision: 'started' });
    expect((hedge as { hedgeAfterMs: number }).hedgeAfterMs).toBeGreaterThan(200);
  });

  it('starts no hedge in shadow mode, and says one would have started', async () => {
    const { call, warmUp, plans, runs, events } = setup({ pilot: { mode: 'shadow', hedge: hedgeQuick } });
    await warmUp(20, 100);
    runs.started = 0;
    plans.push({ ms: 500 });
    expect(await call()).toMatchObject({
      ok: true,
      result: 'answered after 500 ms',
      policy: { mode: 'shadow', hedged: true },
    });
    expect(runs.started).toBe(1);
    expect(events.find((event) => event.type === 'autopilot.shadow')).toMatchObject({
      knob: 'hedge',
      action: 'hedged',
    });
  });

  it('announces the hedge delay when it first applies and when it moves', async () => {
    const { warmUp, events } = setup();
    await warmUp(20, 100);
    await warmUp(1, 100);
    await warmUp(200, 400);
    const decisions = events.filter((event) => event.type === 'autopilot.decision' && event.knob === 'hedge');
    expect(decisions[0]).toMatchObject({ from: undefined, to: expect.any(Number) });
    expect(decisions.length).toBeGreaterThanOrEqual(2);
    expect(decisions.at(-1)?.to).toBeGreaterThan(300);
  });

  it('ends both attempts when the caller cancels, and leaves the call as cancelled', async () => {
    const { cancelledCall, warmUp, plans, runs } = setup();
    await warmUp(20, 100);
    runs.aborted = 0;
    plans.push({ ms: 5_000 }, { ms: 5_000 });
    expect(await cancelledCall(300)).toMatchObject({ ok: false, kind: 'cancelled' });
    expect(runs.aborted).toBe(2);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('autopilot: hedging, the race’s edges', () => {
  it('starts no hedge and leaves no timer when the first attempt answers before the hedge delay', async () => {
    const { dispatcher, warmUp, plans, runs, events } = setup();
    await warmUp(20, 100);
    runs.started = 0;
    events.length = 0;
    plans.push({ ms: 50 }, { ms: 10 });
    const pending = dispatcher.dispatch('quote', {});
    // Only to the answer: the hedge delay has not passed, so its timer must be gone already.
    await vi.advanceTimersByTimeAsync(50);
    expect(await pending).toMatchObject({
      ok: true,
      result: 'answered after 50 ms',
      policy: { hedged: false },
    });
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(runs.started).toBe(1);
    expect(events.some((event) => event.type === 'autopilot.hedge')).toBe(false);
  });

  it('starts the hedge no sooner than the hedge delay, and never a second one', async () => {
    const { dispatcher, warmUp, plans, runs, pilot } = setup();
    await warmUp(20, 100);
    const hedgeAfterMs = pilot.snapshot('quote').hedgeAfterMs as number;
    runs.started = 0;
    plans.push({ ms: 3_000 }, { ms: 3_000 });
    const pending = dispatcher.dispatch('quote', {});
    await vi.advanceTimersByTimeAsync(hedgeAfterMs - 1);
    expect(runs.started).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(runs.started).toBe(2);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(runs.started).toBe(2);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await pending).toMatchObject({
      ok: true,
      result: 'answered after 3000 ms',
      policy: { hedged: true },
    });
    expect(runs.started).toBe(2);
  });

  it('clears the hedge timer when the caller cancels before the hedge delay', async () => {
    const { cancelledCall, warmUp, plans, runs, events } = setup();
    await warmUp(20, 100);
    runs.started = 0;
    events.length = 0;
    plans.push({ ms: 5_000 }, { ms: 10 });
    expect(await cancelledCall(50)).toMatchObject({ ok: false, kind: 'cancelled' });
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(runs.started).toBe(1);
    expect(events.some((event) => event.type === 'autopilot.hedge')).toBe(false);
  });

  it('runs no handler for a caller whose signal is already aborted', async () => {
    const { dispatcher, warmUp, runs, events } = setup();
    await warmUp(20, 100);
    runs.started = 0;
    events.length = 0;
    const pending = dispatcher.dispatch('quote', {}, { signal: AbortSignal.abort(new Error('gone')) });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await pending).toMatchObject({ ok: false, kind: 'cancelled' });
    expect(runs.started).toBe(0);
    expect(events.some((event) => event.type === 'autopilot.hedge')).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('answers a handler that throws at once as a failure like any other, before and past warm-up', async () => {
    const { call, warmUp, plans, runs } = setup();
    // Before minSamples no hedge delay is in play; past it, one is.
    for (const warmed of [false, true]) {
      if (warmed) await warmUp(20, 100);
      runs.started = 0;
      plans.push({ ms: 0, ends: 'thrown at once' });
      expect(await call()).toMatchObject({
        ok: false,
        kind: 'transient',
        attempts: 1,
        policy: { hedged: false },
      });
      expect(runs.started).toBe(1);
      expect(vi.getTimerCount()).toBe(0);
    }
  });

  it('runs one attempt, with no hedge, before the tool has minSamples', async () => {
    const { call, warmUp, plans, runs, events, pilot } = setup();
    await warmUp(5, 100);
    expect(pilot.snapshot('quote').hedgeAfterMs).toBeUndefined();
    runs.started = 0;
    plans.push({ ms: 5_000 }, { ms: 10 });
    expect(await call()).toMatchObject({
      ok: true,
      result: 'answered after 5000 ms',
      policy: { hedged: false },
    });
    expect(runs.started).toBe(1);
    expect(events.some((event) => event.type === 'autopilot.hedge')).toBe(false);
  });

  it('leaves no listener on the caller’s signal once the call has answered, hedged or not', async () => {
    const { dispatcher, warmUp, plans } = setup();
    await warmUp(20, 100);
    const caller = new AbortController();
    const listeners = countListeners(caller.signal);
    const paths = [
      // Answered before the hedge delay; the hedge won; both failed.
      [{ ms: 50 }],
      [{ ms: 5_000 }, { ms: 10 }],
      [
        { ms: 500, ends: 'transient' as const },
        { ms: 1_000, ends: 'transient' as const },
      ],
    ];
    for (const attempts of paths) {
      plans.push(...attempts);
      const pending = dispatcher.dispatch('quote', {}, { signal: caller.signal });
      await vi.advanceTimersByTimeAsync(6_000);
      await pending;
      expect(listeners.now).toBe(0);
    }
    // The count means something only if the dispatch listened at all.
    expect(listeners.added).toBeGreaterThan(0);
  });

  it('leaves no unhandled rejection when the loser fails after the winner has answered', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const { call, warmUp, plans, runs } = setup();
      await warmUp(20, 100);
      runs.aborted = 0;
      runs.finished = 0;
      // The first attempt ignores its abort and fails long after the hedge has won.
      plans.push({ ms: 2_000, ends: 'error', ignoresAbort: true }, { ms: 10 });
      expect(await call()).toMatchObject({
        ok: true,
        result: 'answered after 10 ms',
        policy: { hedged: true },
      });
      expect(runs).toMatchObject({ aborted: 1, finished: 2 });
      vi.useRealTimers();
      await new Promise((resolve) => setTimeout(resolve, 0));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

describe('autopilot: adaptive concurrency', () => {
  it('holds a tool to its limit, and reports it', async () => {
    const { dispatcher, pilot, runs } = setup({
      pilot: { hedge: false, concurrency: { min: 2, max: 2 } },
    });
    const pending = Array.from({ length: 5 }, () => dispatcher.dispatch('quote', {}));
    await vi.advanceTimersByTimeAsync(50);
    expect(runs.started).toBe(2);
    expect(pilot.snapshot('quote').concurrency).toBe(2);
    await vi.advanceTimersByTimeAsync(1_000);
    for (const outcome of await Promise.all(pending)) expect(outcome.ok).toBe(true);
  });

  it('probes the minimum round trip on calls that ran with few in flight, holding no call back', async () => {
    const { warmUp, pilot, events } = setup({ pilot: { hedge: false, concurrency: { min: 1, max: 64 } } });
    await warmUp(1, 100);
    // One call at a time: each is a probe's round trip as it is, so the limit is not lowered.
    expect(pilot.snapshot('quote').concurrency).toBe(8);
    await warmUp(70, 100);
    // Calls at the minimum let the limit climb.
    expect(pilot.snapshot('quote').concurrency).toBeGreaterThan(8);
    const moves = events.filter(
      (event) => event.type === 'autopilot.decision' && event.knob === 'concurrency',
    );
    expect(moves[0]).toMatchObject({ from: 8, source: 'latency against the minimum round trip' });
    for (const move of moves)
      expect(move).toMatchObject({ source: 'latency against the minimum round trip' });
  });

  it('never holds a busy tool at the probe limit: its best window stands in for the minimum', async () => {
    const { dispatcher, pilot, events } = setup({
      pilot: { hedge: false, concurrency: { min: 1, max: 64 } },
    });
    // Eight calls in flight at all times: none ends with three or fewer in flight.
    const endAt = Date.now() + 150_000;
    const loop = async () => {
      while (Date.now() < endAt) await dispatcher.dispatch('quote', {});
    };
    const loops = Promise.all(Array.from({ length: 8 }, loop));
    const limits: number[] = [];
    for (let second = 0; second < 151; second++) {
      await vi.advanceTimersByTimeAsync(1_000);
      limits.push(pilot.snapshot('quote').concurrency as number);
    }
    await loops;
    expect(Math.min(...limits)).toBeGreaterThanOrEqual(8);
    // Answers at the best window's latency: the limit climbs past the eight in flight.
    expect(limits.at(-1)).toBeGreaterThan(8);
    const moves = events.filter(
      (event) => event.type === 'autopilot.decision' && event.knob === 'concurrency',
    );
    expect(moves.length).toBeGreaterThan(0);
    for (const move of moves)
      expect(move).toMatchObject({ source: 'latency against the minimum round trip' });
  });

  it('gives back a slot taken at once when its attempt fails', async () => {
    const { dispatcher, plans, runs } = setup({ pilot: { hedge: false, concurrency: { min: 1, max: 1 } } });
    plans.push({ ms: 10, ends: 'transient' }, { ms: 10, ends: 'transient' });
    for (let call = 0; call < 2; call++) {
      const failing = dispatcher.dispatch('quote', {});
      await vi.advanceTimersByTimeAsync(20);
      expect(await failing).toMatchObject({ ok: false, kind: 'transient' });
    }
    const next = dispatcher.dispatch('quote', {});
    await vi.advanceTimersByTimeAsync(200);
    expect(await next).toMatchObject({ ok: true });
    expect(runs.started).toBe(3);
  });

  it('ends a wait for a slot when the caller cancels', async () => {
    const { dispatcher, runs } = setup({ pilot: { hedge: false, concurrency: { min: 1, max: 1 } } });
    const first = dispatcher.dispatch('quote', {});
    const controller = new AbortController();
    const second = dispatcher.dispatch('quote', {}, { signal: controller.signal });
    await vi.advanceTimersByTimeAsync(10);
    controller.abort();
    expect(await second).toMatchObject({ ok: false, kind: 'cancelled' });
    await vi.advanceTimersByTimeAsync(200);
    expect(await first).toMatchObject({ ok: true });
    expect(runs.started).toBe(1);
    const third = dispatcher.dispatch('quote', {});
    await vi.advanceTimersByTimeAsync(200);
    expect(await third).toMatchObject({ ok: true });
  });

  it('only counts in shadow mode, and says an attempt would have waited', async () => {
    const { dispatcher, runs, events } = setup({
      pilot: { mode: 'shadow', hedge: false, concurrency: { min: 1, max: 1 } },
    });
    const pending = Array.from({ length: 3 }, () => dispatcher.dispatch('quote', {}));
    await vi.advanceTimersByTimeAsync(10);
    expect(runs.started).toBe(3);
    await vi.advanceTimersByTimeAsync(200);
    await Promise.all(pending);
    expect(
      events.filter((event) => event.type === 'autopilot.shadow' && event.knob === 'concurrency'),
    ).toHaveLength(2);
  });
});
