// The gradient controller on the bench's server pool and virtual clock: the limit climbs while
// calls answer at the minimum, falls when the backend queues them, follows a capacity doubling,
// never leaves [min, max], and probes the minimum again on a jittered schedule.

import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../bench/autopilot/random.js';
import { ServerPool } from '../../bench/autopilot/simulated-tool.js';
import { VirtualClock } from '../../bench/autopilot/virtual-clock.js';
import {
  GradientLimit,
  type GradientLimitChange,
  type GradientLimitOptions,
} from '../../middleware/autopilot/gradient.js';
import { LimitSemaphore } from '../../middleware/autopilot/limit-semaphore.js';

interface Second {
  /** The limit at the end of the second. */
  readonly limit: number;
  readonly probing: boolean;
  /** Calls answered during the second. */
  readonly answered: number;
}

/**
 * `clients` callers in a closed loop for `seconds` of virtual time, each taking a slot, calling a
 * pool of `servers(now)` servers (≈100 ms of service each, seeded) and recording the round trip.
 * Answers what each second ended with.
 */
async function closedLoop(
  options: GradientLimitOptions & { servers: (atMs: number) => number; clients: number; seconds: number },
): Promise<{ seconds: Second[]; limit: GradientLimit }> {
  const { servers, clients, seconds, ...limitOptions } = options;
  const clock = new VirtualClock();
  const random = seededRandom(20_261_207);
  const limit = new GradientLimit({
    clock,
    random: () => random.next(),
    probeIntervalMs: 30_000,
    ...limitOptions,
  });
  const slots = new LimitSemaphore(() => limit.limit);
  const pool = new ServerPool(clock, servers, Infinity);
  const endMs = seconds * 1_000;
  let answered = 0;
  const client = async () => {
    while (clock.now() < endMs) {
      const release = await slots.acquire();
      const startedAt = clock.now();
      try {
        await pool.serve(100 * Math.exp(0.2 * random.normal()), new AbortController().signal);
        limit.record(clock.now() - startedAt);
        answered++;
      } finally {
        release();
      }
    }
  };
  const loops = Promise.all(Array.from({ length: clients }, client));
  const trace: Second[] = [];
  for (let second = 1; second <= seconds; second++) {
    await clock.run(second * 1_000);
    trace.push({ limit: limit.limit, probing: limit.probing, answered });
    answered = 0;
  }
  await clock.runUntilSettled(loops);
  expect(slots.inFlight).toBe(0);
  expect(clock.pending).toBe(0);
  return { seconds: trace, limit };
}

/** A clock whose time the test moves. */
function manualTime(start = 0) {
  let now = start;
  return {
    clock: { now: () => now },
    advance(ms: number) {
      now += ms;
    },
  };
}

describe('GradientLimit on a simulated server pool', () => {
  it('climbs to max while calls answer at the minimum round trip, and never passes it', async () => {
    const { seconds } = await closedLoop({
      servers: () => 100,
      clients: 40,
      seconds: 20,
      initialLimit: 3,
      max: 20,
    });
    const reached = seconds.findIndex((second) => second.limit === 20);
    expect(reached).toBeGreaterThan(0);
    expect(reached).toBeLessThanOrEqual(8);
    for (const second of seconds) expect(second.limit).toBeLessThanOrEqual(20);
    for (const second of seconds.slice(reached)) if (!second.probing) expect(second.limit).toBe(20);
  });

  it('falls to about the servers the backend has when it queues calls, keeping them busy', async () => {
    const { seconds } = await closedLoop({ servers: () => 4, clients: 40, seconds: 30, initialLimit: 32 });
    // After the first probe the limit is 32 again: eight times the four servers.
    expect(seconds[1]?.limit).toBe(32);
    const settled = seconds.slice(8).filter((second) => !second.probing);
    for (const second of settled) {
      expect(second.limit).toBeGreaterThanOrEqual(4);
      expect(second.limit).toBeLessThanOrEqual(10);
    }
    // Four servers of ~100 ms answer ~40 calls a second; the limit keeps them busy.
    const goodput = settled.reduce((sum, second) => sum + second.answered, 0) / settled.length;
    expect(goodput).toBeGreaterThan(36);
  });

  it('follows the capacity when the servers double from 4 to 8', async () => {
    const { seconds } = await closedLoop({
      servers: (atMs) => (atMs < 60_000 ? 4 : 8),
      clients: 40,
      seconds: 120,
    });
    const before = seconds.slice(5, 60).filter((second) => !second.probing);
    for (const second of before) expect(second.limit).toBeLessThanOrEqual(10);
    // Within three windows of the doubling the limit is past anything four servers allowed.
    const after = seconds.slice(60);
    const followed = after.findIndex((second) => second.limit >= 11);
    expect(followed).toBeGreaterThanOrEqual(0);
    expect(followed).toBeLessThanOrEqual(3);
    const settled = after.slice(5).filter((second) => !second.probing);
    for (const second of settled) expect(second.limit).toBeGreaterThanOrEqual(10);
    const goodput = settled.reduce((sum, second) => sum + second.answered, 0) / settled.length;
    expect(goodput).toBeGreaterThan(72);
  });

  it('probes the minimum round trip again, about every probeIntervalMs', async () => {
    const { seconds } = await closedLoop({ servers: () => 4, clients: 40, seconds: 100 });
    const probeStarts = seconds
      .map((second, index) => (second.probing && !seconds[index - 1]?.probing ? index : -1))
      .filter((index) => index > 0);
    expect(probeStarts.length).toBe(2);
    for (const [index, start] of probeStarts.entries()) {
      const previous = index === 0 ? 1 : (probeStarts[index - 1] as number);
      // 30 s plus up to 15 % of jitter, give or take the window that ends it and the probe's length.
      expect(start - previous).toBeGreaterThanOrEqual(30);
      expect(start - previous).toBeLessThanOrEqual(38);
    }
  });
});

