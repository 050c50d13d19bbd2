/**
 * Tracing: one GenAI `execute_tool` span per dispatch, with what only the dispatcher knows as span events.
 * @module
 */

import {
  context,
  INVALID_SPAN_CONTEXT,
  isSpanContextValid,
  ProxyTracerProvider,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';
import {
  isDispatchError,
  type DispatchContext,
  type DispatchEvent,
  type Middleware,
  type Next,
  type OutcomePolicy,
} from '../../index.js';
import { optionKeys, rejectUnknownKeys } from '../../middleware/index.js';
import { noop, parseJsonArgs } from '../../middleware/internal-kit.js';
import {
  attributeText,
  genAi,
  isTerminal,
  ours,
  scopeName,
  scopeVersion,
  spanEventAttributes,
  truncate,
} from './attributes.js';
import { safeMessage, type Failure } from './safe-message.js';

/** Options for `otelTracing`. */
export interface OtelTracingOptions {
  /**
   * The tracer spans are started with.
   * @default trace.getTracer('tool-dispatcher', version): the global provider, or the API's no-op
   */
  tracer?: Tracer;
  /**
   * Record the call's arguments as `gen_ai.tool.call.arguments` (JSON text, cut to
   * `maxAttributeLength`), and record as they are the failure messages that may quote them (a
   * `schema` failure's, a JSON parser's excerpt); without it those become a fixed text. Off by
   * default: arguments may hold personal data.
   * @default false
   */
  recordArguments?: boolean;
  /**
   * Record a success's result as `gen_ai.tool.call.result` (JSON text, cut to
   * `maxAttributeLength`). Off by default: results may hold personal data.
   * @default false
   */
  recordResults?: boolean;
  /**
   * The span name, or a function of the tool name that returns it.
   * @default (tool) => `execute_tool ${tool}`
   */
  spanName?: string | ((toolName: string) => string);
  /**
   * `gen_ai.tool.type`: `function`, `extension` or `datastore` in the conventions.
   * @default 'function'
   */
  toolType?: string;
  /**
   * The longest text attribute written (arguments, result, status message), in characters.
   * @default 4096
   */
  maxAttributeLength?: number;
  /**
   * `child`: start an `execute_tool` span as a child of the active span. `enrich`: when a host
   * already runs the call inside its own `execute_tool` span (the Anthropic tool runner does),
   * write this layer's attributes and events onto that active span instead, and leave naming and
   * ending it to the host; with no recording span active it falls back to `child`.
   * @default 'child'
   */
  mode?: 'child' | 'enrich';
}

const otelTracingOptionKeys = optionKeys<OtelTracingOptions>({
  tracer: true,
  recordArguments: true,
  recordResults: true,
  spanName: true,
  toolType: true,
  maxAttributeLength: true,
  mode: true,
});

/**
 * Traces each dispatch as a GenAI `execute_tool {gen_ai.tool.name}` span (kind INTERNAL) and runs
 * the inner layers, the handler included, inside it, so the handler's own spans are its children.
 * Attempts, failed attempts, retries (with their delay), timeouts, queueing for a slot,
 * idempotency hits and circuit transitions are span events; `tool_dispatcher.attempts` and the
 * other totals are attributes. A failure sets `error.type` to the envelope's kind and status
 * ERROR with its (stack-free) message, except a message that quotes the idempotency key or,
 * unless `recordArguments` is on, may quote the arguments: a fixed text stands in for it. The
 * span ends exactly once, also when the caller aborts before the inner layers finish; a tracer
 * that throws never breaks a dispatch. With no SDK installed the layer costs one no-op span per
 * call. Place it outermost.
 *
 * @example
 * import { otelTracing } from 'tool-dispatcher/otel';
 * const dispatcher = createDispatcher([otelTracing(), ...defaultStack({ registry })]);
 */
export function otelTracing(options?: OtelTracingOptions): Middleware {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new TypeError(`otelTracing() options must be an object, got ${String(options)}`);
  }
  if (options !== undefined) rejectUnknownKeys('otelTracing', options, otelTracingOptionKeys);
  const {
    tracer = trace.getTracer(scopeName, scopeVersion),
    recordArguments = false,
    recordResults = false,
    spanName = defaultSpanName,
    toolType = 'function',
    maxAttributeLength = 4096,
    mode = 'child',
  } = options ?? {};
  if (typeof tracer !== 'object' || tracer === null || typeof tracer.startSpan !== 'function') {
    throw new TypeError('tracer must be an OpenTelemetry Tracer (with a startSpan() method)');
  }
  requireBoolean('recordArguments', recordArguments);
  requireBoolean('recordResults', recordResults);
  requireNaming(spanName, toolType, mode);
  if (
    typeof maxAttributeLength !== 'number' ||
    !Number.isInteger(maxAttributeLength) ||
    maxAttributeLength < 16
  ) {
    throw new TypeError(`maxAttributeLength must be an integer >= 16, got ${String(maxAttributeLength)}`);
  }
  const settings: Settings = { recordArguments, recordResults, maxAttributeLength };
  // With the API's global tracer and no SDK registered, every span is a no-op: skip the span
  // work per call (a provider registered later is seen on the next call).
  const noSdk = options?.tracer === undefined ? globalTracerIsNoop : alwaysFalse;
  const nameFor = typeof spanName === 'string' ? () => spanName : spanName;

  // The span of the call that entered first with each idempotency key still running: a later
  // call that joins that execution links to it. Entries live only while their call runs.
  const leaders = new Map<string, SpanContext>();
  // The layer may sit inside retry and run once per attempt; it traces a dispatch once.
  const traced = new WeakSet<DispatchContext>();

  return function otelTracing(ctx: DispatchContext, next: Next): Promise<void> {
    if (noSdk() || traced.has(ctx)) return next();
    const active = context.active();
    let span: Span;
    let owned = true;
    try {
      const host = mode === 'enrich' ? trace.getSpan(active) : undefined;
      if (host?.isRecording()) {
        span = host;
        owned = false;
      } else {
        span = tracer.startSpan(
          nameFor(ctx.toolName),
          { kind: SpanKind.INTERNAL, attributes: startAttributes(ctx, toolType) },
          active,
        );
      }
    } catch {
      return next();
    }
    // A no-op or sampled-out span records nothing; it is made active only when it carries a
    // new span context, so that the handler's spans inherit the sampling decision.
    const recording = isRecording(span);
    if (recording === undefined) return next();
    if (!recording) return carriesNewContext(span, active) ? runInside(active, span, next) : next();
    traced.add(ctx);

    const traceOfCall = new TracedDispatch(ctx, span, owned, settings);
    try {
      if (recordArguments) {
        // dispatchJson's text is parsed here, so the attribute holds the arguments and not that
        // text quoted again; text that is not JSON stays for the schema step to report.
        parseJsonArgs(ctx);
        const args = ctx.redactor === undefined ? ctx.args : ctx.redactor.redactValue(ctx.args);
        span.setAttribute(genAi.toolCallArguments, attributeText(args, maxAttributeLength));
      }
    } catch {
      // A broken span loses its attributes, never the call.
    }
    const key = ctx.options.idempotencyKey;
    const leading =
      typeof key === 'string' && !leaders.has(key) && traceOfCall.registerAsLeader(key, leaders);
    traceOfCall.followLeader = (joined) => {
      if (typeof key !== 'string') return;
      const leader = leaders.get(key);
      if (joined && leader !== undefined && leader !== traceOfCall.spanContext) traceOfCall.linkTo(leader);
      // A call served by the idempotency layer runs nothing; it leads no one.
      if (leaders.get(key) === traceOfCall.spanContext) leaders.delete(key);
    };
    traceOfCall.listen();

    const running = owned ? runInside(active, span, next) : next();
    return running.then(
      () => {
        if (leading) traceOfCall.forgetLeader(key, leaders);
        traceOfCall.end(ctx.outcome);
      },
      (error: unknown) => {
        if (leading) traceOfCall.forgetLeader(key, leaders);
        traceOfCall.endThrown(error);
        throw error;
      },
    );
  };
}

