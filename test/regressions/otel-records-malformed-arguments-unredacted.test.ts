// Issue 31, item 5: with recordArguments on, otelTracing redacted arguments it could parse, but a
// model's broken JSON stayed text the redactor passed by, so the span recorded its secrets.

import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, createRedactor, defaultStack, ToolRegistry } from '../../index.js';
import { otelTracing } from '../../integrations/otel/index.js';
import { installTelemetry, type Telemetry } from '../integrations/otel/harness.js';
import { secretCores, secrets } from '../helpers/secrets.js';

let telemetry: Telemetry;
beforeAll(() => {
  telemetry = installTelemetry();
});
afterAll(async () => {
  await telemetry.shutdown();
});

it('redacts the arguments of a dispatchJson call whose text is not valid JSON', async () => {
  const registry = new ToolRegistry().register({
    name: 'kv.put',
    inputSchema: z.object({ value: z.string() }),
    handler: ({ value }) => value,
  });
  const dispatcher = createDispatcher(
    [otelTracing({ tracer: telemetry.tracer, recordArguments: true }), ...defaultStack({ registry })],
    { redact: createRedactor() },
  );
  const broken = `{"value": "${Object.values(secrets).join(' ').replaceAll('\n', '\\n')}", `;
  const outcome = await dispatcher.dispatchJson('kv.put', broken);
  expect(outcome).toMatchObject({ ok: false, kind: 'schema' });
  const span = telemetry.finished().find((finished) => finished.name === 'execute_tool kv.put');
  const recorded = String(span?.attributes['gen_ai.tool.call.arguments']);
  expect(recorded).toContain('[REDACTED:api_key]');
  const everything = JSON.stringify({
    attributes: span?.attributes,
    status: span?.status,
    events: span?.events,
  });
  for (const core of secretCores) expect(everything, `the span holds ${core}`).not.toContain(core);
});
