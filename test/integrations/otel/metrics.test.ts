// otelMetrics against the real SDK: the duration histogram, the counters and the up-down counters.

import { metrics, type Meter } from '@opentelemetry/api';
import { DataPointType, type MetricData } from '@opentelemetry/sdk-metrics';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  circuitBreaker,
  createDispatcher,
  defaultStack,
  ToolRegistry,
  TransientError,
  type DefaultStackOptions,
  type Middleware,
} from '../../../index.js';
import { otelMetrics, otelTracing } from '../../../integrations/otel/index.js';
import { flush, gate } from '../../helpers/gate.js';
import {
  counterValue,
  histogramCount,
  installTelemetry,
  manualClock,
  pointsWith,
  type Telemetry,
} from './harness.js';

let telemetry: Telemetry;
beforeAll(() => {
  telemetry = installTelemetry();
});
afterAll(async () => {
  await telemetry.shutdown();
});
// The reader is cumulative and shared: each test uses tool names of its own.
beforeEach(() => telemetry.reset());

const query = z.object({ q: z.string() });

function setup(
  register: (registry: ToolRegistry) => void,
  stack: Omit<DefaultStackOptions, 'registry'> = {},
  layers: (layers: Middleware[]) => Middleware[] = (given) => given,
) {
  const registry = new ToolRegistry();
  register(registry);
  const meter = telemetry.meterProvider.getMeter('tool-dispatcher');
  return createDispatcher([otelMetrics({ meter }), ...layers(defaultStack({ registry, ...stack }))]);
}

function metric(data: Map<string, MetricData>, name: string): MetricData {
  const found = data.get(name);
  if (found === undefined) throw new Error(`No metric ${name}; have ${[...data.keys()].join(', ')}`);
  return found;
}

describe('otelMetrics: gen_ai.execute_tool.duration', () => {
  it('records one point per call, in seconds, by tool name, tool type and error type', async () => {
    const dispatcher = setup((registry) => {
      registry.register({ name: 'm1.ok', inputSchema: query, handler: () => 1 });
      registry.register({
        name: 'm1.bad',
        inputSchema: query,
        handler: () => {
          throw new Error('nope');
        },
      });
    });
    await dispatcher.dispatch('m1.ok', { q: 'a' });
    await dispatcher.dispatch('m1.ok', { q: 'b' });
    await dispatcher.dispatch('m1.bad', { q: 'a' });
    await dispatcher.dispatch('m1.ok', { q: 7 });

    const data = await telemetry.collect();
    const duration = metric(data, 'gen_ai.execute_tool.duration');
    expect(duration.descriptor).toMatchObject({ unit: 's' });
    expect(duration.dataPointType).toBe(DataPointType.HISTOGRAM);
    const ok = pointsWith<{ count: number; buckets: { boundaries: number[] } }>(duration, {
      'gen_ai.tool.name': 'm1.ok',
    });
    expect(ok.map((point) => point.attributes)).toEqual([
      { 'gen_ai.tool.name': 'm1.ok', 'gen_ai.tool.type': 'function' },
      { 'gen_ai.tool.name': 'm1.ok', 'gen_ai.tool.type': 'function', 'error.type': 'schema' },
    ]);
    expect(ok[0]?.value.count).toBe(2);
    expect(ok[0]?.value.buckets.boundaries).toEqual([
      0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
    ]);
    expect(histogramCount(duration, { 'gen_ai.tool.name': 'm1.bad', 'error.type': 'internal' })).toBe(1);
  });

  it('folds names the registry does not know into _OTHER, so invented names add no series', async () => {
    const dispatcher = setup(() => {});
    await dispatcher.dispatch('m2.hallucinated_1', {});
    await dispatcher.dispatch('m2.hallucinated_2', {});
    const duration = metric(await telemetry.collect(), 'gen_ai.execute_tool.duration');
    expect(histogramCount(duration, { 'gen_ai.tool.name': '_OTHER', 'error.type': 'not_found' })).toBe(2);
    expect(JSON.stringify(duration.dataPoints)).not.toContain('hallucinated');
  });

  it('measures the call on the clock the dispatcher uses', async () => {
    let now = 5_000;
    const registry = new ToolRegistry().register({
      name: 'm3.slow',
      inputSchema: query,
      handler: async () => {
        now += 1_500;
        return 1;
      },
    });
    const meter = telemetry.meterProvider.getMeter('tool-dispatcher');
    const dispatcher = createDispatcher([otelMetrics({ meter }), ...defaultStack({ registry })], {
      now: () => now,
    });
    await dispatcher.dispatch('m3.slow', { q: 'a' });
    const duration = metric(await telemetry.collect(), 'gen_ai.execute_tool.duration');
    const [point] = pointsWith<{ sum: number }>(duration, { 'gen_ai.tool.name': 'm3.slow' });
    expect(point?.value.sum).toBe(1.5);
  });
});

