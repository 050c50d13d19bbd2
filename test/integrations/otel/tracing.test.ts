// otelTracing against the real SDK: span tree, names, attributes and events for each path a call can take.

import { readFileSync } from 'node:fs';
import {
  context,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  autopilot,
  circuitBreaker,
  createBudget,
  createDispatcher,
  defaultStack,
  isDispatchError,
  ToolRegistry,
  TransientError,
  type DefaultStackOptions,
  type Middleware,
  type Outcome,
  type ToolContext,
} from '../../../index.js';
import { otelTracing, type OtelTracingOptions } from '../../../integrations/otel/index.js';
import { scopeVersion } from '../../../integrations/otel/attributes.js';
import { flush, gate, type Gate } from '../../helpers/gate.js';
import { eventNames, installTelemetry, isChildOf, manualClock, onlySpan, type Telemetry } from './harness.js';

let telemetry: Telemetry;
beforeAll(() => {
  telemetry = installTelemetry();
});
afterAll(async () => {
  await telemetry.shutdown();
});
beforeEach(() => telemetry.reset());

const app = () => trace.getTracer('app');

/** Runs `fn` inside a span of the caller (an agent turn), ended when `fn` settles. */
async function inCallerSpan<T>(name: string, fn: (span: Span) => Promise<T>): Promise<T> {
  return app().startActiveSpan(name, async (span) => {
    try {
      return await fn(span);
    } finally {
      span.end();
    }
  });
}

/** A handler that opens a span of its own around its work, as instrumented client code does. */
function spanning<A, R>(name: string, work: (args: A, ctx: ToolContext) => R | Promise<R>) {
  return (args: A, ctx: ToolContext) =>
    app().startActiveSpan(name, async (span) => {
      try {
        return await work(args, ctx);
      } finally {
        span.end();
      }
    });
}

const query = z.object({ q: z.string() });

function setup(
  register: (registry: ToolRegistry) => void,
  options: OtelTracingOptions = {},
  stack: Omit<DefaultStackOptions, 'registry'> = {},
  extra: { layers?: (layers: Middleware[]) => Middleware[] } = {},
) {
  const registry = new ToolRegistry();
  register(registry);
  const layers = defaultStack({ registry, ...stack });
  const dispatcher = createDispatcher([
    otelTracing({ tracer: telemetry.tracer, ...options }),
    ...(extra.layers?.(layers) ?? layers),
  ]);
  return { registry, dispatcher };
}

function executeSpans(): ReadableSpan[] {
  return telemetry.finished().filter((span) => span.name.startsWith('execute_tool'));
}

function expectEndedOnce(span: ReadableSpan): void {
  expect(telemetry.ends.get(span.spanContext().spanId)).toBe(1);
}

