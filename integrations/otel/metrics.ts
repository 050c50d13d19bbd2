// Metrics: the GenAI tool duration histogram and the dispatcher's own counters, per tool.

import {
  createNoopMeter,
  metrics,
  type Attributes,
  type Counter,
  type Histogram,
  type Meter,
  type MeterProvider,
  type UpDownCounter,
} from '@opentelemetry/api';
import type { DispatchContext, DispatchEvent, Middleware, Next } from '../../index.js';
import { genAi, isTerminal, metricToolName, ours, scopeName, scopeVersion } from './attributes.js';

/** Options for `otelMetrics`. */
export interface OtelMetricsOptions {
  /**
   * The meter the instruments are created on.
   * @default metrics.getMeter('tool-dispatcher', version), looked up again whenever the global
   * provider changes, so a provider registered after the layer was made is used
   */
  meter?: Meter;
  /**
   * `gen_ai.tool.type` on the duration histogram.
   * @default 'function'
   */
  toolType?: string;
}

/** The metric names `otelMetrics` reports. */
export const metricNames = {
  /** Histogram, seconds: one point per dispatch (the conventions' tool metric). */
  duration: 'gen_ai.execute_tool.duration',
  /** Counter: handler attempts started. */
  attempts: 'tool_dispatcher.attempts',
  /** Counter: retries scheduled, by the failure kind retried. */
  retries: 'tool_dispatcher.retries',
  /** Counter: attempts that ran past their timeout. */
  timeouts: 'tool_dispatcher.timeouts',
  /** Counter: calls served by the idempotency layer, by source (`cache` or `in_flight`). */
  dedupeHits: 'tool_dispatcher.dedupe_hits',
  /** Counter: circuit breaker transitions, by the state entered. */
  breakerTransitions: 'tool_dispatcher.breaker_transitions',
  /** Up-down counter: dispatches running now. */
  inFlight: 'tool_dispatcher.in_flight',
  /** Up-down counter: dispatches waiting for a concurrency slot now. */
  queued: 'tool_dispatcher.queued',
} as const;

// The conventions' advice for gen_ai.execute_tool.duration.
const durationBuckets = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

interface Instruments {
  duration: Histogram;
  attempts: Counter;
  retries: Counter;
  timeouts: Counter;
  dedupeHits: Counter;
  breakerTransitions: Counter;
  inFlight: UpDownCounter;
  queued: UpDownCounter;
}

/**
 * Records every dispatch in `gen_ai.execute_tool.duration` (seconds, with `gen_ai.tool.name`,
 * `gen_ai.tool.type` and, on failure, `error.type` = the envelope's kind), counts attempts,
 * retries, timeouts, dedupe hits and breaker transitions, and keeps up-down counters of calls in
 * flight and calls queued for a slot. Every attribute is low-cardinality: the registry's tool
 * name (a name it does not know is `_OTHER`), a kind, a source or a state; never a call id, a
 * key or arguments. With no SDK installed it does nothing. Place it outermost.
 *
 * @example
 * import { otelMetrics, otelTracing } from 'tool-dispatcher/otel';
 * const dispatcher = createDispatcher([otelTracing(), otelMetrics(), ...defaultStack({ registry })]);
 */
export function otelMetrics(options?: OtelMetricsOptions): Middleware {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new TypeError(`otelMetrics() options must be an object, got ${String(options)}`);
  }
  const { meter, toolType = 'function' } = options ?? {};
  if (meter !== undefined && (typeof meter !== 'object' || meter === null || typeof meter.createHistogram !== 'function')) {
    throw new TypeError('meter must be an OpenTelemetry Meter (with createHistogram() and createCounter())');
  }
  if (typeof toolType !== 'string' || toolType === '') {
    throw new TypeError(`toolType must be a non-empty string, got ${String(toolType)}`);
  }

  let instruments = meter === undefined ? undefined : createInstruments(meter);
  let provider: MeterProvider | undefined;
  const currentInstruments = (): Instruments | undefined => {
    if (meter !== undefined) return instruments;
    const global = metrics.getMeterProvider();
    if (global !== provider) {
      provider = global;
      instruments = createInstruments(global.getMeter(scopeName, scopeVersion));
    }
    return instruments;
  };
  const metered = new WeakSet<DispatchContext>();

  return function otelMetrics(ctx: DispatchContext, next: Next): Promise<void> {
    let recording: Instruments | undefined;
    try {
      recording = currentInstruments();
    } catch {
      recording = undefined;
    }
    if (recording === undefined || metered.has(ctx)) return next();
    metered.add(ctx);
    const call = new MeteredDispatch(ctx, recording, toolType);
    const listening = call.listen();
    const running = next();
    call.countInFlight();
    if (listening) return running;
    // Without events (a context that cannot be listened to) the call is measured here.
    const startedAt = Date.now();
    return running.then(
      () => call.end(ctx.outcome?.ok === false ? ctx.outcome.kind : undefined, Date.now() - startedAt),
      (error: unknown) => {
        call.end('internal', Date.now() - startedAt);
        throw error;
      },
    );
  };
}

