// OpenTelemetry: a few dispatches traced and measured with the real SDK, printed as a span tree.
//
//   npx tsx examples/otel.ts             the span tree and the metric totals
//   npx tsx examples/otel.ts --console   also the SDK's ConsoleSpanExporter output, span by span
//
// The retry waits are 1 ms and the timeout 20 ms, so the run takes well under a second.

import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type DataPoint,
  type Histogram,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  ConsoleSpanExporter,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry, TransientError } from '../index.js';
import { otelMetrics, otelTracing } from '../integrations/otel/index.js';

// 1. The SDK, wired by hand (BasicTracerProvider 2.x has no register()).
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
const spans = new InMemorySpanExporter();
const processors = [new SimpleSpanProcessor(spans)];
if (process.argv.includes('--console')) processors.push(new SimpleSpanProcessor(new ConsoleSpanExporter()));
const tracerProvider = new BasicTracerProvider({ spanProcessors: processors });
trace.setGlobalTracerProvider(tracerProvider);
const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 60_000 });
const meterProvider = new MeterProvider({ readers: [reader] });

// 2. Tools whose handlers open spans of their own, as instrumented clients (HTTP, databases) do.
const app = trace.getTracer('example-app');
const inSpan = <T>(name: string, work: () => Promise<T>): Promise<T> =>
  app.startActiveSpan(name, async (span) => {
    try {
      return await work();
    } finally {
      span.end();
    }
  });

let searchFailures = 1;
const registry = new ToolRegistry()
  .register({
    name: 'search.web',
    description: 'Search the web',
    inputSchema: z.object({ query: z.string() }),
    handler: ({ query }) =>
      inSpan('http.get search-api', async () => {
        if (searchFailures-- > 0) throw new TransientError('search backend busy');
        return [`${query}: result 1`, `${query}: result 2`];
      }),
  })
  .register({
    name: 'db.report',
    description: 'Build a slow report',
    inputSchema: z.object({ month: z.string() }),
    timeoutMs: 20,
    handler: (_args, ctx) =>
      inSpan(
        'db.query report',
        () => new Promise((resolve) => ctx.signal.addEventListener('abort', resolve)),
      ),
  })
  .register({
    name: 'pay.charge',
    description: 'Charge a card once',
    inputSchema: z.object({ cents: z.number().int() }),
    handler: ({ cents }) => inSpan('bank.charge', async () => ({ charged: cents })),
  });

// 3. The two layers in front of the default stack.
const dispatcher = createDispatcher([
  otelTracing(),
  otelMetrics({ meter: meterProvider.getMeter('tool-dispatcher') }),
  ...defaultStack({ registry, retry: { baseDelayMs: 1, random: () => 0 } }),
]);

// 4. One agent turn with a few tool calls.
await inSpan('agent.turn', async () => {
  await dispatcher.dispatch('search.web', { query: 'otel' }, { callId: 'call_search' });
  await dispatcher.dispatch('db.report', { month: '2026-11' }, { callId: 'call_report' });
  await dispatcher.dispatch('search.web', { query: 42 }, { callId: 'call_bad_args' });
  await dispatcher.dispatch('weather.now', {}, { callId: 'call_unknown' });
  await Promise.all([
    dispatcher.dispatch('pay.charge', { cents: 500 }, { callId: 'call_pay_1', idempotencyKey: 'order-7' }),
    dispatcher.dispatch('pay.charge', { cents: 500 }, { callId: 'call_pay_2', idempotencyKey: 'order-7' }),
  ]);
});

// 5. The span tree, readably: attributes of ours and the conventions', then the span events.
const finished = spans.getFinishedSpans();
const byParent = new Map<string | undefined, ReadableSpan[]>();
for (const span of finished) {
  const parent = finished.some((s) => s.spanContext().spanId === span.parentSpanContext?.spanId)
    ? span.parentSpanContext?.spanId
    : undefined;
  byParent.set(parent, [...(byParent.get(parent) ?? []), span]);
}
const shown = [
  'gen_ai.tool.call.id',
  'error.type',
  'tool_dispatcher.attempts',
  'tool_dispatcher.retries',
  'tool_dispatcher.idempotency.source',
];
const describe = (span: ReadableSpan): string => {
  const attributes = shown
    .filter((key) => span.attributes[key] !== undefined)
    .map((key) => `${key.replace(/^(gen_ai|tool_dispatcher)\./, '')}=${String(span.attributes[key])}`);
  const links = span.links.length > 0 ? [`links=${span.links.length}`] : [];
  return [span.name, ...attributes, ...links].join('  ');
};
const print = (span: ReadableSpan, indent: string): void => {
  console.log(`${indent}${describe(span)}`);
  for (const event of span.events) {
    const details = Object.entries(event.attributes ?? {})
      .filter(([key]) => key !== 'tool_dispatcher.attempt' && key !== 'tool_dispatcher.error.message')
      .map(([key, value]) => `${key.replace(/^(gen_ai|tool_dispatcher)\./, '')}=${String(value)}`);
    console.log(`${indent}  · ${event.name.replace('tool_dispatcher.', '')} ${details.join(' ')}`.trimEnd());
  }
  const children = byParent.get(span.spanContext().spanId) ?? [];
  children.sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
  for (const child of children) print(child, `${indent}  `);
};
for (const root of byParent.get(undefined) ?? []) print(root, '');

// 6. The metric totals.
await reader.forceFlush();
console.log('\nmetrics');
for (const scope of metricExporter.getMetrics().flatMap((resource) => resource.scopeMetrics)) {
  for (const metric of scope.metrics) {
    for (const point of metric.dataPoints) {
      const value = point.value as number | Histogram;
      const shownValue =
        typeof value === 'number' ? value : `count=${(point as DataPoint<Histogram>).value.count}`;
      const labels = Object.entries(point.attributes).map(([key, v]) => `${key}=${String(v)}`);
      console.log(`  ${metric.descriptor.name} {${labels.join(', ')}} ${shownValue}`);
    }
  }
}

await tracerProvider.shutdown();
await meterProvider.shutdown();