describe('otelTracing: a successful call', () => {
  it('makes one execute_tool span under the caller, with the handler span as its child', async () => {
    const { dispatcher } = setup((registry) =>
      registry.register({
        name: 'kv.get',
        description: 'Reads a key',
        inputSchema: query,
        handler: spanning('db.get', async ({ q }: { q: string }) => `value of ${q}`),
      }),
    );
    const outcome = await inCallerSpan('agent.turn', () =>
      dispatcher.dispatch('kv.get', { q: 'a' }, { callId: 'call_abc' }),
    );
    expect(outcome).toEqual({ ok: true, result: 'value of a', attempts: 1 });

    const spans = telemetry.finished();
    const turn = onlySpan(spans, 'agent.turn');
    const tool = onlySpan(spans, 'execute_tool kv.get');
    const db = onlySpan(spans, 'db.get');
    expect(isChildOf(tool, turn)).toBe(true);
    expect(isChildOf(db, tool)).toBe(true);
    expect(tool.kind).toBe(SpanKind.INTERNAL);
    expect(tool.status.code).toBe(SpanStatusCode.UNSET);
    expect(tool.attributes).toEqual({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'kv.get',
      'gen_ai.tool.type': 'function',
      'gen_ai.tool.call.id': 'call_abc',
      'gen_ai.tool.description': 'Reads a key',
      'tool_dispatcher.attempts': 1,
      'tool_dispatcher.retries': 0,
    });
    expect(eventNames(tool)).toEqual(['tool_dispatcher.dispatch.attempt']);
    expect(tool.events[0]?.attributes).toEqual({ 'tool_dispatcher.attempt': 1 });
    expectEndedOnce(tool);
  });

  it('sets gen_ai.operation.name when the span starts, where samplers read it', async () => {
    const seen: unknown[] = [];
    const tracer: Tracer = {
      startSpan(name, options, ctx) {
        seen.push({ name, kind: options?.kind, attributes: { ...options?.attributes } });
        return telemetry.tracer.startSpan(name, options, ctx);
      },
      startActiveSpan: telemetry.tracer.startActiveSpan.bind(telemetry.tracer) as Tracer['startActiveSpan'],
    };
    const { dispatcher } = setup(
      (registry) => registry.register({ name: 'kv.get', inputSchema: query, handler: () => 1 }),
      { tracer },
    );
    await dispatcher.dispatch('kv.get', { q: 'a' });
    expect(seen).toEqual([
      {
        name: 'execute_tool kv.get',
        kind: SpanKind.INTERNAL,
        attributes: {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': 'kv.get',
          'gen_ai.tool.type': 'function',
        },
      },
    ]);
  });

  it('leaves out the call id the dispatcher generated, the arguments and the result', async () => {
    const { dispatcher } = setup((registry) =>
      registry.register({ name: 'kv.get', inputSchema: query, handler: () => ({ secret: 'pii' }) }),
    );
    await dispatcher.dispatch('kv.get', { q: 'jane@example.com' });
    const tool = onlySpan(telemetry.finished(), 'execute_tool kv.get');
    expect(tool.attributes).not.toHaveProperty('gen_ai.tool.call.id');
    expect(tool.attributes).not.toHaveProperty('gen_ai.tool.description');
    expect(JSON.stringify(tool.attributes)).not.toContain('jane@example.com');
    expect(JSON.stringify(tool.attributes)).not.toContain('pii');
  });

  it('records arguments and results as JSON text on opt-in, cut to maxAttributeLength', async () => {
    const { dispatcher } = setup(
      (registry) =>
        registry.register({
          name: 'kv.get',
          inputSchema: query,
          handler: ({ q }) => ({ echoed: q.repeat(10) }),
        }),
      { recordArguments: true, recordResults: true, maxAttributeLength: 32 },
    );
    await dispatcher.dispatch('kv.get', { q: 'abcdefgh' });
    const tool = onlySpan(telemetry.finished(), 'execute_tool kv.get');
    expect(tool.attributes['gen_ai.tool.call.arguments']).toBe('{"q":"abcdefgh"}');
    const result = tool.attributes['gen_ai.tool.call.result'];
    expect(result).toHaveLength(32);
    expect(result).toMatch(/^\{"echoed":"abcdefghabcdefgh.*…$/);
  });

  it('names the span with spanName and types the tool with toolType', async () => {
    const { dispatcher } = setup(
      (registry) => registry.register({ name: 'kv.get', inputSchema: query, handler: () => 1 }),
      { spanName: (tool) => `tool ${tool}`, toolType: 'datastore' },
    );
    await dispatcher.dispatch('kv.get', { q: 'a' });
    const tool = onlySpan(telemetry.finished(), 'tool kv.get');
    expect(tool.attributes['gen_ai.tool.type']).toBe('datastore');
  });

  it('reports the budget left after the call', async () => {
    const { dispatcher } = setup((registry) =>
      registry.register({ name: 'kv.get', inputSchema: query, handler: () => 1 }),
    );
    await dispatcher.dispatch('kv.get', { q: 'a' }, { budget: createBudget(5) });
    const tool = onlySpan(telemetry.finished(), 'execute_tool kv.get');
    expect(tool.attributes['tool_dispatcher.budget.remaining']).toBe(4);
  });
});

describe('otelTracing: the autopilot', () => {
  it('puts outcome.policy on the span of a success and of a failure', async () => {
    let fail = false;
    const pilot = autopilot({ timeout: { minSamples: 2 }, retryBudget: false });
    const { dispatcher } = setup(
      (registry) =>
        registry.register({
          name: 'kv.get',
          inputSchema: query,
          timeoutMs: 5_000,
          handler: () => {
            if (fail) throw new TransientError('backend busy');
            return 1;
          },
        }),
      {},
      { autopilot: pilot, retry: { maxAttempts: 2, baseDelayMs: 1, random: () => 0 } },
    );
    const first = await dispatcher.dispatch('kv.get', { q: 'a' });
    expect(first.ok).toBe(true);
    const ok = onlySpan(telemetry.finished(), 'execute_tool kv.get');
    expect(ok.attributes).toMatchObject({
      'tool_dispatcher.policy.mode': 'enforce',
      'tool_dispatcher.policy.timeout_ms': 5_000,
      'tool_dispatcher.policy.source': 'static: under 2 samples',
      'tool_dispatcher.policy.cut_off': false,
      'tool_dispatcher.policy.hedged': false,
      'tool_dispatcher.policy.retried': false,
      'tool_dispatcher.policy.budget': 'off',
    });
    telemetry.reset();
    fail = true;
    const failed = await dispatcher.dispatch('kv.get', { q: 'b' });
    expect(failed).toMatchObject({ ok: false, kind: 'transient', policy: { retried: true } });
    const bad = onlySpan(telemetry.finished(), 'execute_tool kv.get');
    expect(bad.attributes).toMatchObject({
      'error.type': 'transient',
      'tool_dispatcher.policy.retried': true,
      'tool_dispatcher.policy.source': 'static: under 2 samples',
    });
  });

  it('puts no policy attributes on a call no autopilot saw', async () => {
    const { dispatcher } = setup((registry) =>
      registry.register({ name: 'kv.get', inputSchema: query, handler: () => 1 }),
    );
    await dispatcher.dispatch('kv.get', { q: 'a' });
    const tool = onlySpan(telemetry.finished(), 'execute_tool kv.get');
    expect(Object.keys(tool.attributes).filter((name) => name.includes('.policy.'))).toEqual([]);
  });
});

describe('otelTracing: failures', () => {
  it('records a retry as events with its delay and kind, and both attempts run inside the span', async () => {
    const clock = manualClock();
    let calls = 0;
    const { dispatcher } = setup(
      (registry) =>
        registry.register({
          name: 'search.web',
          inputSchema: query,
          handler: spanning('http.get', () => {
            calls += 1;
            if (calls === 1) throw new TransientError('503 from upstream');
            return 'hits';
          }),
        }),
      {},
      { retry: { clock, random: () => 0, baseDelayMs: 100 } },
    );
    const pending = inCallerSpan('agent.turn', () => dispatcher.dispatch('search.web', { q: 'x' }));
    await flush();
    expect(clock.pending()).toBe(1);
    clock.fire();
    expect(await pending).toMatchObject({ ok: true, attempts: 2 });

    const spans = telemetry.finished();
    const tool = onlySpan(spans, 'execute_tool search.web');
    const https = spans.filter((span) => span.name === 'http.get');
    expect(https).toHaveLength(2);
    for (const http of https) expect(isChildOf(http, tool)).toBe(true);
    expect(tool.attributes).toMatchObject({
      'tool_dispatcher.attempts': 2,
      'tool_dispatcher.retries': 1,
      'tool_dispatcher.retry.total_delay_ms': 100,
    });
    expect(tool.status.code).toBe(SpanStatusCode.UNSET);
    expect(eventNames(tool)).toEqual([
      'tool_dispatcher.dispatch.attempt',
      'tool_dispatcher.dispatch.attempt_failed',
      'tool_dispatcher.dispatch.retry',
      'tool_dispatcher.dispatch.attempt',
    ]);
    const [, failed, retried, second] = tool.events;
    expect(failed?.attributes).toEqual({
      'tool_dispatcher.attempt': 1,
      'error.type': 'transient',
      'tool_dispatcher.error.message': '503 from upstream',
    });
    expect(retried?.attributes).toEqual({
      'tool_dispatcher.attempt': 1,
      'tool_dispatcher.retry.delay_ms': 100,
      'error.type': 'transient',
    });
    expect(second?.attributes).toEqual({ 'tool_dispatcher.attempt': 2 });
    expectEndedOnce(tool);
  });

  it('records a timeout with its limit, error.type timeout and status ERROR', async () => {
    const clock = manualClock();
    const { dispatcher } = setup(
      (registry) =>
        registry.register({
          name: 'db.write',
          inputSchema: query,
          timeoutMs: 50,
          handler: (_args, ctx) =>
            new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve('late'))),
        }),
      {},
      { timeout: { clock } },
    );
    const pending = dispatcher.dispatch('db.write', { q: 'x' });
    await flush();
    clock.fire();
    const outcome = await pending;
    expect(outcome).toMatchObject({ ok: false, kind: 'timeout', attempts: 1 });

    const tool = onlySpan(telemetry.finished(), 'execute_tool db.write');
    expect(tool.attributes).toMatchObject({ 'error.type': 'timeout', 'tool_dispatcher.attempts': 1 });
    expect(tool.status).toEqual({
      code: SpanStatusCode.ERROR,
      message: (outcome as { message: string }).message,
    });
    const timeoutEvent = tool.events.find((event) => event.name === 'tool_dispatcher.dispatch.timeout');
    expect(timeoutEvent?.attributes).toEqual({
      'tool_dispatcher.attempt': 1,
      'tool_dispatcher.timeout_ms': 50,
    });
    expectEndedOnce(tool);
  });

  it('records a schema error with no attempt, its details only with recordArguments', async () => {
    for (const recordArguments of [false, true]) {
      telemetry.reset();
      const { dispatcher } = setup(
        (registry) => registry.register({ name: 'kv.get', inputSchema: query, handler: () => 1 }),
        { recordArguments },
      );
      const outcome = await dispatcher.dispatch('kv.get', { q: 7 });
      expect(outcome).toMatchObject({ ok: false, kind: 'schema', attempts: 0 });
      const tool = onlySpan(telemetry.finished(), 'execute_tool kv.get');
      expect(tool.attributes).toMatchObject({ 'error.type': 'schema', 'tool_dispatcher.attempts': 0 });
      expect(tool.status.code).toBe(SpanStatusCode.ERROR);
      // The validator's details may quote the arguments.
      expect(tool.status.message).toBe(
        recordArguments
          ? (outcome as { message: string }).message
          : 'The arguments were rejected (the details may quote them and are recorded only with recordArguments)',
      );
      expect(eventNames(tool)).toEqual([]);
    }
  });

  it('records not_found under the requested name', async () => {
    const { dispatcher } = setup(() => {});
    const outcome = await dispatcher.dispatch('ghost', {});
    expect(outcome).toMatchObject({ ok: false, kind: 'not_found' });
    const tool = onlySpan(telemetry.finished(), 'execute_tool ghost');
    expect(tool.attributes).toMatchObject({
      'gen_ai.tool.name': 'ghost',
      'error.type': 'not_found',
      'tool_dispatcher.attempts': 0,
    });
    expect(tool.status.code).toBe(SpanStatusCode.ERROR);
  });

  it('cuts a long status message to maxAttributeLength', async () => {
    const { dispatcher } = setup(
      (registry) =>
        registry.register({
          name: 'kv.get',
          inputSchema: query,
          handler: () => {
            throw new Error('x'.repeat(500));
          },
        }),
      { maxAttributeLength: 64 },
    );
    await dispatcher.dispatch('kv.get', { q: 'a' });
    const tool = onlySpan(telemetry.finished(), 'execute_tool kv.get');
    expect(tool.attributes['error.type']).toBe('internal');
    expect(tool.status.message).toHaveLength(64);
  });
});