// A meter that is the API's no-op (no SDK installed) gets no instruments: the layer steps aside.
function createInstruments(meter: Meter): Instruments | undefined {
  if (meter === createNoopMeter()) return undefined;
  try {
    return {
      duration: meter.createHistogram(metricNames.duration, {
        unit: 's',
        description: 'The duration of a single tool execution, from dispatch to outcome.',
        advice: { explicitBucketBoundaries: durationBuckets },
      }),
      attempts: meter.createCounter(metricNames.attempts, {
        unit: '{attempt}',
        description: 'Handler attempts started.',
      }),
      retries: meter.createCounter(metricNames.retries, {
        unit: '{retry}',
        description: 'Retries scheduled after a retryable failure.',
      }),
      timeouts: meter.createCounter(metricNames.timeouts, {
        unit: '{timeout}',
        description: 'Attempts that ran past their timeout.',
      }),
      dedupeHits: meter.createCounter(metricNames.dedupeHits, {
        unit: '{call}',
        description: 'Calls served by the idempotency layer instead of running the handler.',
      }),
      breakerTransitions: meter.createCounter(metricNames.breakerTransitions, {
        unit: '{transition}',
        description: 'Circuit breaker state changes.',
      }),
      inFlight: meter.createUpDownCounter(metricNames.inFlight, {
        unit: '{call}',
        description: 'Dispatches running now.',
      }),
      queued: meter.createUpDownCounter(metricNames.queued, {
        unit: '{call}',
        description: 'Dispatches waiting for a concurrency slot now.',
      }),
    };
  } catch {
    return undefined;
  }
}

const transitionStates: Readonly<Record<string, string>> = {
  'circuit.open': 'open',
  'circuit.half_open': 'half_open',
  'circuit.close': 'closed',
};

/** One dispatch's contribution to the instruments. */
class MeteredDispatch {
  private ended = false;
  private queued = false;
  private inFlightAttributes: Attributes | undefined = undefined;
  private toolAttributes: Attributes | undefined = undefined;
  private unsubscribe: () => void = noop;

  constructor(
    private readonly ctx: DispatchContext,
    private readonly instruments: Instruments,
    private readonly toolType: string,
  ) {}

  listen(): boolean {
    try {
      const unsubscribe: unknown = this.ctx.listen((event) => this.onEvent(event));
      if (typeof unsubscribe === 'function') this.unsubscribe = unsubscribe as () => void;
      return true;
    } catch {
      return false;
    }
  }

  // Counted once the outer layers have run: by then the lookup has named the tool (or not).
  countInFlight(): void {
    if (this.ended) return;
    this.inFlightAttributes = this.attributes();
    this.safely(() => this.instruments.inFlight.add(1, this.inFlightAttributes));
  }

  // Built on first use, after the lookup: the tool name metrics may use.
  private attributes(): Attributes {
    return (this.toolAttributes ??= { [genAi.toolName]: metricToolName(this.ctx) });
  }

  private onEvent(event: DispatchEvent): void {
    if (this.ended) return;
    const { type } = event;
    if (isTerminal(type)) {
      const kind = type === 'dispatch.failure' ? (typeof event.kind === 'string' ? event.kind : 'internal') : undefined;
      this.end(kind, typeof event.durationMs === 'number' ? event.durationMs : Number.NaN);
      return;
    }
    const { instruments } = this;
    switch (type) {
      case 'dispatch.attempt':
        this.leaveQueue();
        this.safely(() => instruments.attempts.add(1, this.attributes()));
        break;
      case 'dispatch.retry':
        this.safely(() =>
          instruments.retries.add(1, {
            ...this.attributes(),
            [genAi.errorType]: typeof event.kind === 'string' ? event.kind : '_OTHER',
          }),
        );
        break;
      case 'dispatch.timeout':
        this.safely(() => instruments.timeouts.add(1, this.attributes()));
        break;
      case 'idempotency.hit':
        this.safely(() =>
          instruments.dedupeHits.add(1, {
            ...this.attributes(),
            [ours.idempotencySource]: event.source === 'cache' ? 'cache' : 'in_flight',
          }),
        );
        break;
      case 'concurrency.queued':
        if (this.queued) break;
        this.queued = true;
        this.safely(() => instruments.queued.add(1, this.attributes()));
        break;
      case 'concurrency.acquired':
        this.leaveQueue();
        break;
      default: {
        const state = transitionStates[type];
        if (state === undefined) break;
        this.safely(() =>
          instruments.breakerTransitions.add(1, { ...this.attributes(), [ours.circuitState]: state }),
        );
      }
    }
  }

  private leaveQueue(): void {
    if (!this.queued) return;
    this.queued = false;
    this.safely(() => this.instruments.queued.add(-1, this.attributes()));
  }

  /** Records the duration and takes the call out of the gauges, once. */
  end(kind: string | undefined, durationMs: number): void {
    if (this.ended) return;
    this.ended = true;
    this.safely(() => this.unsubscribe());
    this.leaveQueue();
    const { instruments, inFlightAttributes } = this;
    if (inFlightAttributes !== undefined) this.safely(() => instruments.inFlight.add(-1, inFlightAttributes));
    // A broken injected clock gives no duration; the point is left out rather than made up.
    if (!Number.isFinite(durationMs)) return;
    const attributes: Attributes = { ...this.attributes(), [genAi.toolType]: this.toolType };
    if (kind !== undefined) attributes[genAi.errorType] = kind;
    this.safely(() => instruments.duration.record(Math.max(0, durationMs) / 1000, attributes));
  }

  // A meter that throws costs its data point, never the dispatch.
  private safely(record: () => void): void {
    try {
      record();
    } catch {
      // Ignored on purpose.
    }
  }
}

function noop(): void {}
