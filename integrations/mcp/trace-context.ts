/**
 * W3C trace context across the MCP hop: the `traceparent`, `tracestate` and `baggage` keys a
 * request carries in `params._meta` (2026-07-28), checked, kept for the call while the dispatcher
 * runs it, and put on the calls an import makes upstream, so the hop continues the caller's trace.
 * With `@opentelemetry/api` installed the caller's span context is also the active OpenTelemetry
 * parent while the call runs, and an upstream call names the active span (ours) as its parent.
 * @module
 */

import { AsyncLocalStorage } from 'node:async_hooks';
import type { Context } from '@opentelemetry/api';
import { otel } from './otel-api.js';

/** The trace keys of a request's `_meta`, each present only when it passed the W3C syntax. */
export type TraceMeta = Partial<Record<'traceparent' | 'tracestate' | 'baggage', string>>;

const carried = new AsyncLocalStorage<TraceMeta>();

const traceparentPattern = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const tracestateKey = /^([a-z0-9][_0-9a-z*/-]{0,255}|[a-z0-9][_0-9a-z*/-]{0,240}@[a-z][_0-9a-z*/-]{0,13})$/;
const tracestateValue = /^[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;
const baggageMember = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+=[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*(;[^,]*)?$/;

/**
 * The valid trace keys of a `_meta` object, or `undefined` when there is none: a `traceparent`
 * that fails the W3C syntax is dropped, and `tracestate` with it (it means nothing alone).
 *
 * @example
 * traceMetaOf({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' });
 */
export function traceMetaOf(meta: Record<string, unknown> | undefined): TraceMeta | undefined {
  if (meta === undefined) return undefined;
  const trace: TraceMeta = {};
  const { traceparent, tracestate, baggage } = meta;
  if (typeof traceparent === 'string' && isTraceparent(traceparent)) {
    trace.traceparent = traceparent;
    if (typeof tracestate === 'string' && isTracestate(tracestate)) trace.tracestate = tracestate;
  }
  if (typeof baggage === 'string' && isBaggage(baggage)) trace.baggage = baggage;
  return Object.keys(trace).length === 0 ? undefined : trace;
}

/**
 * Runs `run` with `trace` as the call's trace context (a no-op wrapper when there is none); with
 * `@opentelemetry/api`, inside an OpenTelemetry context whose parent is the caller's span.
 *
 * @example
 * const outcome = await withTraceMeta(traceMetaOf(meta), () => dispatcher.dispatch(name, args));
 */
export function withTraceMeta<T>(trace: TraceMeta | undefined, run: () => T): T {
  if (trace === undefined) return run();
  const parent = otel === undefined ? undefined : remoteParent(trace);
  if (parent === undefined) return carried.run(trace, run);
  return (otel as NonNullable<typeof otel>).context.with(parent, () => carried.run(trace, run));
}

/**
 * The trace context for the request an import sends upstream: the active OpenTelemetry span's
 * (ours, when a provider records one) with the caller's baggage, else the call's keys as they came.
 *
 * @example
 * const meta = { ...currentTraceMeta(), [idempotencyKeyMetaKey]: key };
 */
export function currentTraceMeta(): TraceMeta | undefined {
  const came = carried.getStore();
  if (otel === undefined) return came;
  const span = otel.trace.getSpan(otel.context.active())?.spanContext();
  if (span === undefined || !otel.isSpanContextValid(span)) return came;
  const traceparent = `00-${span.traceId}-${span.spanId}-${hexByte(span.traceFlags)}`;
  // No span of ours (no provider): the caller's own context, its tracestate as it was sent.
  if (came?.traceparent === traceparent) return came;
  const tracestate = span.traceState?.serialize();
  const trace: TraceMeta = { traceparent };
  if (tracestate !== undefined && tracestate !== '') trace.tracestate = tracestate;
  if (came?.baggage !== undefined) trace.baggage = came.baggage;
  return trace;
}

// The caller's span context as a remote parent in the active OpenTelemetry context.
function remoteParent(trace: TraceMeta): Context | undefined {
  const api = otel as NonNullable<typeof otel>;
  const parts = trace.traceparent === undefined ? null : traceparentPattern.exec(trace.traceparent);
  if (parts === null) return undefined;
  const [, , traceId, spanId, flags] = parts as unknown as [string, string, string, string, string];
  const spanContext = {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16),
    isRemote: true,
    ...(trace.tracestate === undefined ? {} : { traceState: api.createTraceState(trace.tracestate) }),
  };
  return api.trace.setSpanContext(api.context.active(), spanContext);
}

function hexByte(value: number): string {
  return (value & 0xff).toString(16).padStart(2, '0');
}

function isTraceparent(text: string): boolean {
  const parts = traceparentPattern.exec(text);
  if (parts === null) return false;
  const [, version, traceId, parentId] = parts;
  return version !== 'ff' && !/^0+$/.test(traceId as string) && !/^0+$/.test(parentId as string);
}

function isTracestate(text: string): boolean {
  if (text.length > 512) return false;
  const members = text.split(',').map((member) => member.trim());
  if (members.length > 32) return false;
  return members.every((member) => {
    if (member === '') return true;
    const at = member.indexOf('=');
    return at > 0 && tracestateKey.test(member.slice(0, at)) && tracestateValue.test(member.slice(at + 1));
  });
}

function isBaggage(text: string): boolean {
  if (Buffer.byteLength(text) > 8192) return false;
  return text.split(',').every((member) => baggageMember.test(member.trim()));
}
