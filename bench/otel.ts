// The OpenTelemetry layers' cost per dispatch: no SDK (the API's no-op) and the real SDK, beside the bare stack.
//
//   npx tsx bench/otel.ts            full run (about 20 s), prints two tables and the ratios
//   npx tsx bench/otel.ts --quick    shorter rounds (about 8 s)
//
// Exit code 1 when `[otelTracing(), ...defaultStack()]` with the no-op tracer costs more than
// `noopTarget` × the bare default stack per dispatch, measured in the same run.
//
// Two groups, because the SDK group needs a global context manager and that is exactly what an
// application without an SDK does not have: group 1 runs with none registered, group 2 after
// the ALS context manager is set, the way an application with the SDK runs.

import { pathToFileURL } from 'node:url';
import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { Dispatcher, Middleware } from '../index.js';
import {
  pairedRatio,
  runGroup,
  type BenchCase,
  type GroupOptions,
  type GroupResult,
  type Ratio,
} from './harness.js';
import { loadIntegration, loadLibrary, loadOptionsFromArgv, type LoadedLibrary } from './library.js';
import { consoleTable, formatNs, formatRatio } from './report.js';
import { argsSchema, immediateHandler, smallArgs } from './stacks.js';

/** The most the no-op tracing layer may cost, as a multiple of the bare default stack. */
export const noopTarget = 1.3;

/** What `runOtelBench` measured. */
export interface OtelBenchResult {
  /** Group 1, no SDK and no context manager: bare, a pass-through layer, no-op tracing, + metrics. */
  noSdk: GroupResult;
  /** Group 2, ALS context manager: bare, real SDK tracing, real SDK tracing + metrics. */
  sdk: GroupResult;
  /** `[otelTracing(), ...defaultStack()]` (no-op) per dispatch / bare default stack. */
  noopVsBare: Ratio;
  /**
   * The no-op tracing layer / a layer that only calls `next()`: the layer's own cost, apart from
   * what any layer in front of the default stack costs.
   */
  noopVsPassThrough: Ratio;
  /** The same with `otelMetrics()` (no-op meter) as well. */
  noopBothVsBare: Ratio;
  /** Real SDK (BasicTracerProvider, SimpleSpanProcessor, in-memory exporter) / bare, with ALS. */
  sdkVsBare: Ratio;
  /** Real SDK tracing and metrics (MeterProvider, in-memory exporter) / bare, with ALS. */
  sdkBothVsBare: Ratio;
  /** Extra nanoseconds per dispatch of the SDK tracing layer over the bare stack (medians). */
  sdkExtraNs: number;
  /** Whether `noopVsBare.median` is within `noopTarget`. */
  withinTarget: boolean;
}

const settings: Record<'full' | 'quick', GroupOptions> = {
  full: { rounds: 30, warmupRounds: 5, warmupMs: 2_000, batchMs: 25 },
  quick: { rounds: 15, warmupRounds: 3, warmupMs: 1_000, batchMs: 10 },
};

const toolName = 'bench.immediate';

function dispatcherWith({ lib }: LoadedLibrary, front: Middleware[]): Dispatcher {
  const { createDispatcher, defaultStack, ToolRegistry } = lib;
  const registry = new ToolRegistry().register({
    name: toolName,
    inputSchema: argsSchema,
    handler: immediateHandler,
  });
  return createDispatcher([...front, ...defaultStack({ registry })]);
}

// The cheapest possible layer in front: what the stack costs once anything sits there.
const passThrough: Middleware = function passThrough(_ctx, next) {
  return next();
};

function sequential(
  id: string,
  label: string,
  dispatcher: Dispatcher,
  afterBatch: () => void = () => {},
): BenchCase {
  return {
    id,
    label,
    async batch(n) {
      for (let i = 0; i < n; i++) {
        const outcome = await dispatcher.dispatch(toolName, smallArgs);
        if (!outcome.ok) throw new Error(`${id}: ${outcome.kind}: ${outcome.message}`);
      }
      afterBatch();
    },
  };
}

/**
 * Runs both groups and returns the ratios; prints the tables when `log` is given. The layers and
 * the stack come from `library` (by default the tsc build, as the main bench measures it).
 */