describe('otelTracing: what only the dispatcher knows', () => {
  it('links a dedupe follower to the leader span; the handler span sits under the leader', async () => {
    const release = gate();
    let runs = 0;
    const { dispatcher } = setup((registry) =>
      registry.register({
        name: 'pay.charge',
        inputSchema: query,
        handler: spanning('bank.charge', async () => {
          runs += 1;
          await release.promise;
          return 'charged';
        }),
      }),
    );
    const leader = inCallerSpan('turn.1', () =>
      dispatcher.dispatch('pay.charge', { q: 'x' }, { idempotencyKey: 'order-42', callId: 'call_1' }),
    );
    await flush();
    const follower = inCallerSpan('turn.2', () =>
      dispatcher.dispatch('pay.charge', { q: 'x' }, { idempotencyKey: 'order-42', callId: 'call_2' }),
    );
    await flush();
    release.open();
    expect(await leader).toMatchObject({ ok: true, attempts: 1 });
    expect(await follower).toMatchObject({ ok: true, attempts: 0 });
    expect(runs).toBe(1);

    const spans = telemetry.finished();
    const [first, second] = executeSpans().sort((a, b) =>
      String(a.attributes['gen_ai.tool.call.id']).localeCompare(String(b.attributes['gen_ai.tool.call.id'])),
    ) as [ReadableSpan, ReadableSpan];
    expect(isChildOf(first, onlySpan(spans, 'turn.1'))).toBe(true);
    expect(isChildOf(second, onlySpan(spans, 'turn.2'))).toBe(true);
    expect(isChildOf(onlySpan(spans, 'bank.charge'), first)).toBe(true);
    expect(second.links.map((link) => link.context.spanId)).toEqual([first.spanContext().spanId]);
    expect(first.links).toEqual([]);
    expect(second.attributes).toMatchObject({
      'tool_dispatcher.idempotency.source': 'in_flight',
      'tool_dispatcher.attempts': 0,
    });
    const hit = second.events.find((event) => event.name === 'tool_dispatcher.idempotency.hit');
    expect(hit?.attributes).toEqual({
      'tool_dispatcher.attempt': 0,
      'tool_dispatcher.idempotency.source': 'in_flight',
    });
    // The conventions forbid raw idempotency keys in telemetry.
    expect(JSON.stringify(spans.map((span) => [span.attributes, span.events]))).not.toContain('order-42');
    expectEndedOnce(first);
    expectEndedOnce(second);
  });

  it('marks a cache hit without a link', async () => {
    const { dispatcher } = setup((registry) =>
      registry.register({ name: 'pay.charge', inputSchema: query, handler: () => 'charged' }),
    );
    await dispatcher.dispatch('pay.charge', { q: 'x' }, { idempotencyKey: 'k' });
    await dispatcher.dispatch('pay.charge', { q: 'x' }, { idempotencyKey: 'k' });
    const [, cached] = executeSpans() as [ReadableSpan, ReadableSpan];
    expect(cached.attributes).toMatchObject({
      'tool_dispatcher.idempotency.source': 'cache',
      'tool_dispatcher.attempts': 0,
    });
    expect(cached.links).toEqual([]);
  });

  it('records a queued call and its wait, and its handler span still sits under its own span', async () => {
    const first = gate();
    const { dispatcher } = setup(
      (registry) =>
        registry.register({
          name: 'kv.get',
          inputSchema: query,
          handler: spanning('db.get', async ({ q }: { q: string }) => {
            if (q === 'first') await first.promise;
            return q;
          }),
        }),
      {},
      { concurrency: { max: 1 } },
    );
    const one = inCallerSpan('turn.1', () => dispatcher.dispatch('kv.get', { q: 'first' }, { callId: 'c1' }));
    await flush();
    const two = inCallerSpan('turn.2', () =>
      dispatcher.dispatch('kv.get', { q: 'second' }, { callId: 'c2' }),
    );
    await flush();
    first.open();
    await Promise.all([one, two]);

    const spans = telemetry.finished();
    const queued = executeSpans().find(
      (span) => span.attributes['gen_ai.tool.call.id'] === 'c2',
    ) as ReadableSpan;
    expect(isChildOf(queued, onlySpan(spans, 'turn.2'))).toBe(true);
    const handlerSpans = spans.filter((span) => span.name === 'db.get');
    expect(handlerSpans.filter((span) => isChildOf(span, queued))).toHaveLength(1);
    expect(eventNames(queued)).toContain('tool_dispatcher.concurrency.queued');
    const queuedEvent = queued.events.find((event) => event.name === 'tool_dispatcher.concurrency.queued');
    expect(queuedEvent?.attributes).toEqual({
      'tool_dispatcher.attempt': 0,
      'tool_dispatcher.queue.length': 1,
      'tool_dispatcher.concurrency.max': 1,
    });
    expect(queued.attributes['tool_dispatcher.queue.wait_ms']).toBeGreaterThanOrEqual(0);
  });

  it('keeps each call of gatherBounded under the caller, with its handler span as its child', async () => {
    const { dispatcher } = setup((registry) =>
      registry.register({
        name: 'kv.get',
        inputSchema: query,
        handler: spanning('db.get', async ({ q }: { q: string }) => q),
      }),
    );
    const outcomes = await inCallerSpan('agent.turn', () =>
      dispatcher.gatherBounded(
        ['a', 'b', 'c', 'd'].map((q) => ({ name: 'kv.get', args: { q }, options: { callId: `call_${q}` } })),
        { concurrency: 1 },
      ),
    );
    expect(outcomes.map((outcome) => outcome.ok)).toEqual([true, true, true, true]);
    const spans = telemetry.finished();
    const turn = onlySpan(spans, 'agent.turn');
    const tools = executeSpans();
    expect(tools).toHaveLength(4);
    for (const tool of tools) {
      expect(isChildOf(tool, turn)).toBe(true);
      expect(spans.filter((span) => span.name === 'db.get' && isChildOf(span, tool))).toHaveLength(1);
    }
  });

  it('records the breaker opening and the calls it turns away', async () => {
    const breaker = circuitBreaker({ failureThreshold: 2, cooldownMs: 10_000 });
    const { dispatcher } = setup(
      (registry) =>
        registry.register({
          name: 'search.web',
          inputSchema: query,
          handler: () => {
            throw new Error('upstream down');
          },
        }),
      {},
      {},
      {
        layers: (layers) => {
          layers.splice(
            layers.findIndex((layer) => layer.name === 'concurrencyLimit'),
            0,
            breaker,
          );
          return layers;
        },
      },
    );
    await dispatcher.dispatch('search.web', { q: 'a' });
    await dispatcher.dispatch('search.web', { q: 'b' });
    const refused = await dispatcher.dispatch('search.web', { q: 'c' });
    expect(refused).toMatchObject({ ok: false, kind: 'circuit_open', attempts: 0 });

    const [one, two, three] = executeSpans() as [ReadableSpan, ReadableSpan, ReadableSpan];
    expect(one.attributes).not.toHaveProperty('tool_dispatcher.circuit.state');
    expect(two.attributes).toMatchObject({
      'tool_dispatcher.circuit.state': 'open',
      'error.type': 'internal',
    });
    const opened = two.events.find((event) => event.name === 'tool_dispatcher.circuit.open');
    expect(opened?.attributes).toEqual({
      'tool_dispatcher.attempt': 1,
      'tool_dispatcher.circuit.failures': 2,
      'tool_dispatcher.circuit.cooldown_ms': 10_000,
      'tool_dispatcher.circuit.key': 'search.web',
    });
    expect(three.attributes).toMatchObject({
      'error.type': 'circuit_open',
      'tool_dispatcher.circuit.state': 'open',
      'tool_dispatcher.attempts': 0,
    });
  });
});

