import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  circuitBreaker,
  createDispatcher,
  errorMapping,
  rateLimit,
  retry,
  ToolRegistry,
  toolLookup,
  TransientError,
  windowedBudget,
  type Clock,
  type DispatchEvent,
} from '../../../index.js';
import { toolHealth, type HealthShare, type HealthSnapshot } from '../../../integrations/console/health.js';
import { latencyBucket, quantileOf } from '../../../integrations/console/health-window.js';
import type { HealthReport } from '../../../integrations/console/panes.js';

beforeEach(() => {
  vi.useFakeTimers({ now: 1_700_000_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

const clock: Clock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

function event(type: string, tool: string, details: Record<string, unknown> = {}): DispatchEvent {
  return { type, tool, callId: 'c', attempt: 1, ...details } as DispatchEvent;
}

function rowOf(report: HealthReport, tool: string) {
  const row = report.tools.find((candidate) => candidate.tool === tool);
  if (row === undefined) throw new Error(`no row for ${tool} in ${JSON.stringify(report)}`);
  return row;
}

describe('toolHealth: counting events', () => {
  it('reports calls per second, the outcome mix and latency quantiles per tool', async () => {
    const health = toolHealth({ clock, windowMs: 60_000 });
    for (let ms = 1; ms <= 100; ms++) health.record(event('dispatch.success', 'search', { durationMs: ms }));
    health.record(event('dispatch.failure', 'search', { kind: 'timeout', durationMs: 5_000 }));
    health.record(event('dispatch.retry', 'search', { delayMs: 10, kind: 'transient' }));
    const row = rowOf(await health.report(), 'search');
    expect(row.calls).toBe(101);
    expect(row.callsPerSecond).toBeCloseTo(101 / 60, 2);
    expect(row.outcomes).toEqual({ ok: 100, timeout: 1 });
    expect(row.retries).toBe(1);
    expect(row.p50).toBeGreaterThanOrEqual(50 * 0.95);
    expect(row.p50).toBeLessThanOrEqual(51 * 1.1);
    expect(row.p95).toBeGreaterThanOrEqual(95);
    expect(row.p95).toBeLessThanOrEqual(96 * 1.1);
    expect(row.p99).toBeGreaterThanOrEqual(99);
    health.close();
  });

  it('forgets what left the window, and drops a tool idle for a whole window', async () => {
    const health = toolHealth({ clock, windowMs: 60_000 });
    health.record(event('dispatch.success', 'old', { durationMs: 5 }));
    vi.advanceTimersByTime(30_000);
    health.record(event('dispatch.success', 'new', { durationMs: 5 }));
    expect((await health.report()).tools.map((row) => row.tool)).toEqual(['new', 'old']);
    vi.advanceTimersByTime(35_000);
    const report = await health.report();
    expect(report.tools.map((row) => row.tool)).toEqual(['new']);
    expect(rowOf(report, 'new').calls).toBe(1);
    health.close();
  });

  it('keeps a tool whose breaker is open even when its calls have left the window', async () => {
    const health = toolHealth({ clock });
    health.record(event('circuit.open', 'flaky', { key: 'flaky', failures: 5, cooldownMs: 1e6 }));
    vi.advanceTimersByTime(120_000);
    expect(rowOf(await health.report(), 'flaky').breaker).toBe('open');
    health.record(event('circuit.close', 'flaky', { key: 'flaky' }));
    vi.advanceTimersByTime(120_000);
    expect((await health.report()).tools).toEqual([]);
    health.close();
  });

  it('counts rate-limit waits and refusals, budget burn per tenant and autopilot timeouts', async () => {
    const health = toolHealth({ clock });
    health.record(event('rate_limit.wait', 'pay', { key: 'pay', waitMs: 20 }));
    health.record(event('rate_limit.refused', 'pay', { key: 'pay', retryAfterMs: 900 }));
    health.record(event('budget.charged', 'pay', { key: 'acme', units: 5 }));
    health.record(event('budget.overrun', 'pay', { key: 'acme', units: 2 }));
    health.record(event('budget.returned', 'pay', { key: 'acme', units: 1 }));
    health.record(event('budget.refused', 'pay', { key: 'globex', units: 3 }));
    health.record(
      event('autopilot.decision', 'pay', {
        knob: 'timeout',
        mode: 'enforce',
        from: 100,
        to: 250,
        source: 'p99',
      }),
    );
    health.record(event('rate_limit.granted', 'pay', { key: 'pay', waitMs: 0, fill: 0.75 }));
    health.record(event('rate_limit.granted', 'pay', { key: 'pay', waitMs: 20, fill: 0 }));
    const row = rowOf(await health.report(), 'pay');
    expect(row.rateLimit).toEqual({ waits: 1, refusals: 1, fill: 0 });
    expect(row.budget).toEqual({ acme: { spent: 6, refusals: 0 }, globex: { spent: 0, refusals: 1 } });
    expect(row.autopilot).toEqual({ timeoutMs: 250, source: 'p99' });
    health.close();
  });

  it('shows every autopilot knob it heard about (a later knob kept the earlier ones) and counts hedges started', async () => {
    const health = toolHealth({ clock });
    const decision = (knob: string, to: number | undefined, source = 'p95 of 300 calls') =>
      event('autopilot.decision', 'search', { knob, mode: 'enforce', from: undefined, to, source });
    health.record(event('dispatch.success', 'search', { durationMs: 80 }));
    health.record(decision('timeout', 900, 'p99.9 × 1.5 of 300 calls'));
    health.record(decision('hedge', 120));
    health.record(decision('concurrency', 12));
    health.record(event('autopilot.hedge', 'search', { decision: 'started', hedgeAfterMs: 120 }));
    health.record(event('autopilot.hedge', 'search', { decision: 'budget_spent', hedgeAfterMs: 120 }));
    health.record(event('autopilot.hedge', 'search', { decision: 'started', hedgeAfterMs: 120 }));
    expect(rowOf(await health.report(), 'search').autopilot).toEqual({
      timeoutMs: 900,
      source: 'p99.9 × 1.5 of 300 calls',
      hedgeAfterMs: 120,
      concurrency: 12,
      hedges: 2,
    });
    health.record(decision('hedge', undefined));
    expect(rowOf(await health.report(), 'search').autopilot?.hedgeAfterMs).toBeUndefined();
    health.close();
  });

  it('keeps the number of tools bounded when callers invent names', async () => {
    const health = toolHealth({ clock, maxTools: 3 });
    for (let i = 0; i < 50; i++)
      health.record(event('dispatch.failure', `made-up-${i}`, { kind: 'not_found', durationMs: 0 }));
    const report = await health.report();
    expect(report.tools.length).toBeLessThanOrEqual(3);
    expect(rowOf(report, '_OTHER').calls).toBe(48);
    health.close();
  });

  it('redacts tool names and budget keys before a report shows them', async () => {
    const secret = 'sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123';
    const health = toolHealth({ clock });
    health.record(event('dispatch.failure', `tool ${secret}`, { kind: 'not_found', durationMs: 0 }));
    health.record(event('budget.charged', 'pay', { key: `tenant ${secret}`, units: 1 }));
    const report = JSON.stringify(await health.report());
    expect(report).not.toContain('AbCdEfGhIjKlMnOpQrStUvWx');
    expect(report).toContain('REDACTED');
    health.close();
  });

  it('ignores an event with fields of the wrong type without throwing', () => {
    const health = toolHealth({ clock });
    expect(() =>
      health.record({ type: 'budget.charged', tool: 'x', key: 1, units: 'many' } as never),
    ).not.toThrow();
    expect(() => health.record(null as never)).not.toThrow();
    health.close();
  });
});

describe('toolHealth: fed by a dispatcher', () => {
  it('hears a real stack: retries, a tripped breaker, a rate-limit refusal and budget burn', async () => {
    const failing = true;
    const registry = new ToolRegistry()
      .register({
        name: 'flaky',
        description: 'fails while failing is set',
        idempotent: true,
        inputSchema: z.object({}),
        handler: () => {
          if (failing) throw new TransientError('down');
          return 'ok';
        },
      })
      .register({
        name: 'cheap',
        description: 'costs 2',
        inputSchema: z.object({}),
        cost: 2,
        handler: () => 'ok',
      });
    const dispatcher = createDispatcher([
      errorMapping(),
      toolLookup(registry),
      circuitBreaker({ failureThreshold: 2, cooldownMs: 60_000 }),
      retry({ maxAttempts: 2, baseDelayMs: 1, random: () => 0 }),
      rateLimit({ rate: 1, intervalMs: 60_000, burst: 2, maxWaitMs: 0, key: (ctx) => ctx.toolName }),
      windowedBudget({
        key: (ctx) => (ctx.options as { tenant?: string }).tenant,
        limit: 4,
        windowMs: 60_000,
      }),
    ]);
    const health = toolHealth({ clock, dispatcher });
    const settle = async <T>(promise: Promise<T>) => {
      await vi.advanceTimersByTimeAsync(10);
      return promise;
    };
    await settle(dispatcher.dispatch('flaky', {}));
    for (let i = 0; i < 3; i++) await settle(dispatcher.dispatch('cheap', {}, { tenant: 'acme' } as never));
    const report = await health.report();
    const flaky = rowOf(report, 'flaky');
    expect(flaky.calls).toBe(1);
    expect(flaky.retries).toBe(1);
    expect(flaky.outcomes).toEqual({ transient: 1 });
    expect(flaky.breaker).toBe('open');
    const cheap = rowOf(report, 'cheap');
    expect(cheap.outcomes).toEqual({ ok: 2, rate_limited: 1 });
    expect(cheap.rateLimit?.refusals).toBe(1);
    expect(cheap.budget?.acme?.spent).toBe(4);
    health.close();
  });

  it('stops hearing the dispatcher once closed', async () => {
    const registry = new ToolRegistry().register({
      name: 'echo',
      description: 'echoes',
      inputSchema: z.object({}),
      handler: () => 'ok',
    });
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry)]);
    const health = toolHealth({ clock, dispatcher });
    await dispatcher.dispatch('echo', {});
    health.close();
    await dispatcher.dispatch('echo', {});
    expect(rowOf(await health.report(), 'echo').calls).toBe(1);
  });
});

describe("toolHealth: listen 'watched'", () => {
  function echoDispatcher() {
    const registry = new ToolRegistry().register({
      name: 'echo',
      description: 'echoes',
      inputSchema: z.object({}),
      handler: () => 'ok',
    });
    return createDispatcher([errorMapping(), toolLookup(registry)]);
  }

  it('hears the dispatcher only from the first look until a window passes with nobody looking', async () => {
    const dispatcher = echoDispatcher();
    const health = toolHealth({ clock, dispatcher, listen: 'watched' });
    await dispatcher.dispatch('echo', {});
    expect((await health.report()).tools).toEqual([]);
    await dispatcher.dispatch('echo', {});
    expect(rowOf(await health.report(), 'echo').calls).toBe(1);
    await vi.advanceTimersByTimeAsync(61_000);
    expect(vi.getTimerCount()).toBe(0);
    await dispatcher.dispatch('echo', {});
    // Asleep when that call ran: the report wakes the desk, but the call was not heard.
    expect((await health.report()).tools).toEqual([]);
    health.close();
  });

  it('keeps hearing while a listener is subscribed', async () => {
    const dispatcher = echoDispatcher();
    const health = toolHealth({ clock, dispatcher, listen: 'watched' });
    const reports: HealthReport[] = [];
    const unsubscribe = health.subscribe((report) => reports.push(report));
    await vi.advanceTimersByTimeAsync(120_000);
    await dispatcher.dispatch('echo', {});
    await vi.advanceTimersByTimeAsync(1_000);
    expect(reports.at(-1)?.tools[0]?.calls).toBe(1);
    unsubscribe();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(vi.getTimerCount()).toBe(0);
    health.close();
  });

  it("refuses 'watched' with share, and any other value, naming listen", () => {
    const share = { publish: () => undefined, readAll: () => [] };
    expect(() => toolHealth({ listen: 'watched', share })).toThrow(/listen/);
    expect(() => toolHealth({ listen: 'sometimes' as never })).toThrow(/listen/);
  });
});

describe('toolHealth: subscribe', () => {
  it('reports about once a second while anyone listens, and stops its timer when nobody does', async () => {
    const health = toolHealth({ clock });
    const reports: HealthReport[] = [];
    const unsubscribe = health.subscribe((report) => reports.push(report));
    health.record(event('dispatch.success', 'search', { durationMs: 3 }));
    await vi.advanceTimersByTimeAsync(3_000);
    expect(reports).toHaveLength(3);
    expect(reports[0]?.tools[0]?.tool).toBe('search');
    unsubscribe();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(3_000);
    expect(reports).toHaveLength(3);
  });

  it('keeps feeding the other listeners when one throws', async () => {
    const health = toolHealth({ clock });
    const reports: HealthReport[] = [];
    health.subscribe(() => {
      throw new Error('broken');
    });
    health.subscribe((report) => reports.push(report));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(reports).toHaveLength(1);
    health.close();
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('toolHealth: options', () => {
  it('rejects a bad value naming the option, and an unknown key naming the nearest one', () => {
    expect(() => toolHealth({ windowMs: -1 })).toThrow(/windowMs/);
    expect(() => toolHealth({ maxTools: 0 })).toThrow(/maxTools/);
    expect(() => toolHealth({ share: {} as never })).toThrow(/share/);
    expect(() => toolHealth({ dispatcher: {} as never })).toThrow(/dispatcher/);
    expect(() => toolHealth({ windowMS: 1_000 } as never)).toThrow(/windowMs/);
  });
});

describe('toolHealth: shared across a fleet', () => {
  /** A share in memory: what a store would keep, for the merge logic alone (Redis is tested apart). */
  function memoryShare(): HealthShare & { kept: Map<string, HealthSnapshot> } {
    const kept = new Map<string, HealthSnapshot>();
    return {
      kept,
      publish: (processId, snapshot) => {
        kept.set(processId, JSON.parse(JSON.stringify(snapshot)) as HealthSnapshot);
      },
      readAll: () => [...kept.values()],
    };
  }

  it("merges another process's rows: counts summed, quantiles read from the merged histograms", async () => {
    const share = memoryShare();
    const registry = new ToolRegistry().register({
      name: 'echo',
      description: 'e',
      inputSchema: z.object({}),
      handler: () => 'ok',
    });
    const a = toolHealth({
      clock,
      share,
      processId: 'a',
      dispatcher: createDispatcher([errorMapping(), toolLookup(registry)]),
    });
    const b = toolHealth({ clock, share, processId: 'b' });
    for (let i = 0; i < 99; i++) a.record(event('dispatch.success', 'search', { durationMs: 10 }));
    b.record(event('dispatch.success', 'search', { durationMs: 1_000 }));
    b.record(event('dispatch.failure', 'other', { kind: 'timeout', durationMs: 1 }));
    await vi.advanceTimersByTimeAsync(1_000);
    const report = await b.report();
    expect(report.processes).toBe(2);
    const search = rowOf(report, 'search');
    expect(search.calls).toBe(100);
    expect(search.p50).toBeLessThan(11);
    expect(search.p99).toBeLessThan(11);
    expect(rowOf(report, 'other').calls).toBe(1);
    expect(JSON.stringify(report)).not.toContain('latency');
    a.close();
    b.close();
  });

  it('leaves out a process whose snapshot is stale, and shows its own when the store fails', async () => {
    const share = memoryShare();
    share.kept.set('gone', { processId: 'gone', at: Date.now() - 60_000, windowMs: 60_000, tools: [] });
    share.kept.set('junk', { nonsense: true } as never);
    const health = toolHealth({ clock, share, processId: 'me' });
    expect((await health.report()).processes).toBe(1);
    const broken = toolHealth({
      clock,
      processId: 'me',
      share: {
        publish: () => Promise.reject(new Error('down')),
        readAll: () => Promise.reject(new Error('down')),
      },
    });
    broken.record(event('dispatch.success', 'search', { durationMs: 1 }));
    expect(rowOf(await broken.report(), 'search').calls).toBe(1);
    health.close();
    broken.close();
  });
});

describe('latency histogram', () => {
  it('reads quantiles within 10 % of the truth across six decades', () => {
    for (const ms of [0.05, 1, 7, 130, 2_500, 90_000]) {
      const buckets = new Map([[latencyBucket(ms), 1]]);
      const read = quantileOf(buckets, 0.5) ?? 0;
      expect(read).toBeGreaterThanOrEqual(ms * 0.999);
      expect(read).toBeLessThanOrEqual(ms * 1.1);
    }
  });
});
