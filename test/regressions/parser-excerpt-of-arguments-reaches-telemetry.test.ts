// Regression: dispatchJson's parse failure quotes the malformed arguments (V8's excerpt), and that
// message went as is into the span status and the `dispatch.failure` log line, although recording
// arguments is opt-in.

import { SpanStatusCode } from '@opentelemetry/api';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, logging, ToolRegistry, type LogRecord } from '../../index.js';
import { otelTracing } from '../../integrations/otel/index.js';
import { flush } from '../helpers/gate.js';
import { installTelemetry, type Telemetry } from '../integrations/otel/harness.js';

let telemetry: Telemetry;
beforeAll(() => {
  telemetry = installTelemetry();
});
afterAll(async () => {
  await telemetry.shutdown();
});

it('keeps the JSON parser excerpt of malformed arguments out of the span and the log', async () => {
  const records: LogRecord[] = [];
  const keep = (record: LogRecord) => records.push(record);
  const logger = { debug: keep, info: keep, warn: keep, error: keep };
  const registry = new ToolRegistry().register({
    name: 'note.save',
    inputSchema: z.object({ note: z.string() }),
    handler: () => 'saved',
  });
  const dispatcher = createDispatcher([
    otelTracing({ tracer: telemetry.tracer }),
    logging({ logger }),
    ...defaultStack({ registry }),
  ]);
  const outcome = await dispatcher.dispatchJson('note.save', '{"note": ssn 078-05-1120 for Jane Roe');
  await flush();
  // The model sent the text; its envelope keeps the excerpt so that it can fix the call.
  expect(outcome).toMatchObject({ ok: false, kind: 'schema' });
  expect((outcome as { message: string }).message).toContain('ssn 0');

  const [span] = telemetry.finished();
  expect(span?.status.code).toBe(SpanStatusCode.ERROR);
  expect(span?.status.message).not.toContain('ssn');
  expect(records.map((record) => record.event)).toEqual(['dispatch.failure']);
  expect(JSON.stringify(records)).not.toContain('ssn');
});
