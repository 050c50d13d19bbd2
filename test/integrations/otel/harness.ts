// The real OpenTelemetry SDK wired for tests: an in-memory span exporter, a metric reader, ALS context.

import { AsyncResource } from 'node:async_hooks';
import { context, metrics, trace, type Span, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type DataPoint,
  type Histogram,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import type { Clock } from '../../../index.js';

/** The SDK pieces one test file shares; `reset()` between tests. */
export interface Telemetry {
  readonly spans: InMemorySpanExporter;
  readonly tracerProvider: BasicTracerProvider;
  readonly meterProvider: MeterProvider;
  /** The tracer the layer gets in tests, counting how often each span is ended. */
  readonly tracer: Tracer;
  /** How many times `end()` was called on each span the layer started, by span id. */
  readonly ends: Map<string, number>;
  /** The finished spans so far. */
  finished(): ReadableSpan[];
  /** The metric data collected right now, by metric name. */
  collect(): Promise<Map<string, MetricData>>;
  reset(): void;
  shutdown(): Promise<void>;
}

/**
 * Registers an ALS context manager, a BasicTracerProvider with an in-memory exporter and a
 * MeterProvider with an in-memory exporter as the globals, the way an application would.
 */
export function installTelemetry(): Telemetry {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  trace.setGlobalTracerProvider(tracerProvider);
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  // The interval never elapses in a test; points are read with forceFlush().
  const reader = new PeriodicExportingMetricReader({
    exporter: metricExporter,
    exportIntervalMillis: 3_600_000,
  });
  const meterProvider = new MeterProvider({ readers: [reader] });
  metrics.setGlobalMeterProvider(meterProvider);

  const ends = new Map<string, number>();
  const inner = tracerProvider.getTracer('tool-dispatcher-test');
  const tracer: Tracer = {
    startSpan(name, options, ctx) {
      return countingEnds(inner.startSpan(name, options, ctx), ends);
    },
    startActiveSpan: inner.startActiveSpan.bind(inner) as Tracer['startActiveSpan'],
  };

  return {
    spans,
    tracerProvider,
    meterProvider,
    tracer,
    ends,
    finished: () => spans.getFinishedSpans(),
    async collect() {
      metricExporter.reset();
      await reader.forceFlush();
      const byName = new Map<string, MetricData>();
      for (const resource of metricExporter.getMetrics()) {
        for (const scope of resource.scopeMetrics) {
          for (const metric of scope.metrics) byName.set(metric.descriptor.name, metric);
        }
      }
      return byName;
    },
    reset() {
      spans.reset();
      ends.clear();
    },
    async shutdown() {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
      trace.disable();
      metrics.disable();
      context.disable();
    },
  };
}

function countingEnds(span: Span, ends: Map<string, number>): Span {
  const end = span.end.bind(span);
  const id = span.spanContext().spanId;
  span.end = (time) => {
    ends.set(id, (ends.get(id) ?? 0) + 1);
    end(time);
  };
  return span;
}

/** The finished span named `name`; fails the test when there is not exactly one. */
export function onlySpan(spans: readonly ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((span) => span.name === name);
  if (found.length !== 1) {
    throw new Error(
      `Expected one span named "${name}", found ${found.length}: ${spans.map((s) => s.name).join(', ')}`,
    );
  }
  return found[0] as ReadableSpan;
}

/** Whether `child`'s parent is `parent`. */
export function isChildOf(child: ReadableSpan, parent: ReadableSpan): boolean {
  return (
    child.parentSpanContext?.spanId === parent.spanContext().spanId &&
    child.spanContext().traceId === parent.spanContext().traceId
  );
}

/** Event names of a span, in order. */
export function eventNames(span: ReadableSpan): string[] {
  return span.events.map((event) => event.name);
}

/** The data points of a metric whose attributes include `match`. */
export function pointsWith<T>(
  metric: MetricData | undefined,
  match: Record<string, unknown>,
): DataPoint<T>[] {
  if (metric === undefined) return [];
  const points = metric.dataPoints as DataPoint<T>[];
  return points.filter((point) =>
    Object.entries(match).every(([key, value]) => point.attributes[key] === value),
  );
}

/** The sum of a counter's points whose attributes include `match`. */
export function counterValue(metric: MetricData | undefined, match: Record<string, unknown> = {}): number {
  if (metric !== undefined && metric.dataPointType !== DataPointType.SUM) throw new Error('Not a sum');
  return pointsWith<number>(metric, match).reduce((sum, point) => sum + point.value, 0);
}

/** The total count of a histogram's points whose attributes include `match`. */
export function histogramCount(metric: MetricData | undefined, match: Record<string, unknown> = {}): number {
  return pointsWith<Histogram>(metric, match).reduce((sum, point) => sum + point.value.count, 0);
}

/**
 * A clock whose timers fire only on `fire()`, each in the async context it was set in (as real
 * timers do), so work after a backoff still runs inside its dispatch's span.
 */
export function manualClock(): Clock & { fire(): void; pending(): number } {
  const timers = new Map<number, () => void>();
  let nextHandle = 0;
  let now = 1_000_000;
  return {
    now: () => now,
    setTimeout(callback, ms) {
      const handle = ++nextHandle;
      const due = now + ms;
      timers.set(
        handle,
        AsyncResource.bind(() => {
          now = Math.max(now, due);
          callback();
        }),
      );
      return handle;
    },
    clearTimeout(handle) {
      timers.delete(handle as number);
    },
    fire() {
      const due = [...timers.values()];
      timers.clear();
      for (const callback of due) callback();
    },
    pending: () => timers.size,
  };
}
