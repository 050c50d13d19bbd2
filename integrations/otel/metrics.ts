/**
 * Metrics: the GenAI tool duration histogram and the dispatcher's own counters, per tool.
 * @module
 */

import {
  createNoopMeter,
  metrics,
  type Attributes,
  type Counter,
  type Histogram,
  type Meter,
  type MeterProvider,
  type Observable,
} from '@opentelemetry/api';
import type { ApprovalDecidedEvent, DispatchContext, DispatchEvent, Middleware, Next } from '../../index.js';
import { optionKeys, rejectUnknownKeys } from '../../middleware/index.js';
import { noop } from '../../middleware/internal-kit.js';
import { genAi, isTerminal, metricToolName, ours, scopeName, scopeVersion } from './attributes.js';
import { PolicyInstruments, policyMetricNames } from './policy-metrics.js';

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
  /**
   * The approval gate whose decisions end the pending requests this process's calls opened: with
   * it, `tool_dispatcher.approvals.pending` drops as each is decided (anywhere in the fleet) and
   * `tool_dispatcher.approval.decision_duration` is recorded; without it a request counts as
   * pending until it expires.
   * @default none
   */
  approvals?: {
    /** Hears every decision; returns the unsubscribe function. */
    subscribe(listener: (decided: ApprovalDecidedEvent) => void): () => void;
  };
}

const otelMetricsOptionKeys = optionKeys<OtelMetricsOptions>({
  meter: true,
  toolType: true,
  approvals: true,
});

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
  /** The policy layers' instruments: see `policyMetricNames`. */
  ...policyMetricNames,
} as const;

// The conventions' advice for gen_ai.execute_tool.duration.
const durationBuckets = [
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

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
  if (options !== undefined) rejectUnknownKeys('otelMetrics', options, otelMetricsOptionKeys);
  const { meter, toolType = 'function', approvals } = options ?? {};
  if (
    approvals !== undefined &&
    typeof (approvals as { subscribe?: unknown } | null)?.subscribe !== 'function'
  ) {
    throw new TypeError('approvals must be an approval gate (with subscribe), from approvalGate()');
  }
  if (
    meter !== undefined &&
    (typeof meter !== 'object' || meter === null || typeof meter.createHistogram !== 'function')
  ) {
    throw new TypeError('meter must be an OpenTelemetry Meter (with createHistogram() and createCounter())');
  }
  if (typeof toolType !== 'string' || toolType === '') {
    throw new TypeError(`toolType must be a non-empty string, got ${String(toolType)}`);
  }

  let state = meter === undefined ? undefined : stateFor(meter);
  let provider: MeterProvider | undefined;
  const currentState = (): MeterState | undefined => {
    if (meter !== undefined) return state;
    const global = metrics.getMeterProvider();
    if (global !== provider) {
      provider = global;
      state = stateFor(global.getMeter(scopeName, scopeVersion));
    }
    return state;
  };
  const metered = new WeakSet<DispatchContext>();
  // Decisions end the requests this process opened; the gate's subscription lives as long as it.
  approvals?.subscribe((decided) => {
    try {
      currentState()?.approvalDecided(decided);
    } catch {
      // A meter that throws costs its data point only.
    }
  });

  return function otelMetrics(ctx: DispatchContext, next: Next): Promise<void> {
    let recording: MeterState | undefined;
    try {
      recording = currentState();
    } catch {
      recording = undefined;
    }
    if (recording === undefined || metered.has(ctx)) return next();
    metered.add(ctx);
    const call = new MeteredDispatch(ctx, recording, toolType);
    const listening = call.listen();
    const startedAt = listening ? 0 : Date.now();
    const running = next();
    call.countInFlight();
    if (listening) return running;
    // Without events (a context that cannot be listened to) the call is measured here.
    return running.then(
      () => call.end(ctx.outcome?.ok === false ? ctx.outcome.kind : undefined, Date.now() - startedAt),
      (error: unknown) => {
        call.end('internal', Date.now() - startedAt);
        throw error;
      },
    );
  };
}

