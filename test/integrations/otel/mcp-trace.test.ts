// One trace across the MCP hop with the OpenTelemetry SDK registered: a call served by
// createMcpServerFactory continues the caller's `traceparent` from `params._meta` (our
// execute_tool span is its child), and the upstream request importMcpTools makes names our span as
// parent, so the upstream's own span is our span's child. A traceparent failing the W3C syntax is
// dropped: our span starts a trace of its own.
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import { context, ROOT_CONTEXT } from '@opentelemetry/api';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../../../index.js';
import { createMcpServerFactory, importMcpTools, memoryTaskStore } from '../../../integrations/mcp/index.js';
import { otelTracing } from '../../../integrations/otel/index.js';
import { installTelemetry, type Telemetry } from './harness.js';

const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
const callerSpanId = '00f067aa0ba902b7';
const traceparent = `00-${traceId}-${callerSpanId}-01`;
const tracestate = 'rojo=00f067aa0ba902b7';
const baggage = 'userId=alice';

let telemetry: Telemetry;
const closing: Array<() => Promise<unknown>> = [];

beforeAll(() => {
  telemetry = installTelemetry();
});
afterEach(async () => {
  await Promise.all(closing.splice(0).map((close) => close().catch(() => {})));
  telemetry.reset();
});
afterAll(async () => {
  await telemetry.shutdown();
});

// Connects a pinned v2 Client to `factory` in memory; `sent` collects every message the client
// sends. Each is delivered outside the sender's OpenTelemetry context, as across a process: the
// server sees only what `_meta` carries.
async function connect(
  factory: Parameters<typeof serveStdio>[0],
): Promise<{ client: Client; sent: Array<Record<string, unknown>> }> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const sent: Array<Record<string, unknown>> = [];
  const send = clientSide.send.bind(clientSide);
  clientSide.send = (message, options) => {
    sent.push(message as Record<string, unknown>);
    return context.with(ROOT_CONTEXT, () => send(message, options));
  };
  const served = serveStdio(factory, { transport: serverSide });
  const client = new Client(
    { name: 'host', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(clientSide);
  closing.push(
    () => client.close(),
    () => served.close(),
  );
  return { client, sent };
}

// upstream (report.build, traced) ← importMcpTools ← middle (traced) ← the caller's client.
async function twoHops(tasks: boolean) {
  const upstreamRegistry = new ToolRegistry().register({
    name: 'report.build',
    inputSchema: z.object({ month: z.string() }),
    task: true,
    handler: (args) => ({ month: args.month }),
  });
  const upstream = await connect(
    createMcpServerFactory({
      registry: upstreamRegistry,
      dispatcher: createDispatcher([otelTracing(), ...defaultStack({ registry: upstreamRegistry })]),
      info: { name: 'upstream', version: '1.0.0' },
      ...(tasks ? { tasks: { store: memoryTaskStore(), pollIntervalMs: 10 } } : {}),
    }),
  );
  const registry = new ToolRegistry();
  await importMcpTools(upstream.client, registry, { configure: () => ({ task: tasks }) });
  const middle = await connect(
    createMcpServerFactory({
      registry,
      dispatcher: createDispatcher([otelTracing(), ...defaultStack({ registry })]),
      info: { name: 'middle', version: '1.0.0' },
    }),
  );
  return { caller: middle.client, upstreamSent: upstream.sent };
}

function spansByService() {
  const spans = telemetry.finished().filter((span) => span.name === 'execute_tool report.build');
  expect(spans).toHaveLength(2);
  // The middle's span ends last: it waits for the upstream's.
  const [upstreamSpan, middleSpan] = spans as [(typeof spans)[0], (typeof spans)[0]];
  return { upstreamSpan, middleSpan };
}

function sentCall(sent: Array<Record<string, unknown>>): Record<string, unknown> {
  const call = sent.find((message) => message['method'] === 'tools/call');
  const params = (call?.['params'] ?? {}) as Record<string, unknown>;
  return (params['_meta'] ?? {}) as Record<string, unknown>;
}

describe.each([
  ['a synchronous call', false],
  ['a call run as an MCP Task', true],
])('one trace across the hop: %s', (_name, tasks) => {
  it("makes our span the caller's child and names it as the upstream request's parent", async () => {
    const { caller, upstreamSent } = await twoHops(tasks);
    const result = await caller.callTool({
      name: 'report.build',
      arguments: { month: '2026-11' },
      _meta: { traceparent, tracestate, baggage },
    });
    expect(result.isError).not.toBe(true);
    const { upstreamSpan, middleSpan } = spansByService();

    const middle = middleSpan.spanContext();
    expect(middle.traceId).toBe(traceId);
    expect(middleSpan.parentSpanContext?.spanId).toBe(callerSpanId);
    expect(middleSpan.parentSpanContext?.isRemote).toBe(true);

    const meta = sentCall(upstreamSent);
    expect(meta['traceparent']).toBe(`00-${traceId}-${middle.spanId}-01`);
    expect(meta['tracestate']).toBe(tracestate);
    expect(meta['baggage']).toBe(baggage);

    expect(upstreamSpan.spanContext().traceId).toBe(traceId);
    expect(upstreamSpan.parentSpanContext?.spanId).toBe(middle.spanId);
  });
});

it('drops a traceparent that fails the W3C syntax: our span starts its own trace', async () => {
  const { caller, upstreamSent } = await twoHops(false);
  await caller.callTool({
    name: 'report.build',
    arguments: { month: '2026-12' },
    _meta: { traceparent: `00-${traceId.toUpperCase()}-${callerSpanId}-01`, tracestate },
  });
  const { middleSpan } = spansByService();
  const middle = middleSpan.spanContext();
  expect(middle.traceId).not.toBe(traceId);
  expect(middleSpan.parentSpanContext).toBeUndefined();
  const meta = sentCall(upstreamSent);
  expect(meta['traceparent']).toBe(`00-${middle.traceId}-${middle.spanId}-01`);
  expect(meta['tracestate']).toBeUndefined();
});