describe('otelMetrics: counters', () => {
  it('counts attempts, retries by kind and timeouts', async () => {
    const retryClock = manualClock();
    const timeoutClock = manualClock();
    let calls = 0;
    const dispatcher = setup(
      (registry) => {
        registry.register({
          name: 'm4.flaky',
          inputSchema: query,
          handler: () => {
            calls += 1;
            if (calls === 1) throw new TransientError('again');
            return 'ok';
          },
        });
        registry.register({
          name: 'm4.hang',
          inputSchema: query,
          timeoutMs: 10,
          handler: (_args, ctx) => new Promise((resolve) => ctx.signal.addEventListener('abort', resolve)),
        });
      },
      { retry: { clock: retryClock, random: () => 0 }, timeout: { clock: timeoutClock } },
    );
    const flaky = dispatcher.dispatch('m4.flaky', { q: 'a' });
    await flush();
    retryClock.fire();
    await flaky;
    const hang = dispatcher.dispatch('m4.hang', { q: 'a' });
    await flush();
    timeoutClock.fire();
    expect(await hang).toMatchObject({ kind: 'timeout' });

    const data = await telemetry.collect();
    expect(counterValue(metric(data, 'tool_dispatcher.attempts'), { 'gen_ai.tool.name': 'm4.flaky' })).toBe(
      2,
    );
    expect(counterValue(metric(data, 'tool_dispatcher.attempts'), { 'gen_ai.tool.name': 'm4.hang' })).toBe(1);
    expect(
      pointsWith(metric(data, 'tool_dispatcher.retries'), { 'gen_ai.tool.name': 'm4.flaky' }).map((p) => [
        p.attributes,
        p.value,
      ]),
    ).toEqual([[{ 'gen_ai.tool.name': 'm4.flaky', 'error.type': 'transient' }, 1]]);
    expect(counterValue(metric(data, 'tool_dispatcher.timeouts'), { 'gen_ai.tool.name': 'm4.hang' })).toBe(1);
  });

  it('counts dedupe hits by source', async () => {
    const release = gate();
    const dispatcher = setup((registry) =>
      registry.register({
        name: 'm5.charge',
        inputSchema: query,
        handler: async () => {
          await release.promise;
          return 'charged';
        },
      }),
    );
    const leader = dispatcher.dispatch('m5.charge', { q: 'a' }, { idempotencyKey: 'k' });
    const follower = dispatcher.dispatch('m5.charge', { q: 'a' }, { idempotencyKey: 'k' });
    await flush();
    release.open();
    await Promise.all([leader, follower]);
    await dispatcher.dispatch('m5.charge', { q: 'a' }, { idempotencyKey: 'k' });

    const hits = metric(await telemetry.collect(), 'tool_dispatcher.dedupe_hits');
    expect(
      counterValue(hits, {
        'gen_ai.tool.name': 'm5.charge',
        'tool_dispatcher.idempotency.source': 'in_flight',
      }),
    ).toBe(1);
    expect(
      counterValue(hits, { 'gen_ai.tool.name': 'm5.charge', 'tool_dispatcher.idempotency.source': 'cache' }),
    ).toBe(1);
    expect(JSON.stringify(hits.dataPoints)).not.toContain('"k"');
  });

  it('counts breaker transitions by the state entered', async () => {
    let now = 0;
    const breaker = circuitBreaker({ failureThreshold: 1, cooldownMs: 100, clock: { now: () => now } });
    let failing = true;
    const dispatcher = setup(
      (registry) =>
        registry.register({
          name: 'm6.backend',
          inputSchema: query,
          handler: () => {
            if (failing) throw new Error('down');
            return 'up';
          },
        }),
      {},
      (layers) => {
        layers.splice(
          layers.findIndex((layer) => layer.name === 'concurrencyLimit'),
          0,
          breaker,
        );
        return layers;
      },
    );
    await dispatcher.dispatch('m6.backend', { q: 'a' });
    expect(await dispatcher.dispatch('m6.backend', { q: 'a' })).toMatchObject({ kind: 'circuit_open' });
    now = 200;
    failing = false;
    expect(await dispatcher.dispatch('m6.backend', { q: 'a' })).toMatchObject({ ok: true });

    const transitions = metric(await telemetry.collect(), 'tool_dispatcher.breaker_transitions');
    const states = pointsWith<number>(transitions, { 'gen_ai.tool.name': 'm6.backend' })
      .map((point) => [point.attributes['tool_dispatcher.circuit.state'], point.value])
      .sort();
    expect(states).toEqual([
      ['closed', 1],
      ['half_open', 1],
      ['open', 1],
    ]);
  });
});