/** The instruments of one meter and the counts its observable instruments report. */
class MeterState {
  readonly duration: Histogram;
  readonly retries: Counter;
  readonly timeouts: Counter;
  readonly dedupeHits: Counter;
  readonly breakerTransitions: Counter;
  readonly policy: PolicyInstruments;
  // Kept as plain counts and reported when the reader collects: an SDK measurement costs about
  // a microsecond, and these three change on every call.
  readonly attempts = new Map<string, number>();
  readonly inFlight = new Map<string, number>();
  readonly queued = new Map<string, number>();
  private readonly attributeSets = new Map<string, Attributes>();

  constructor(meter: Meter) {
    this.duration = meter.createHistogram(metricNames.duration, {
      unit: 's',
      description: 'The duration of a single tool execution, from dispatch to outcome.',
      advice: { explicitBucketBoundaries: durationBuckets },
    });
    this.retries = meter.createCounter(metricNames.retries, {
      unit: '{retry}',
      description: 'Retries scheduled after a retryable failure.',
    });
    this.timeouts = meter.createCounter(metricNames.timeouts, {
      unit: '{timeout}',
      description: 'Attempts that ran past their timeout.',
    });
    this.dedupeHits = meter.createCounter(metricNames.dedupeHits, {
      unit: '{call}',
      description: 'Calls served by the idempotency layer instead of running the handler.',
    });
    this.breakerTransitions = meter.createCounter(metricNames.breakerTransitions, {
      unit: '{transition}',
      description: 'Circuit breaker state changes.',
    });
    this.observe(
      meter.createObservableCounter(metricNames.attempts, {
        unit: '{attempt}',
        description: 'Handler attempts started.',
      }),
      this.attempts,
    );
    this.observe(
      meter.createObservableUpDownCounter(metricNames.inFlight, {
        unit: '{call}',
        description: 'Dispatches running now, queued ones included.',
      }),
      this.inFlight,
    );
    this.observe(
      meter.createObservableUpDownCounter(metricNames.queued, {
        unit: '{call}',
        description: 'Dispatches waiting for a concurrency slot now.',
      }),
      this.queued,
    );
    this.policy = new PolicyInstruments(meter, (tool) => this.toolAttributes(tool));
  }

  /** A decision heard from the gate: ends the request if one of this process's calls opened it. */
  approvalDecided(decided: ApprovalDecidedEvent): void {
    this.policy.approvalDecided(decided);
  }

  private observe(instrument: Observable, counts: Map<string, number>): void {
    instrument.addCallback((result) => {
      for (const [tool, count] of counts) result.observe(count, this.toolAttributes(tool));
    });
  }

  /** Adds `delta` to `tool`'s count; a tool keeps its entry (at 0) so its series reads 0. */
  bump(counts: Map<string, number>, tool: string, delta: number): void {
    counts.set(tool, (counts.get(tool) ?? 0) + delta);
  }

  /** `{ gen_ai.tool.name }`, one object per tool. */
  toolAttributes(tool: string): Attributes {
    return this.cached(tool, () => ({ [genAi.toolName]: tool }));
  }

  /** The duration histogram's attributes, one object per tool, type and kind. */
  durationAttributes(tool: string, toolType: string, kind: string | undefined): Attributes {
    return this.cached(`${tool}\u0000${toolType}\u0000${kind ?? ''}`, () => {
      const attributes: Attributes = { [genAi.toolName]: tool, [genAi.toolType]: toolType };
      if (kind !== undefined) attributes[genAi.errorType] = kind;
      return attributes;
    });
  }

  // Attribute sets are few (tools × kinds, all bounded), so they are made once and kept.
  private cached(key: string, make: () => Attributes): Attributes {
    let attributes = this.attributeSets.get(key);
    if (attributes === undefined) {
      attributes = make();
      this.attributeSets.set(key, attributes);
    }
    return attributes;
  }
}

// One state per meter, shared by every otelMetrics() layer on it: two layers reporting the same
// observable series separately would overwrite each other. `null`: the meter is unusable.
const meterStates = new WeakMap<Meter, MeterState | null>();