interface Settings {
  readonly recordArguments: boolean;
  readonly recordResults: boolean;
  readonly maxAttributeLength: number;
}

/** The span of one dispatch and what its events have told so far. */
class TracedDispatch {
  ended = false;
  spanContext: SpanContext | undefined = undefined;
  followLeader: (joined: boolean) => void = noop;
  private retries = 0;
  private retryDelayMs = 0;
  private queuedAt: number | undefined = undefined;
  private queueWaitMs: number | undefined = undefined;
  private idempotencySource: string | undefined = undefined;
  private circuitState: string | undefined = undefined;
  private thrownPolicy: OutcomePolicy | undefined = undefined;
  private unsubscribe: () => void = noop;

  constructor(
    private readonly ctx: DispatchContext,
    private readonly span: Span,
    private readonly owned: boolean,
    private readonly settings: Settings,
  ) {}

  registerAsLeader(key: string, leaders: Map<string, SpanContext>): boolean {
    try {
      this.spanContext = this.span.spanContext();
    } catch {
      return false;
    }
    leaders.set(key, this.spanContext);
    return true;
  }

  forgetLeader(key: string | undefined, leaders: Map<string, SpanContext>): void {
    if (key !== undefined && leaders.get(key) === this.spanContext) leaders.delete(key);
  }

