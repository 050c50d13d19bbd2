// The secrets sweep: every built-in secret format, in a result, an error and the args, reaches no
// sink unredacted: the outcome, the model's text, the model copy and its spill, the events, the log
// records and the OTel spans.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createDispatcher,
  createRedactor,
  defaultStack,
  logging,
  memorySpillStore,
  outputGuard,
  ToolRegistry,
  toToolMessage,
  TransientError,
  type DispatchEvent,
  type LogRecord,
  type Outcome,
} from '../../index.js';
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

const all = Object.values(secrets).join(' ; ');

describe('the secrets sweep', () => {
  it('leaves zero matches in every sink', async () => {
    let flaky = 0;
    const registry = new ToolRegistry()
      .register({
        name: 'leak.result',
        inputSchema: z.object({ note: z.string() }),
        requiresApproval: false,
        handler: () => ({ env: all, padding: 'p'.repeat(5_000), tail: all }),
      })
      .register({
        name: 'leak.error',
        inputSchema: z.object({ note: z.string() }),
        handler: () => {
          throw new Error(`failed: ${all}`);
        },
      })
      .register({
        name: 'leak.flaky',
        inputSchema: z.object({ note: z.string() }),
        idempotent: true,
        handler: () => {
          flaky += 1;
          if (flaky === 1) throw new TransientError(`busy: ${all}`);
          return all;
        },
      });
    const events: DispatchEvent[] = [];
    const records: LogRecord[] = [];
    const logger = {
      debug: records.push.bind(records),
      info: records.push.bind(records),
      warn: records.push.bind(records),
      error: records.push.bind(records),
    };
    const spill = memorySpillStore();
    const dispatcher = createDispatcher(
      [
        otelTracing({ tracer: telemetry.tracer, recordArguments: true, recordResults: true }),
        logging({ logger, recordArguments: true }),
        ...defaultStack({
          registry,
          output: outputGuard({ maxChars: 1_000, spill }),
          retry: { baseDelayMs: 0, random: () => 0 },
        }),
      ],
      { redact: createRedactor(), onEvent: (event) => events.push(event) },
    );
    const outcomes: Outcome[] = [];
    for (const name of ['leak.result', 'leak.error', 'leak.flaky']) {
      outcomes.push(await dispatcher.dispatch(name, { note: all }));
    }
    expect(outcomes.map((outcome) => outcome.ok)).toEqual([true, false, true]);
    const handle = outcomes[0]?.ok ? outcomes[0].modelCopy?.handle : undefined;
    expect(handle).toBeDefined();
    const sinks = {
      outcomes: JSON.stringify(outcomes),
      modelText: outcomes.map((outcome) => toToolMessage(outcome)).join('\n'),
      spill: JSON.stringify(spill.get(handle ?? '')),
      events: JSON.stringify(events),
      eventErrors: events
        .map((event) => String((event as { error?: Error }).error?.message ?? ''))
        .join('\n'),
      logs: JSON.stringify(records),
      spans: JSON.stringify(
        telemetry
          .finished()
          .map((span) => ({ attributes: span.attributes, status: span.status, events: span.events })),
      ),
    };
    // The sweep would pass vacuously if a sink were empty: each holds the redaction markers.
    for (const [name, text] of Object.entries(sinks)) {
      if (name !== 'eventErrors') expect(text, name).toContain('[REDACTED:');
      for (const core of secretCores) expect(text, `${name} holds ${core}`).not.toContain(core);
    }
    expect(records.some((record) => 'cause' in record)).toBe(false);
  });
});