export async function runOtelBench(
  options: { quick?: boolean; log?: (line: string) => void; library?: LoadedLibrary } = {},
): Promise<OtelBenchResult> {
  const group = settings[options.quick === true ? 'quick' : 'full'];
  const log = options.log ?? (() => {});
  const library = options.library ?? (await loadLibrary({ prebuilt: true }));
  const { otelMetrics, otelTracing } = await loadIntegration(library, 'otel');

  // Group 1: no SDK: the API's global tracer with no provider registered, as an application that
  // installed none has it; the meter is the API's no-op one for the same reason.
  const noSdk = await runGroup(
    [
      sequential('bare', 'default stack (bare)', dispatcherWith(library, [])),
      sequential('pass', '[passThrough, ...defaultStack()]', dispatcherWith(library, [passThrough])),
      sequential(
        'noop',
        '[otelTracing(), ...defaultStack()] no SDK',
        dispatcherWith(library, [otelTracing()]),
      ),
      sequential(
        'noopBoth',
        '[otelTracing(), otelMetrics(), ...] no SDK',
        dispatcherWith(library, [otelTracing(), otelMetrics()]),
      ),
    ],
    group,
  );
  log(
    consoleTable('OTel layers, no SDK installed (API no-op tracer and meter, no context manager)', noSdk, [
      'wall',
      'cpu',
    ]),
  );

  // Group 2: the real SDK, wired as the docs show, exporting to memory (cleared after each batch).
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  const tracer = tracerProvider.getTracer('tool-dispatcher');
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({
    exporter: metricExporter,
    exportIntervalMillis: 3_600_000,
  });
  const meterProvider = new MeterProvider({ readers: [reader] });
  const meter = meterProvider.getMeter('tool-dispatcher');
  const clear = () => spans.reset();
  try {
    const sdk = await runGroup(
      [
        sequential('bare', 'default stack (bare), ALS context manager', dispatcherWith(library, [])),
        sequential(
          'sdk',
          '[otelTracing(), ...] SDK + in-memory exporter',
          dispatcherWith(library, [otelTracing({ tracer })]),
          clear,
        ),
        sequential(
          'sdkBoth',
          '[otelTracing(), otelMetrics(), ...] SDK tracing + metrics',
          dispatcherWith(library, [otelTracing({ tracer }), otelMetrics({ meter })]),
          clear,
        ),
      ],
      group,
    );
    log(
      consoleTable(
        'OTel layers with the SDK (BasicTracerProvider, SimpleSpanProcessor, in-memory exporter)',
        sdk,
        ['wall', 'cpu'],
      ),
    );

    const noopVsBare = pairedRatio(noSdk, 'noop', 'bare');
    const noopVsPassThrough = pairedRatio(noSdk, 'noop', 'pass');
    const noopBothVsBare = pairedRatio(noSdk, 'noopBoth', 'bare');
    const sdkVsBare = pairedRatio(sdk, 'sdk', 'bare');
    const sdkBothVsBare = pairedRatio(sdk, 'sdkBoth', 'bare');
    const median = (result: GroupResult, id: string) =>
      result.cases.find((c) => c.id === id)?.wall.median ?? Number.NaN;
    const sdkExtraNs = median(sdk, 'sdk') - median(sdk, 'bare');
    const withinTarget = noopVsBare.median <= noopTarget;
    log(
      `   no-op tracing / bare:            ${formatRatio(noopVsBare)}   (target ≤ ${noopTarget}×)${withinTarget ? '' : '  MISSED'}`,
    );
    log(`   no-op tracing / pass-through:    ${formatRatio(noopVsPassThrough)}   (the layer's own cost)`);
    log(`   no-op tracing + metrics / bare:  ${formatRatio(noopBothVsBare)}`);
    log(
      `   SDK tracing / bare (ALS):        ${formatRatio(sdkVsBare)}   (+${formatNs(sdkExtraNs)} per dispatch)`,
    );
    log(`   SDK tracing + metrics / bare:    ${formatRatio(sdkBothVsBare)}`);
    return {
      noSdk,
      sdk,
      noopVsBare,
      noopVsPassThrough,
      noopBothVsBare,
      sdkVsBare,
      sdkBothVsBare,
      sdkExtraNs,
      withinTarget,
    };
  } finally {
    await tracerProvider.shutdown();
    await meterProvider.shutdown();
    context.disable();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const result = await runOtelBench({
    quick: process.argv.includes('--quick'),
    log: (line) => console.log(line),
    library: await loadLibrary(loadOptionsFromArgv(process.argv.slice(2))),
  });
  if (!result.withinTarget) process.exitCode = 1;
}
