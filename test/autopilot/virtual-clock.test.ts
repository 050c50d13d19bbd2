// The simulator's virtual clock: timers in order, microtasks run between them, and the real
// layers (timeout, retry, concurrency) driven through a simulated tool on it.

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ServerPool, simulatedTool } from '../../bench/autopilot/simulated-tool.js';
import { makeTrace, type Trace } from '../../bench/autopilot/traces.js';
import { VirtualClock, VirtualClockStalled } from '../../bench/autopilot/virtual-clock.js';
import { createDispatcher, defaultStack, ToolRegistry } from '../../index.js';

/** A trace of fixed plans, for exact expectations. */
function fixedTrace(plans: Array<{ latencyMs: number; fails?: boolean }>): Trace {
  return {
    name: 'steady',
    calls: plans.length,
    arrivals: new Float64Array(plans.length),
    plan: (call, attempt) => {
      const plan = plans[(call + attempt) % plans.length]!;
      return { latencyMs: plan.latencyMs, fails: plan.fails ?? false, straggler: false };
    },
  };
}

function dispatcherOn(
  clock: VirtualClock,
  trace: Trace,
  options: { timeoutMs?: number; pool?: ServerPool } = {},
) {
  const tool = simulatedTool(trace, clock, options.pool);
  const registry = new ToolRegistry().register({
    name: 'sim',
    description: 'A simulated tool',
    inputSchema: z.object({ call: z.number() }),
    idempotent: true,
    timeoutMs: options.timeoutMs ?? 30_000,
    handler: tool.handler,
  });
  const dispatcher = createDispatcher(
    defaultStack({
      registry,
      retry: { clock, random: () => 0 },
      timeout: { clock },
      concurrency: { max: 8, clock },
    }),
    { now: clock.now },
  );
  return { dispatcher, started: tool.started };
}

describe('VirtualClock', () => {
  it('fires timers in order of due time, ties in the order set, and skips cleared ones', async () => {
    const clock = new VirtualClock(1_000);
    const fired: string[] = [];
    clock.setTimeout(() => fired.push(`b@${clock.now()}`), 20);
    clock.setTimeout(() => fired.push(`a@${clock.now()}`), 10.5);
    clock.setTimeout(() => fired.push(`c@${clock.now()}`), 20);
    const cleared = clock.setTimeout(() => fired.push('never'), 5);
    clock.clearTimeout(cleared);
    clock.clearTimeout(cleared);
    expect(clock.pending).toBe(3);
    await clock.run();
    expect(fired).toEqual(['a@1010.5', 'b@1020', 'c@1020']);
    expect(clock.pending).toBe(0);
  });

  it('runs the microtasks a timer queues before the next timer fires', async () => {
    const clock = new VirtualClock();
    const order: string[] = [];
    clock.setTimeout(() => {
      void Promise.resolve()
        .then(() => Promise.resolve())
        .then(() => {
          order.push('chain');
          clock.setTimeout(() => order.push('set by the chain'), 0);
        });
    }, 10);
    clock.setTimeout(() => order.push('later'), 10);
    await clock.run();
    expect(order).toEqual(['chain', 'later', 'set by the chain']);
  });

  it('stops time at runFor’s end, firing only what falls due', async () => {
    const clock = new VirtualClock();
    let fired = 0;
    clock.setTimeout(() => fired++, 100);
    clock.setTimeout(() => fired++, 300);
    await clock.runFor(200);
    expect([fired, clock.now(), clock.pending]).toEqual([1, 200, 1]);
  });

  it('ends a sleep on abort, clearing its timer, and never ends an infinite one without it', async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const slept = clock.sleep(1_000, controller.signal);
    const hung = expect(clock.sleep(Infinity, controller.signal)).rejects.toThrow('cut off');
    clock.setTimeout(() => controller.abort(new Error('cut off')), 250);
    await expect(clock.runUntilSettled(slept)).rejects.toThrow('cut off');
    await hung;
    expect([clock.now(), clock.pending]).toEqual([250, 0]);
  });

  it('says so when a promise waits on nothing it will ever fire', async () => {
    const clock = new VirtualClock();
    await expect(clock.runUntilSettled(new Promise(() => undefined))).rejects.toThrow(VirtualClockStalled);
  });

  it('keeps its heap small when most timers are cleared', async () => {
    const clock = new VirtualClock();
    for (let i = 0; i < 10_000; i++) clock.clearTimeout(clock.setTimeout(() => undefined, 30_000 + i));
    const survivor = clock.setTimeout(() => undefined, 1);
    expect(clock.pending).toBe(1);
    await clock.run();
    expect(clock.now()).toBe(1);
    expect(survivor).toBeDefined();
  });
});

