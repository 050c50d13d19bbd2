/**
 * tool-dispatcher/otel: OpenTelemetry tracing and metrics for every tool call, as the GenAI
 * semantic conventions describe tool execution (`execute_tool` spans, the
 * `gen_ai.execute_tool.duration` histogram), with the retries, timeouts, dedupe hits and
 * queueing only the dispatcher knows. Needs `@opentelemetry/api` (an optional peer); without an
 * SDK both layers cost next to nothing.
 *
 * @example
 * import { otelMetrics, otelTracing } from 'tool-dispatcher/otel';
 * const dispatcher = createDispatcher([otelTracing(), otelMetrics(), ...defaultStack({ registry })]);
 * @module tool-dispatcher/otel
 */

export { otelTracing } from './tracing.js';
export type { OtelTracingOptions } from './tracing.js';
export { metricNames, otelMetrics } from './metrics.js';
export type { OtelMetricsOptions } from './metrics.js';