describe('otelMetrics: calls in flight and queued', () => {
  it('counts a call in flight while it runs and a queued call while it waits', async () => {
    const first = gate();
    const dispatcher = setup(
      (registry) =>
        registry.register({
          name: 'm7.job',
          inputSchema: query,
          handler: async ({ q }) => {
            if (q === 'first') await first.promise;
            return q;
          },
        }),
      { concurrency: { max: 1 } },
    );
    const one = dispatcher.dispatch('m7.job', { q: 'first' });
    const two = dispatcher.dispatch('m7.job', { q: 'second' });
    await flush();
    let data = await telemetry.collect();
    const tool = { 'gen_ai.tool.name': 'm7.job' };
    expect(counterValue(metric(data, 'tool_dispatcher.in_flight'), tool)).toBe(2);
    expect(counterValue(metric(data, 'tool_dispatcher.queued'), tool)).toBe(1);

    first.open();
    await Promise.all([one, two]);
    data = await telemetry.collect();
    expect(counterValue(metric(data, 'tool_dispatcher.in_flight'), tool)).toBe(0);
    expect(counterValue(metric(data, 'tool_dispatcher.queued'), tool)).toBe(0);
  });

  it('takes a caller that aborts while queued out of both', async () => {
    const first = gate();
    const dispatcher = setup(
      (registry) =>
        registry.register({
          name: 'm8.job',
          inputSchema: query,
          handler: async () => {
            await first.promise;
            return 1;
          },
        }),
      { concurrency: { max: 1 } },
    );
    const one = dispatcher.dispatch('m8.job', { q: 'a' });
    const controller = new AbortController();
    const two = dispatcher.dispatch('m8.job', { q: 'b' }, { signal: controller.signal });
    await flush();
    controller.abort();
    expect(await two).toMatchObject({ kind: 'cancelled' });
    const tool = { 'gen_ai.tool.name': 'm8.job' };
    let data = await telemetry.collect();
    expect(counterValue(metric(data, 'tool_dispatcher.in_flight'), tool)).toBe(1);
    expect(counterValue(metric(data, 'tool_dispatcher.queued'), tool)).toBe(0);
    expect(
      histogramCount(metric(data, 'gen_ai.execute_tool.duration'), { ...tool, 'error.type': 'cancelled' }),
    ).toBe(1);
    first.open();
    await one;
    data = await telemetry.collect();
    expect(counterValue(metric(data, 'tool_dispatcher.in_flight'), tool)).toBe(0);
  });
});