describe('the real layers on the virtual clock', () => {
  it('answers a 212.5 ms call after 212.5 ms of virtual time', async () => {
    const clock = new VirtualClock();
    const { dispatcher } = dispatcherOn(clock, fixedTrace([{ latencyMs: 212.5 }]));
    const outcome = await clock.runUntilSettled(dispatcher.dispatch('sim', { call: 0 }));
    expect(outcome.ok).toBe(true);
    expect(clock.now()).toBe(212.5);
  });

  it('times out a hung call at the tool’s timeoutMs and retries it with the real backoff', async () => {
    const clock = new VirtualClock();
    const { dispatcher, started } = dispatcherOn(clock, fixedTrace([{ latencyMs: Infinity }]), {
      timeoutMs: 5_000,
    });
    const outcome = await clock.runUntilSettled(dispatcher.dispatch('sim', { call: 0 }));
    expect(outcome.ok).toBe(false);
    expect(outcome.ok ? undefined : outcome.kind).toBe('timeout');
    expect(started()).toBe(3);
    // Three attempts of 5 s, and backoffs of 100 ms and 400 ms (no jitter: random is 0).
    expect(clock.now()).toBe(15_500);
    expect(clock.pending).toBe(0);
  });

  it('retries a transient failure and succeeds on the next attempt', async () => {
    const clock = new VirtualClock();
    const trace = fixedTrace([{ latencyMs: 50, fails: true }, { latencyMs: 70 }]);
    const { dispatcher, started } = dispatcherOn(clock, trace);
    const outcome = await clock.runUntilSettled(dispatcher.dispatch('sim', { call: 0 }));
    expect(outcome.ok).toBe(true);
    expect(started()).toBe(2);
    expect(clock.now()).toBe(50 + 100 + 70);
  });

  it('replays a trace’s arrivals through the concurrency limit and a server pool', async () => {
    const clock = new VirtualClock();
    const trace = makeTrace('capacity', { seed: 2, calls: 400 });
    const pool = new ServerPool(clock, trace.servers!, 64);
    const { dispatcher } = dispatcherOn(clock, trace, { pool });
    const outcomes: Array<Promise<{ ok: boolean }>> = [];
    for (let call = 0; call < trace.calls; call++) {
      clock.setTimeout(() => outcomes.push(dispatcher.dispatch('sim', { call })), trace.arrivals[call]!);
    }
    await clock.run();
    const settled = await Promise.all(outcomes);
    expect(settled).toHaveLength(400);
    expect(settled.every((outcome) => outcome.ok)).toBe(true);
    expect(clock.now()).toBeGreaterThan(trace.arrivals[399]!);
    expect([pool.busy, pool.queued, clock.pending]).toEqual([0, 0, 0]);
  });

  it('runs the same trace to the same virtual times twice', async () => {
    const finishTimes = async () => {
      const clock = new VirtualClock();
      const trace = makeTrace('steady', { seed: 12, calls: 300, ratePerSecond: 40 });
      const { dispatcher } = dispatcherOn(clock, trace, { timeoutMs: 2_000 });
      const ends: number[] = [];
      for (let call = 0; call < trace.calls; call++) {
        clock.setTimeout(
          () => void dispatcher.dispatch('sim', { call }).then(() => ends.push(clock.now())),
          trace.arrivals[call]!,
        );
      }
      await clock.run();
      return ends;
    };
    const first = await finishTimes();
    expect(first).toHaveLength(300);
    expect(await finishTimes()).toEqual(first);
  });
});