  linkTo(leader: SpanContext): void {
    try {
      this.span.addLink({ context: leader });
    } catch {
      // A span without links (an older API or a broken tracer) loses the link only.
    }
  }

  listen(): void {
    try {
      const unsubscribe: unknown = this.ctx.listen((event) => this.onEvent(event));
      if (typeof unsubscribe === 'function') this.unsubscribe = unsubscribe as () => void;
    } catch {
      // Without events the span still gets its outcome when the call settles.
    }
  }

  private onEvent(event: DispatchEvent): void {
    if (this.ended) return;
    try {
      const { type } = event;
      if (isTerminal(type)) {
        // Reached before the inner layers settle only when the caller was answered early
        // (it aborted): the span ends now, with what the caller got.
        this.endFromEvent(event);
        return;
      }
      this.note(event);
      this.span.addEvent(
        `tool_dispatcher.${type}`,
        spanEventAttributes(event, this.settings.maxAttributeLength, (failure) => this.messageOf(failure)),
      );
    } catch {
      // A broken span or an odd event loses this event only.
    }
  }

  private note(event: DispatchEvent): void {
    switch (event.type) {
      case 'dispatch.retry':
        this.retries += 1;
        if (typeof event.delayMs === 'number') this.retryDelayMs += event.delayMs;
        break;
      case 'concurrency.queued':
        this.queuedAt = Date.now();
        break;
      case 'concurrency.acquired':
        this.addQueueWait(typeof event.waitedMs === 'number' ? event.waitedMs : undefined);
        break;
      case 'dispatch.attempt':
        // A call that queued has its slot by its first attempt, also where no layer says so.
        this.addQueueWait(undefined);
        break;
      case 'idempotency.hit':
        this.idempotencySource = typeof event.source === 'string' ? event.source : 'unknown';
        this.followLeader(event.source === 'in_flight');
        break;
      case 'circuit.open':
        this.circuitState = 'open';
        break;
      case 'circuit.half_open':
        this.circuitState = 'half_open';
        break;
      case 'circuit.close':
        this.circuitState = 'closed';
        break;
    }
  }

  private addQueueWait(waitedMs: number | undefined): void {
    if (this.queuedAt === undefined) return;
    const waited = waitedMs ?? Date.now() - this.queuedAt;
    this.queuedAt = undefined;
    this.queueWaitMs = (this.queueWaitMs ?? 0) + Math.max(0, waited);
  }