describe('otelMetrics: robustness and defaults', () => {
  it('uses only low-cardinality attributes', async () => {
    const dispatcher = setup((registry) =>
      registry.register({ name: 'm9.tool', inputSchema: query, handler: () => 1 }),
    );
    await dispatcher.dispatch(
      'm9.tool',
      { q: 'secret-arg' },
      { callId: 'call_unique_1', idempotencyKey: 'key_unique_1' },
    );
    const data = await telemetry.collect();
    const keys = new Set<string>();
    for (const metricData of data.values()) {
      for (const point of metricData.dataPoints)
        for (const key of Object.keys(point.attributes)) keys.add(key);
    }
    const allowed = [
      'gen_ai.tool.name',
      'gen_ai.tool.type',
      'error.type',
      'tool_dispatcher.idempotency.source',
      'tool_dispatcher.circuit.state',
    ];
    expect(keys).toContain('gen_ai.tool.name');
    for (const key of keys) expect(allowed).toContain(key);
    const text = JSON.stringify([...data.values()].map((m) => m.dataPoints));
    for (const value of ['secret-arg', 'call_unique_1', 'key_unique_1']) expect(text).not.toContain(value);
  });

  it('never breaks a dispatch when the meter throws', async () => {
    const throwing = () => {
      throw new Error('meter down');
    };
    const broken = {
      createHistogram: () => ({ record: throwing }),
      createCounter: () => ({ add: throwing }),
      createObservableCounter: () => ({ addCallback: () => {} }),
      createObservableUpDownCounter: () => ({ addCallback: () => {} }),
    } as unknown as Meter;
    const clock = manualClock();
    let calls = 0;
    const registry = new ToolRegistry().register({
      name: 'm10.tool',
      inputSchema: query,
      handler: () => {
        calls += 1;
        if (calls === 1) throw new TransientError('again');
        return 1;
      },
    });
    const dispatcher = createDispatcher([
      otelMetrics({ meter: broken }),
      ...defaultStack({ registry, retry: { clock, random: () => 0 } }),
    ]);
    const pending = dispatcher.dispatch('m10.tool', { q: 'a' }, { idempotencyKey: 'k10' });
    await flush();
    clock.fire();
    expect(await pending).toEqual({ ok: true, result: 1, attempts: 2 });
    expect(await dispatcher.dispatch('m10.tool', { q: 'a' }, { idempotencyKey: 'k10' })).toMatchObject({
      ok: true,
      attempts: 0,
    });

    const refusing = { createHistogram: throwing } as unknown as Meter;
    const second = createDispatcher([otelMetrics({ meter: refusing }), ...defaultStack({ registry })]);
    expect(await second.dispatch('m10.tool', { q: 'a' })).toEqual({ ok: true, result: 1, attempts: 1 });
  });

  it('shares the counts of every layer on one meter, so their series add up', async () => {
    const meter = telemetry.meterProvider.getMeter('tool-dispatcher');
    const release = gate();
    const registry = new ToolRegistry().register({
      name: 'm13.tool',
      inputSchema: query,
      handler: async () => {
        await release.promise;
        return 1;
      },
    });
    const one = createDispatcher([otelMetrics({ meter }), ...defaultStack({ registry })]);
    const two = createDispatcher([otelMetrics({ meter }), ...defaultStack({ registry })]);
    const running = [one.dispatch('m13.tool', { q: 'a' }), two.dispatch('m13.tool', { q: 'b' })];
    await flush();
    const data = await telemetry.collect();
    const tool = { 'gen_ai.tool.name': 'm13.tool' };
    expect(counterValue(metric(data, 'tool_dispatcher.in_flight'), tool)).toBe(2);
    expect(counterValue(metric(data, 'tool_dispatcher.attempts'), tool)).toBe(2);
    release.open();
    await Promise.all(running);
  });

  it('uses the global meter provider, also one registered after the layer was made', async () => {
    metrics.disable();
    const layer = otelMetrics();
    const registry = new ToolRegistry().register({ name: 'm11.tool', inputSchema: query, handler: () => 1 });
    const dispatcher = createDispatcher([layer, ...defaultStack({ registry })]);
    await dispatcher.dispatch('m11.tool', { q: 'a' });
    metrics.setGlobalMeterProvider(telemetry.meterProvider);
    await dispatcher.dispatch('m11.tool', { q: 'a' });
    const duration = metric(await telemetry.collect(), 'gen_ai.execute_tool.duration');
    expect(histogramCount(duration, { 'gen_ai.tool.name': 'm11.tool' })).toBe(1);
  });

  it('sits beside otelTracing in front of the default stack', async () => {
    const registry = new ToolRegistry().register({ name: 'm12.tool', inputSchema: query, handler: () => 1 });
    const dispatcher = createDispatcher([
      otelTracing({ tracer: telemetry.tracer }),
      otelMetrics(),
      ...defaultStack({ registry }),
    ]);
    expect(await dispatcher.dispatch('m12.tool', { q: 'a' })).toMatchObject({ ok: true });
    expect(telemetry.finished().map((span) => span.name)).toEqual(['execute_tool m12.tool']);
    const duration = metric(await telemetry.collect(), 'gen_ai.execute_tool.duration');
    expect(histogramCount(duration, { 'gen_ai.tool.name': 'm12.tool' })).toBe(1);
  });

  it('rejects bad options with a TypeError naming the option', () => {
    expect(() => otelMetrics(7 as never)).toThrow(/otelMetrics\(\) options/);
    expect(() => otelMetrics({ meter: {} as Meter })).toThrow(/meter/);
    expect(() => otelMetrics({ toolType: '' })).toThrow(/toolType/);
    expect(otelMetrics().name).toBe('otelMetrics');
  });
});