describe('otelTracing: the span always ends once', () => {
  it('ends the span with cancelled when the caller aborts, before the inner layers finish', async () => {
    const handlerGate: Gate<string> = gate();
    let handlerDone = false;
    const { dispatcher } = setup((registry) =>
      registry.register({
        name: 'slow.job',
        inputSchema: query,
        timeoutMs: Infinity,
        // Ignores its signal: the inner layers settle only when the gate opens.
        handler: spanning('job.work', async () => {
          const value = await handlerGate.promise;
          handlerDone = true;
          return value;
        }),
      }),
    );
    const controller = new AbortController();
    const pending = inCallerSpan('agent.turn', () =>
      dispatcher.dispatch('slow.job', { q: 'x' }, { signal: controller.signal }),
    );
    await flush();
    controller.abort();
    const outcome: Outcome = await pending;
    expect(isDispatchError(outcome) && outcome.kind).toBe('cancelled');
    expect(handlerDone).toBe(false);

    const tool = onlySpan(telemetry.finished(), 'execute_tool slow.job');
    expect(tool.attributes['error.type']).toBe('cancelled');
    expect(tool.status.code).toBe(SpanStatusCode.ERROR);

    handlerGate.open('late');
    await flush();
    expect(handlerDone).toBe(true);
    expect(executeSpans()).toHaveLength(1);
    expectEndedOnce(tool);
    expect(isChildOf(onlySpan(telemetry.finished(), 'job.work'), tool)).toBe(true);
  });

  it('never breaks a dispatch when the tracer throws on start', async () => {
    const tracer: Tracer = {
      startSpan() {
        throw new Error('tracer down');
      },
      startActiveSpan() {
        throw new Error('tracer down');
      },
    };
    const { dispatcher } = setup(
      (registry) => registry.register({ name: 'kv.get', inputSchema: query, handler: () => 1 }),
      { tracer },
    );
    expect(await dispatcher.dispatch('kv.get', { q: 'a' })).toEqual({ ok: true, result: 1, attempts: 1 });
  });

  it('never breaks a dispatch when every method of the span throws', async () => {
    const real = telemetry.tracer;
    const tracer: Tracer = {
      startSpan(name, options, ctx) {
        const span = real.startSpan(name, options, ctx);
        for (const method of [
          'setAttribute',
          'setAttributes',
          'addEvent',
          'addLink',
          'setStatus',
          'end',
        ] as const) {
          (span as unknown as Record<string, () => never>)[method] = () => {
            throw new Error(`${method} exploded`);
          };
        }
        return span;
      },
      startActiveSpan: real.startActiveSpan.bind(real) as Tracer['startActiveSpan'],
    };
    const clock = manualClock();
    let calls = 0;
    const { dispatcher } = setup(
      (registry) =>
        registry.register({
          name: 'kv.get',
          inputSchema: query,
          handler: () => {
            calls += 1;
            if (calls === 1) throw new TransientError('again');
            return 'ok';
          },
        }),
      { tracer, recordArguments: true, recordResults: true },
      { retry: { clock, random: () => 0 } },
    );
    const pending = dispatcher.dispatch('kv.get', { q: 'a' }, { idempotencyKey: 'k1' });
    await flush();
    clock.fire();
    expect(await pending).toEqual({ ok: true, result: 'ok', attempts: 2 });
    expect(await dispatcher.dispatch('ghost', {})).toMatchObject({ ok: false, kind: 'not_found' });
  });

  it('runs the handler exactly once, outside the span, when the context manager throws', async () => {
    let runs = 0;
    const { dispatcher } = setup((registry) =>
      registry.register({ name: 'kv.get', inputSchema: query, handler: () => ++runs }),
    );
    context.disable();
    context.setGlobalContextManager({
      active: () => ROOT_CONTEXT,
      with: () => {
        throw new Error('context manager down');
      },
      bind: (_ctx, target) => target,
      enable() {
        return this;
      },
      disable() {
        return this;
      },
    });
    try {
      expect(await dispatcher.dispatch('kv.get', { q: 'a' })).toEqual({ ok: true, result: 1, attempts: 1 });
    } finally {
      context.disable();
      context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    }
    expect(runs).toBe(1);
    // The SDK's own export needs the context manager too, so the span is ended but not exported.
    expect([...telemetry.ends.values()]).toEqual([1]);
  });

  it('works with no SDK: the API no-op tracer, and the handler still runs', async () => {
    const registry = new ToolRegistry().register({ name: 'kv.get', inputSchema: query, handler: () => 2 });
    const noop = new (
      trace.getTracerProvider().constructor as new () => { getTracer(name: string): Tracer }
    )().getTracer('x');
    const dispatcher = createDispatcher([otelTracing({ tracer: noop }), ...defaultStack({ registry })]);
    expect(await dispatcher.dispatch('kv.get', { q: 'a' })).toEqual({ ok: true, result: 2, attempts: 1 });
    expect(telemetry.finished()).toEqual([]);
  });

  it('uses the global tracer provider by default', async () => {
    const registry = new ToolRegistry().register({ name: 'kv.get', inputSchema: query, handler: () => 2 });
    const dispatcher = createDispatcher([otelTracing(), ...defaultStack({ registry })]);
    await dispatcher.dispatch('kv.get', { q: 'a' });
    const tool = onlySpan(telemetry.finished(), 'execute_tool kv.get');
    expect(tool.instrumentationScope).toMatchObject({ name: 'tool-dispatcher', version: scopeVersion });
  });

  it('reports the package version as its scope version', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    expect(scopeVersion).toBe(pkg.version);
  });
});

