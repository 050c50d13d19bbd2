// Regression: an idempotency_conflict's envelope message quotes the key, and otelTracing wrote
// that message as the span's status description, so the raw key reached the trace backend.

import { SpanStatusCode } from '@opentelemetry/api';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../../index.js';
import { otelTracing } from '../../integrations/otel/index.js';
import { installTelemetry, type Telemetry } from '../integrations/otel/harness.js';

let telemetry: Telemetry;
beforeAll(() => {
  telemetry = installTelemetry();
});
afterAll(async () => {
  await telemetry.shutdown();
});

it('keeps the idempotency key out of the span of an idempotency_conflict', async () => {
  const key = 'order-7f3a9c2e-for-jane-roe';
  const registry = new ToolRegistry().register({
    name: 'pay.charge',
    inputSchema: z.object({ amount: z.number() }),
    handler: () => 'charged',
  });
  const dispatcher = createDispatcher([
    otelTracing({ tracer: telemetry.tracer, recordArguments: true }),
    ...defaultStack({ registry }),
  ]);
  await dispatcher.dispatch('pay.charge', { amount: 10 }, { idempotencyKey: key });
  const conflict = await dispatcher.dispatch('pay.charge', { amount: 99 }, { idempotencyKey: key });
  // The caller's envelope still names its key: the caller chose it.
  expect(conflict).toMatchObject({ ok: false, kind: 'idempotency_conflict' });
  expect((conflict as { message: string }).message).toContain(key);

  const span = telemetry.finished().find((finished) => finished.attributes['error.type'] !== undefined);
  expect(span?.status.code).toBe(SpanStatusCode.ERROR);
  expect(span?.status.message).toBe(
    'The idempotency key was already used for a different tool or different args',
  );
  const recorded = JSON.stringify(
    telemetry
      .finished()
      .map(({ name, attributes, events, status }) => ({ name, attributes, events, status })),
  );
  expect(recorded).not.toContain(key);
});
