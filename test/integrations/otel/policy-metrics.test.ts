// otelMetrics' policy instruments against the real SDK: cost units, rate-limit waits, refusals and
// 429 debits, budget exhaustion, unknown outcomes by window, approvals pending and decision latency.

import type { MetricData } from '@opentelemetry/sdk-metrics';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  approvalGate,
  createDispatcher,
  defaultStack,
  errorMapping,
  OutcomeUnknownError,
  rateLimit,
  ToolRegistry,
  toolLookup,
  TransientError,
  windowedBudget,
  type DispatchOptions,
} from '../../../index.js';
import { metricNames, otelMetrics } from '../../../integrations/otel/index.js';
import { counterValue, histogramCount, installTelemetry, pointsWith, type Telemetry } from './harness.js';

let telemetry: Telemetry;
beforeAll(() => {
  telemetry = installTelemetry();
});
afterAll(async () => {
  await telemetry.shutdown();
});
beforeEach(() => telemetry.reset());

function metric(data: Map<string, MetricData>, name: string): MetricData {
  const found = data.get(name);
  if (found === undefined) throw new Error(`No metric ${name}; have ${[...data.keys()].join(', ')}`);
  return found;
}

const tenant = (tenant: string) => ({ tenant }) as DispatchOptions;

describe('otelMetrics: policy instruments', () => {
  it('counts cost units charged and returned, and calls ended by a spent budget', async () => {
    const registry = new ToolRegistry().register({
      name: 'p1.search',
      inputSchema: z.object({}),
      cost: 3,
      settle: () => 1,
      handler: () => 'ok',
    });
    const meter = telemetry.meterProvider.getMeter('tool-dispatcher');
    const dispatcher = createDispatcher([
      otelMetrics({ meter }),
      errorMapping(),
      toolLookup(registry),
      windowedBudget({
        key: (ctx) => (ctx.options as { tenant?: string }).tenant,
        limit: 5,
        windowMs: 60_000,
      }),
    ]);
    // Each reserves 3 and spends 1: the ledger reads 1, 2, 3 after the first three; the fourth
    // would take it to 6, past the limit of 5.
    for (let i = 0; i < 4; i++) await dispatcher.dispatch('p1.search', {}, tenant('acme'));
    const data = await telemetry.collect();
    const tool = { 'gen_ai.tool.name': 'p1.search' };
    expect(counterValue(metric(data, metricNames.costUnits), tool)).toBe(9);
    expect(counterValue(metric(data, metricNames.costUnitsReturned), tool)).toBe(6);
    expect(counterValue(metric(data, metricNames.budgetExhausted), tool)).toBe(1);
    expect(JSON.stringify([...data.values()].map((found) => found.dataPoints))).not.toContain('acme');
  });

  it('counts rate-limit waits with their duration, refusals and 429 debits', async () => {
    let calls = 0;
    const registry = new ToolRegistry()
      .register({ name: 'p2.api', inputSchema: z.object({}), handler: () => 'ok' })
      .register({
        name: 'p2.busy',
        inputSchema: z.object({}),
        handler: () => {
          calls += 1;
          throw new TransientError('429', { retryAfterMs: 1_000 });
        },
      });
    const meter = telemetry.meterProvider.getMeter('tool-dispatcher');
    const dispatcher = createDispatcher([
      otelMetrics({ meter }),
      errorMapping(),
      toolLookup(registry),
      rateLimit({ rate: 1, intervalMs: 20, burst: 1, maxWaitMs: 30, key: (ctx) => ctx.toolName }),
    ]);
    await Promise.all([1, 2, 3].map(() => dispatcher.dispatch('p2.api', {})));
    await dispatcher.dispatch('p2.busy', {});
    const data = await telemetry.collect();
    const api = { 'gen_ai.tool.name': 'p2.api' };
    expect(counterValue(metric(data, metricNames.rateLimitWaits), api)).toBe(1);
    expect(histogramCount(metric(data, metricNames.rateLimitWaitDuration), api)).toBe(1);
    expect(counterValue(metric(data, metricNames.rateLimitRefusals), api)).toBe(1);
    expect(counterValue(metric(data, metricNames.rateLimitDebits), { 'gen_ai.tool.name': 'p2.busy' })).toBe(
      1,
    );
    expect(calls).toBe(1);
  });

  it('counts unknown outcomes by the window where they were lost', async () => {
    const registry = new ToolRegistry().register({
      name: 'p3.charge',
      inputSchema: z.object({}),
      handler: () => {
        throw new OutcomeUnknownError('sent, no answer');
      },
    });
    const meter = telemetry.meterProvider.getMeter('tool-dispatcher');
    const dispatcher = createDispatcher([otelMetrics({ meter }), errorMapping(), toolLookup(registry)]);
    await dispatcher.dispatch('p3.charge', {});
    const data = await telemetry.collect();
    expect(
      counterValue(metric(data, metricNames.outcomeUnknown), {
        'gen_ai.tool.name': 'p3.charge',
        'tool_dispatcher.outcome.window': 'handler_unknown',
      }),
    ).toBe(1);
  });

  it('keeps approvals pending until decided, and records how long the decision took', async () => {
    const registry = new ToolRegistry().register({
      name: 'p4.refund',
      inputSchema: z.object({ amount: z.number() }),
      requiresApproval: true,
      handler: () => 'refunded',
    });
    const gate = approvalGate({ registry });
    const meter = telemetry.meterProvider.getMeter('tool-dispatcher');
    const dispatcher = createDispatcher([
      otelMetrics({ meter, approvals: gate }),
      ...defaultStack({ registry, approvals: gate }),
    ]);
    const first = await dispatcher.dispatch('p4.refund', { amount: 1 });
    const second = await dispatcher.dispatch('p4.refund', { amount: 2 });
    const tool = { 'gen_ai.tool.name': 'p4.refund' };
    expect(counterValue(metric(await telemetry.collect(), metricNames.approvalsPending), tool)).toBe(2);
    if (first.ok || second.ok) throw new Error('expected approval_required');
    await gate.approve(first.approval?.token ?? '', { by: 'ana' });
    await gate.deny(second.approval?.token ?? '', 'no');
    const data = await telemetry.collect();
    expect(counterValue(metric(data, metricNames.approvalsPending), tool)).toBe(0);
    const durations = metric(data, metricNames.approvalDecisionDuration);
    expect(histogramCount(durations, { ...tool, 'tool_dispatcher.approval.decision': 'approved' })).toBe(1);
    expect(histogramCount(durations, { ...tool, 'tool_dispatcher.approval.decision': 'denied' })).toBe(1);
    expect(
      pointsWith(durations, {}).every((point) => !JSON.stringify(point.attributes).includes('token')),
    ).toBe(true);
  });

  it('rejects approvals that is not a gate, naming it', () => {
    expect(() => otelMetrics({ approvals: {} as never })).toThrow(/approvals/);
  });
});
