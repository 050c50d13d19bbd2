// With no SDK registered, otelTracing() steps aside at no cost; a provider registered later is
// used from the next call on. Its own file: it needs the API's global state untouched at first.

import { trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../../../index.js';
import { otelTracing } from '../../../integrations/otel/index.js';

afterAll(() => trace.disable());

it('runs calls without an SDK, then traces them once a provider is registered', async () => {
  const registry = new ToolRegistry().register({
    name: 'kv.get',
    inputSchema: z.object({}),
    handler: () => 2,
  });
  const dispatcher = createDispatcher([otelTracing(), ...defaultStack({ registry })]);
  await expect(dispatcher.dispatch('kv.get', {})).resolves.toEqual({ ok: true, result: 2, attempts: 1 });

  const exporter = new InMemorySpanExporter();
  trace.setGlobalTracerProvider(
    new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
  );
  await expect(dispatcher.dispatch('kv.get', {})).resolves.toEqual({ ok: true, result: 2, attempts: 1 });
  expect(exporter.getFinishedSpans().map((span) => span.name)).toEqual(['execute_tool kv.get']);
});
