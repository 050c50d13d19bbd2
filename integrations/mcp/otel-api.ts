/**
 * `@opentelemetry/api`, an optional peer of `tool-dispatcher/mcp`: loaded once when installed, so
 * the MCP hop continues the caller's trace in the application's spans, and `undefined` when it is
 * not (then the trace keys only pass through).
 * @module
 */

import { missingPeers } from '../peers.js';

/** What this integration uses of the OpenTelemetry API. */
export type OtelApi = Pick<
  typeof import('@opentelemetry/api'),
  'context' | 'trace' | 'isSpanContextValid' | 'createTraceState'
>;

const otelPackage = '@opentelemetry/api';

async function loadOtel(): Promise<OtelApi | undefined> {
  try {
    const { context, trace, isSpanContextValid, createTraceState } = await import('@opentelemetry/api');
    return { context, trace, isSpanContextValid, createTraceState };
  } catch (error) {
    if (missingPeers([otelPackage]).length > 0) return undefined;
    throw error;
  }
}

/**
 * The OpenTelemetry API when it is installed, else `undefined`.
 *
 * @example
 * const span = otel?.trace.getSpan(otel.context.active());
 */
export const otel: OtelApi | undefined = await loadOtel();