// A meter that is the API's no-op (no SDK installed) gets no state: the layer steps aside.
function stateFor(meter: Meter): MeterState | undefined {
  if (meter === createNoopMeter()) return undefined;
  let state = meterStates.get(meter);
  if (state === undefined) {
    try {
      state = new MeterState(meter);
    } catch {
      state = null;
    }
    meterStates.set(meter, state);
  }
  return state ?? undefined;
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
  private countedInFlight = false;
  private tool: string | undefined = undefined;
  private unsubscribe: () => void = noop;

  constructor(
    private readonly ctx: DispatchContext,
    private readonly state: MeterState,
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
    this.countedInFlight = true;
    this.state.bump(this.state.inFlight, this.toolName(), 1);
  }

  // Read once, after the lookup: the name every instrument of this call uses.
  private toolName(): string {
    return (this.tool ??= metricToolName(this.ctx));
  }

  private onEvent(event: DispatchEvent): void {
    if (this.ended) return;
    try {
      this.record(event);
    } catch {
      // A meter that throws costs its data point, never the dispatch.
    }
  }

  private record(event: DispatchEvent): void {
    const { type } = event;
    if (isTerminal(type)) {
      const kind =
        type === 'dispatch.failure' ? (typeof event.kind === 'string' ? event.kind : 'internal') : undefined;
      this.end(kind, typeof event.durationMs === 'number' ? event.durationMs : Number.NaN);
      return;
    }
    const { state } = this;
    switch (type) {
      case 'dispatch.attempt':
        this.leaveQueue();
        state.bump(state.attempts, this.toolName(), 1);
        break;
      case 'dispatch.retry':
        state.retries.add(1, {
          ...state.toolAttributes(this.toolName()),
          [genAi.errorType]: typeof event.kind === 'string' ? event.kind : '_OTHER',
        });
        break;
      case 'dispatch.timeout':
        state.timeouts.add(1, state.toolAttributes(this.toolName()));
        break;
      case 'idempotency.hit':
        state.dedupeHits.add(1, {
          ...state.toolAttributes(this.toolName()),
          [ours.idempotencySource]: event.source === 'cache' ? 'cache' : 'in_flight',
        });
        break;
      case 'concurrency.queued':
        if (this.queued) break;
        this.queued = true;
        state.bump(state.queued, this.toolName(), 1);
        break;
      case 'concurrency.acquired':
        this.leaveQueue();
        break;
      default: {
        if (state.policy.record(event, this.toolName())) break;
        const entered = transitionStates[type];
        if (entered === undefined) break;
        state.breakerTransitions.add(1, {
          ...state.toolAttributes(this.toolName()),
          [ours.circuitState]: entered,
        });
      }
    }
  }

  private leaveQueue(): void {
    if (!this.queued) return;
    this.queued = false;
    this.state.bump(this.state.queued, this.toolName(), -1);
  }

  // The endings the policy counters count: a spent budget, an outcome lost (by its window).
  private countEnding(kind: string): void {
    try {
      const outcome = this.ctx.outcome;
      const window =
        outcome !== undefined && !outcome.ok && outcome.kind === kind ? outcome.window : undefined;
      this.state.policy.ended(kind, this.toolName(), window);
    } catch {
      // A meter that throws costs its data point, never the dispatch.
    }
  }

  /** Records the duration and takes the call out of the gauges, once. */
  end(kind: string | undefined, durationMs: number): void {
    if (this.ended) return;
    this.ended = true;
    try {
      this.unsubscribe();
    } catch {
      // Nothing else to clean up.
    }
    this.leaveQueue();
    const { state } = this;
    if (this.countedInFlight) state.bump(state.inFlight, this.toolName(), -1);
    if (kind !== undefined) this.countEnding(kind);
    // A broken injected clock gives no duration; the point is left out rather than made up.
    if (!Number.isFinite(durationMs)) return;
    try {
      state.duration.record(
        Math.max(0, durationMs) / 1000,
        state.durationAttributes(this.toolName(), this.toolType, kind),
      );
    } catch {
      // A meter that throws costs its data point, never the dispatch.
    }
  }
}
