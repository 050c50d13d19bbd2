// The per-tool registry: summaries cached between refreshes, idle tools dropped on the injected
// clock, options checked, and at most 16 KiB per tool at 10 000 tools.

import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../bench/autopilot/random.js';
import { toolStats } from '../../middleware/autopilot/tool-stats.js';

function manualTime(start = 0) {
  let now = start;
  return {
    clock: { now: () => now },
    advance(ms: number) {
      now += ms;
    },
  };
}

describe('toolStats', () => {
  it('summarises a tool: samples, quantiles and outcome mix', () => {
    const time = manualTime();
    const stats = toolStats({ clock: time.clock, quantiles: [0.9] });
    for (let i = 1; i <= 1_000; i++) stats.record('search.web', 'success', i);
    stats.record('search.web', 'timeout');
    stats.record('search.web', 'transient');
    const summary = stats.summary('search.web')!;
    expect(summary.samples).toBe(1_000);
    expect(summary.p50 / 500 - 1).toBeLessThan(0.011);
    expect(summary.p999 / 999 - 1).toBeLessThan(0.011);
    expect(summary.quantiles[0]! / 900 - 1).toBeLessThan(0.011);
    expect(summary.outcomes).toEqual({ success: 1_000, timeout: 1, transient: 1, other: 0 });
    expect(stats.summary('never.seen')).toBeUndefined();
  });

  it('serves the same summary until refreshEvery records or a turn of the window', () => {
    const time = manualTime();
    const stats = toolStats({ clock: time.clock, refreshEvery: 10, windowMs: 10_000 });
    stats.record('db.get', 'success', 100);
    const first = stats.summary('db.get');
    for (let i = 0; i < 9; i++) stats.record('db.get', 'success', 5_000);
    expect(stats.summary('db.get')).toBe(first);
    stats.record('db.get', 'success', 5_000);
    const second = stats.summary('db.get')!;
    expect(second).not.toBe(first);
    expect(second.samples).toBe(11);
    time.advance(1_000);
    expect(stats.summary('db.get')).not.toBe(second);
  });

  it('computes any quantile afresh', () => {
    const stats = toolStats({ clock: manualTime().clock });
    for (let i = 1; i <= 100; i++) stats.record('t', 'success', i * 10);
    expect(stats.quantile('t', 0.25) / 250 - 1).toBeLessThan(0.011);
    expect(stats.quantile('none', 0.5)).toBeNaN();
  });

  it('expires what a window held on the injected clock', () => {
    const time = manualTime();
    const stats = toolStats({ clock: time.clock, windowMs: 60_000, idleMs: 3_600_000 });
    stats.record('t', 'success', 100);
    time.advance(59_999);
    expect(stats.summary('t')!.samples).toBe(1);
    time.advance(6_001);
    expect(stats.summary('t')!.samples).toBe(0);
    expect(stats.summary('t')!.p50).toBeNaN();
  });

  it('drops tools idle for idleMs at the next sweep and keeps busy ones', () => {
    const time = manualTime();
    const stats = toolStats({ clock: time.clock, idleMs: 10_000 });
    stats.record('idle', 'success', 1);
    stats.record('busy', 'success', 1);
    for (let i = 0; i < 30; i++) {
      time.advance(1_000);
      stats.record('busy', 'success', 1);
    }
    expect(stats.size).toBe(1);
    expect(stats.summary('idle')).toBeUndefined();
    expect(stats.summary('busy')).toBeDefined();
  });

  it('gives a tool a mergeable sketch of its window', () => {
    const stats = toolStats({ clock: manualTime().clock });
    for (const ms of [100, 200, 300]) stats.record('t', 'success', ms);
    expect(stats.sketch('t')!.count).toBe(3);
    expect(stats.sketch('none')).toBeUndefined();
  });

  it('rejects bad options with a TypeError naming the option', () => {
    expect(() => toolStats({ windowMs: 0 })).toThrow(/windowMs must be a finite number > 0/);
    expect(() => toolStats({ subWindows: 1.5 })).toThrow(/subWindows must be an integer >= 1/);
    expect(() => toolStats({ maxCalls: 0 })).toThrow(/maxCalls must be a number >= 1/);
    expect(() => toolStats({ relativeAccuracy: 0 })).toThrow(/relativeAccuracy must be a finite number > 0/);
    expect(() => toolStats({ relativeAccuracy: 0.2 })).toThrow(/relativeAccuracy must be at most 0.1/);
    expect(() => toolStats({ maxBins: 1 })).toThrow(/maxBins must be an integer >= 2/);
    expect(() => toolStats({ idleMs: -1 })).toThrow(/idleMs must be a finite number > 0/);
    expect(() => toolStats({ refreshEvery: 0 })).toThrow(/refreshEvery must be an integer >= 1/);
    expect(() => toolStats({ quantiles: [1.5] })).toThrow(/quantiles must hold numbers in \[0, 1\], got 1.5/);
    expect(() => toolStats({ clock: {} as never })).toThrow(/clock must have a now\(\) method/);
    expect(() => toolStats({ windowMS: 1 } as never)).toThrow(
      /toolStats\(\) got an unknown option "windowMS"; did you mean "windowMs"\?/,
    );
  });

  it('keeps each of 10 000 tools with full windows within 16 KiB', () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const time = manualTime();
    const stats = toolStats({ clock: time.clock, windowMs: 10_000, idleMs: 3_600_000 });
    const random = seededRandom(9);
    // A spread of latencies past the bucket cap, in every sub-window: the most a window holds.
    const spread = Array.from({ length: 8 }, (_, index) => 10 ** (index + random.uniform(-1, 0)));
    const heldBytes = () => {
      gc();
      gc();
      const usage = process.memoryUsage();
      // Typed arrays' counts live outside the JS heap: count both.
      return usage.heapUsed + usage.arrayBuffers;
    };
    const before = heldBytes();
    const tools = 10_000;
    for (let subWindow = 0; subWindow < 10; subWindow++) {
      for (let tool = 0; tool < tools; tool++) {
        for (const ms of spread) stats.record(`tool.${tool}`, 'success', ms);
        stats.summary(`tool.${tool}`);
      }
      time.advance(1_000);
    }
    const perTool = (heldBytes() - before) / tools;
    expect(stats.size).toBe(tools);
    expect(stats.byteLength('tool.0')).toBe(576 * (2 * 10 + 4) + 11 * 6 * 4);
    expect(perTool).toBeLessThanOrEqual(16 * 1024);
    console.log(`bytes per tool with a full window: ${perTool.toFixed(0)}`);
  });
});