  private endFromEvent(event: DispatchEvent): void {
    const { outcome } = this.ctx;
    if (event.type === 'dispatch.success') {
      const result = outcome?.ok === true ? outcome.result : undefined;
      this.end({ ok: true, result, attempts: numberOr(event.attempts, outcome?.attempts ?? 0) });
    } else {
      const kind = typeof event.kind === 'string' ? event.kind : 'internal';
      this.end({
        ok: false,
        kind,
        message: typeof event.message === 'string' ? event.message : '',
        attempts: numberOr(event.attempts, this.ctx.attempt),
        // The event carries no cause; the outcome it reports may.
        cause: outcome?.ok === false && outcome.kind === kind ? outcome.cause : undefined,
      });
    }
  }

  endThrown(error: unknown): void {
    // A layer outside errorMapping may throw an envelope: its kind decides what is recorded.
    if (isDispatchError(error)) {
      const { kind, message, cause } = error;
      this.thrownPolicy = error.policy;
      this.end({ ok: false, kind, message, cause, attempts: this.ctx.attempt });
      return;
    }
    const message = error instanceof Error ? error.message : 'The middleware stack threw';
    this.end({ ok: false, kind: 'internal', message, cause: error, attempts: this.ctx.attempt });
  }

  private messageOf(failure: Failure): string {
    const key: unknown = this.ctx.options.idempotencyKey;
    return safeMessage(failure, typeof key === 'string' ? key : undefined, this.settings.recordArguments);
  }

  end(outcome: Ending | undefined): void {
    if (this.ended) return;
    this.ended = true;
    try {
      this.unsubscribe();
    } catch {
      // Nothing to clean up beyond this dispatch.
    }
    const given: Ending = outcome ?? {
      ok: false,
      kind: 'internal',
      message: 'The middleware stack finished without an outcome',
      attempts: this.ctx.attempt,
    };
    try {
      // The span ends before the dispatcher redacts the outcome: it redacts what it records itself.
      const { redactor } = this.ctx;
      const ending = redactor === undefined ? given : redactor.redactValue(given);
      const { span, settings } = this;
      span.setAttributes(this.endAttributes(ending));
      if (!ending.ok) {
        span.setStatus({
          code: SpanStatusCode.ERROR,
          message: truncate(this.messageOf(ending) || ending.kind, settings.maxAttributeLength),
        });
      } else if (settings.recordResults) {
        span.setAttribute(genAi.toolCallResult, attributeText(ending.result, settings.maxAttributeLength));
      }
    } catch {
      // Attributes are lost; the span must still end below.
    }
    if (!this.owned) return;
    try {
      this.span.end();
    } catch {
      // A tracer that throws on end has had its chance.
    }
  }

  private endAttributes(ending: Ending): Attributes {
    const { ctx } = this;
    const attributes: Attributes = {
      [ours.attempts]: ending.attempts,
      [ours.retries]: this.retries,
    };
    if (!ending.ok) attributes[genAi.errorType] = ending.kind;
    const description = ctx.tool?.description;
    if (this.owned && typeof description === 'string' && description !== '') {
      attributes[genAi.toolDescription] = truncate(description, this.settings.maxAttributeLength);
    }
    if (this.retries > 0) attributes[ours.retryTotalDelayMs] = this.retryDelayMs;
    if (this.queuedAt !== undefined) this.addQueueWait(undefined);
    if (this.queueWaitMs !== undefined) attributes[ours.queueWaitMs] = this.queueWaitMs;
    if (this.idempotencySource !== undefined) attributes[ours.idempotencySource] = this.idempotencySource;
    const circuitState =
      this.circuitState ?? (!ending.ok && ending.kind === 'circuit_open' ? 'open' : undefined);
    if (circuitState !== undefined) attributes[ours.circuitState] = circuitState;
    const remaining = ctx.budget?.remaining;
    if (typeof remaining === 'number' && Number.isFinite(remaining))
      attributes[ours.budgetRemaining] = remaining;
    addPolicy(attributes, this.thrownPolicy ?? ctx.outcome?.policy);
    return attributes;
  }
}