describe('otelTracing: under a host that has its own execute_tool span', () => {
  it("enriches the host's active span instead of starting another, and leaves ending it to the host", async () => {
    const { dispatcher } = setup(
      (registry) =>
        registry.register({
          name: 'kv.get',
          inputSchema: query,
          handler: spanning('db.get', async () => 'v'),
        }),
      { mode: 'enrich' },
    );
    const host = app().startSpan('anthropic.custom_tool_use kv__get', {
      attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'kv__get' },
    });
    const outcome = await context.with(trace.setSpan(context.active(), host), () =>
      dispatcher.dispatch('kv.get', { q: 'a' }, { callId: 'toolu_1' }),
    );
    expect(outcome).toMatchObject({ ok: true });
    expect(executeSpans()).toEqual([]);
    host.end();

    const spans = telemetry.finished();
    const hostSpan = onlySpan(spans, 'anthropic.custom_tool_use kv__get');
    expect(hostSpan.attributes).toMatchObject({
      'gen_ai.tool.name': 'kv__get',
      'tool_dispatcher.attempts': 1,
      'tool_dispatcher.retries': 0,
    });
    expect(eventNames(hostSpan)).toEqual(['tool_dispatcher.dispatch.attempt']);
    expect(isChildOf(onlySpan(spans, 'db.get'), hostSpan)).toBe(true);
  });

  it('starts its own span in enrich mode when no span is active', async () => {
    const { dispatcher } = setup(
      (registry) => registry.register({ name: 'kv.get', inputSchema: query, handler: () => 1 }),
      { mode: 'enrich' },
    );
    await dispatcher.dispatch('kv.get', { q: 'a' });
    expectEndedOnce(onlySpan(telemetry.finished(), 'execute_tool kv.get'));
  });

  it('nests as a child of the host span in child mode', async () => {
    const { dispatcher } = setup((registry) =>
      registry.register({ name: 'kv.get', inputSchema: query, handler: () => 1 }),
    );
    await inCallerSpan('anthropic.custom_tool_use kv__get', () => dispatcher.dispatch('kv.get', { q: 'a' }));
    const spans = telemetry.finished();
    expect(
      isChildOf(onlySpan(spans, 'execute_tool kv.get'), onlySpan(spans, 'anthropic.custom_tool_use kv__get')),
    ).toBe(true);
  });
});

describe('otelTracing options', () => {
  it('rejects bad options with a TypeError naming the option', () => {
    expect(() => otelTracing(null as never)).toThrow(/otelTracing\(\) options/);
    expect(() => otelTracing({ tracer: {} as Tracer })).toThrow(/tracer/);
    expect(() => otelTracing({ recordArguments: 'yes' as never })).toThrow(/recordArguments/);
    expect(() => otelTracing({ recordResults: 1 as never })).toThrow(/recordResults/);
    expect(() => otelTracing({ spanName: 3 as never })).toThrow(/spanName/);
    expect(() => otelTracing({ toolType: '' })).toThrow(/toolType/);
    expect(() => otelTracing({ maxAttributeLength: 2 })).toThrow(/maxAttributeLength/);
    expect(() => otelTracing({ mode: 'parent' as never })).toThrow(/mode/);
  });

  it('returns a layer named otelTracing', () => {
    expect(otelTracing().name).toBe('otelTracing');
  });
});
