// Regression: with recordArguments on, a call made with dispatchJson recorded its arguments as the
// JSON text quoted again (`"{\"q\":\"x\"}"`), because the span starts before the text is parsed.

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

it('records the arguments of a dispatchJson call as JSON once', async () => {
  const registry = new ToolRegistry().register({
    name: 'kv.get',
    inputSchema: z.object({ q: z.string() }),
    handler: ({ q }) => q,
  });
  const dispatcher = createDispatcher([
    otelTracing({ tracer: telemetry.tracer, recordArguments: true }),
    ...defaultStack({ registry }),
  ]);
  const outcome = await dispatcher.dispatchJson('kv.get', '{"q":"x"}');
  expect(outcome).toMatchObject({ ok: true, result: 'x' });
  const span = telemetry.finished().find((finished) => finished.name === 'execute_tool kv.get');
  expect(span?.attributes['gen_ai.tool.call.arguments']).toBe('{"q":"x"}');
});