// How the autopilot ran the call (`outcome.policy`), when an `autopilot()` layer saw it: on the
// span as on the outcome, success or failure.
function addPolicy(attributes: Attributes, policy: OutcomePolicy | undefined): void {
  if (typeof policy !== 'object' || policy === null) return;
  attributes[ours.policyMode] = policy.mode;
  if (typeof policy.timeoutMs === 'number') attributes[ours.policyTimeoutMs] = policy.timeoutMs;
  attributes[ours.policySource] = policy.source;
  attributes[ours.policyCutOff] = policy.cutOff;
  attributes[ours.policyHedged] = policy.hedged;
  attributes[ours.policyRetried] = policy.retried;
  attributes[ours.policyBudget] = policy.budget;
}

/** How a dispatch ended, as far as its span needs to know. */
type Ending =
  | { readonly ok: true; readonly result: unknown; readonly attempts: number }
  | {
      readonly ok: false;
      readonly kind: string;
      readonly message: string;
      readonly attempts: number;
      readonly cause?: unknown;
    };

function startAttributes(ctx: DispatchContext, toolType: string): Attributes {
  const attributes: Attributes = {
    // Set at creation: samplers read the operation name.
    [genAi.operationName]: genAi.executeTool,
    [genAi.toolName]: ctx.toolName,
    [genAi.toolType]: toolType,
  };
  // Only an id the caller passed is the provider's tool-call id; generated ones are not.
  const { callId } = ctx.options;
  if (typeof callId === 'string') attributes[genAi.toolCallId] = callId;
  return attributes;
}

// Runs `next` with `span` active, so spans started inside (the handler's) are its children.
// A context manager that throws is contained: `next` still runs exactly once.
function runInside(active: Context, span: Span, next: Next): Promise<void> {
  let running: Promise<void> | undefined;
  try {
    context.with(trace.setSpan(active, span), () => (running = next()));
  } catch {
    // Handled below: `next` ran inside, or runs now outside the span.
  }
  return running ?? next();
}

// Whether the span records; `undefined` when asking throws (the span is then left alone).
function isRecording(span: Span): boolean | undefined {
  try {
    return span.isRecording();
  } catch {
    return undefined;
  }
}

function carriesNewContext(span: Span, active: Context): boolean {
  try {
    const spanContext = span.spanContext();
    if (spanContext === INVALID_SPAN_CONTEXT || !isSpanContextValid(spanContext)) return false;
    return trace.getSpanContext(active)?.spanId !== spanContext.spanId;
  } catch {
    return false;
  }
}

function defaultSpanName(toolName: string): string {
  return `${genAi.executeTool} ${toolName}`;
}

function requireNaming(spanName: unknown, toolType: unknown, mode: unknown): void {
  if (typeof spanName !== 'string' && typeof spanName !== 'function') {
    throw new TypeError(`spanName must be a string or a function, got ${typeof spanName}`);
  }
  if (typeof toolType !== 'string' || toolType === '') {
    throw new TypeError(`toolType must be a non-empty string, got ${String(toolType)}`);
  }
  if (mode !== 'child' && mode !== 'enrich') {
    throw new TypeError(`mode must be 'child' or 'enrich', got ${String(mode)}`);
  }
}

function requireBoolean(name: string, value: unknown): void {
  if (typeof value !== 'boolean') throw new TypeError(`${name} must be a boolean, got ${String(value)}`);
}

function numberOr(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

// A proxy provider with no delegate answers with the API's shared no-op provider.
const noopTracerProvider = new ProxyTracerProvider().getDelegate();

function globalTracerIsNoop(): boolean {
  const provider = trace.getTracerProvider();
  return provider instanceof ProxyTracerProvider && provider.getDelegate() === noopTracerProvider;
}

function alwaysFalse(): boolean {
  return false;
}