describe('GradientLimit', () => {
  it('never leaves [min, max], whatever the round trips', () => {
    const random = seededRandom(34);
    const outside: { min: number; max: number; limit: number }[] = [];
    const reachedMax = new Set<number>();
    for (let run = 0; run < 50; run++) {
      const min = 1 + Math.floor(random.uniform(0, 10));
      const max = min + Math.floor(random.uniform(0, 40));
      const time = manualTime();
      const limit = new GradientLimit({
        min,
        max,
        initialLimit: min,
        clock: time.clock,
        random: () => random.next(),
        windowMs: 100,
        probeIntervalMs: 2_000,
        probeSamples: 10,
      });
      for (let call = 0; call < 2_000; call++) {
        time.advance(random.uniform(0, 20));
        limit.record(random.chance(0.1) ? random.uniform(500, 5_000) : random.uniform(0, 200));
        if (limit.limit < min || limit.limit > max) outside.push({ min, max, limit: limit.limit });
        if (limit.limit === max && max > min) reachedMax.add(run);
      }
    }
    expect(outside).toEqual([]);
    // The round trips moved the limit across its range, not only at its floor.
    expect(reachedMax.size).toBeGreaterThan(25);
  });

  it('starts by probing at probeLimit, then restores initialLimit with the minimum measured', () => {
    const time = manualTime(1_000);
    const changes: [number, GradientLimitChange][] = [];
    const limit = new GradientLimit({
      clock: time.clock,
      initialLimit: 20,
      probeSamples: 4,
      onChange: (value, reason) => changes.push([value, reason]),
    });
    expect(limit.probing).toBe(true);
    expect(limit.limit).toBe(3);
    time.advance(500);
    // Started before the probe: queued at a limit nobody measured, so it is no minimum.
    limit.record(501);
    for (const rtt of [100, 120, 80]) limit.record(rtt);
    expect(limit.probing).toBe(true);
    limit.record(90);
    expect(limit.probing).toBe(false);
    expect(limit.minRttMs).toBe(90);
    expect(limit.limit).toBe(20);
    expect(changes).toEqual([[20, 'probe_end']]);
  });

  it('probes again after probeIntervalMs lengthened by the injected jitter', () => {
    for (const [draw, expected] of [
      [0, 10_000],
      [0.999_999, 11_500],
    ] as const) {
      const time = manualTime();
      const changes: GradientLimitChange[] = [];
      const limit = new GradientLimit({
        clock: time.clock,
        random: () => draw,
        probeSamples: 1,
        minWindowSamples: 1,
        windowMs: 100,
        probeIntervalMs: 10_000,
        onChange: (_value, reason) => changes.push(reason),
      });
      limit.record(0);
      let probedAt: number | undefined;
      for (let ms = 100; ms <= 20_000 && probedAt === undefined; ms += 100) {
        time.advance(100);
        limit.record(50);
        if (limit.probing) probedAt = ms;
      }
      expect(probedAt).toBe(Math.ceil(expected / 100) * 100);
      expect(changes.at(-1)).toBe('probe_start');
      expect(limit.limit).toBe(3);
    }
  });

  it('with probeQuietCalls, probes on calls that ended with probeLimit or fewer in flight, lowering nothing', () => {
    const time = manualTime();
    const changes: [number, GradientLimitChange][] = [];
    const limit = new GradientLimit({
      clock: time.clock,
      probeSamples: 3,
      probeQuietCalls: true,
      onChange: (value, reason) => changes.push([value, reason]),
    });
    expect(limit.probing).toBe(true);
    expect(limit.limit).toBe(8);
    time.advance(200);
    // Crowded (or of unknown company): no measure of the minimum.
    limit.record(150, undefined, 4);
    limit.record(150);
    for (const rtt of [100, 90, 110]) limit.record(rtt, undefined, 3);
    expect(limit.probing).toBe(false);
    expect(limit.minRttMs).toBe(100);
    expect(limit.limit).toBe(8);
    expect(changes).toEqual([]);
  });

  it('with probeQuietCalls, lets the best window stand for the minimum until quiet calls come, never lowering the limit', () => {
    const time = manualTime();
    const changes: [number, GradientLimitChange][] = [];
    const limit = new GradientLimit({
      clock: time.clock,
      random: () => 0,
      probeSamples: 2,
      probeIntervalMs: 10_000,
      probeQuietCalls: true,
      onChange: (value, reason) => changes.push([value, reason]),
    });
    // Always eight in flight: no call is quiet, for far longer than a probe interval.
    for (let ms = 0; ms < 30_000; ms += 100) {
      time.advance(100);
      limit.record(ms < 1_000 ? 120 : 100, undefined, 8);
    }
    expect(limit.minRttMs).toBe(100);
    expect(limit.probing).toBe(true);
    expect(limit.limit).toBe(64);
    expect(changes.map(([, reason]) => reason)).not.toContain('probe_start');
    // Two quiet calls measure it.
    limit.record(90, undefined, 2);
    limit.record(80, undefined, 1);
    expect(limit.minRttMs).toBe(80);
    expect(limit.probing).toBe(false);
    expect(limit.limit).toBe(64);
  });

  it('finds the new minimum at the next probe when the backend stays slower', () => {
    const time = manualTime();
    const limit = new GradientLimit({
      clock: time.clock,
      random: () => 0,
      probeSamples: 5,
      windowMs: 1_000,
      probeIntervalMs: 10_000,
    });
    const call = (rtt: number) => {
      time.advance(rtt);
      limit.record(rtt);
    };
    for (let i = 0; i < 5; i++) call(100);
    expect(limit.minRttMs).toBe(100);
    // Four times slower for good: the limit sinks until the probe measures the new minimum.
    while (!limit.probing) call(400);
    expect(limit.limit).toBe(3);
    for (let i = 0; i < 5; i++) call(400);
    expect(limit.minRttMs).toBe(400);
  });

  it('rejects bad options with a TypeError naming the option', () => {
    expect(() => new GradientLimit({ min: 5, max: 4 })).toThrow(/min must be <= max/);
    expect(() => new GradientLimit({ min: 0 })).toThrow(/min/);
    expect(() => new GradientLimit({ max: 2.5 })).toThrow(/max/);
    expect(() => new GradientLimit({ min: 2, max: 10, initialLimit: 11 })).toThrow(/initialLimit/);
    expect(() => new GradientLimit({ quantile: 1 })).toThrow(/quantile/);
    expect(() => new GradientLimit({ quantile: 0 })).toThrow(/quantile/);
    expect(() => new GradientLimit({ windowMs: 0 })).toThrow(/windowMs/);
    expect(() => new GradientLimit({ probeJitter: 2 })).toThrow(/probeJitter/);
    expect(() => new GradientLimit({ probeSamples: 0 })).toThrow(/probeSamples/);
    expect(() => new GradientLimit({ probeQuietCalls: 'yes' as never })).toThrow(/probeQuietCalls/);
    expect(() => new GradientLimit({ minRttBuffer: -1 })).toThrow(/minRttBuffer/);
    expect(() => new GradientLimit({ random: 4 as never })).toThrow(/random/);
    expect(() => new GradientLimit({ clock: {} as never })).toThrow(/clock/);
    expect(() => new GradientLimit({ maxx: 4 } as never)).toThrow(
      /unknown option "maxx"; did you mean "max"/,
    );
  });

  it('clamps probeLimit and the default initialLimit into [min, max]', () => {
    const limit = new GradientLimit({ min: 5, max: 6, clock: manualTime().clock });
    expect(limit.limit).toBe(5);
    const small = new GradientLimit({ min: 1, max: 2, clock: manualTime().clock, probeSamples: 1 });
    expect(small.limit).toBe(2);
    small.record(10);
    expect(small.limit).toBe(2);
  });
});
