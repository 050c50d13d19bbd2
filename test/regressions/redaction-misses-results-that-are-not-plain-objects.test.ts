// Issue 31, item 2: a result that was not a plain object (a Map, an Error, a URL, a class
// instance) was returned as it was by the redactor, so its secrets reached the model's text, the
// spill and the span attributes. Each shape now carries secrets into every sink, and none leaks.

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
  type DispatchEvent,
  type LogRecord,
} from '../../index.js';
import { otelTracing } from '../../integrations/otel/index.js';
import { toJsonSafe } from '../../src/json-safe.js';
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
// Long enough for the output guard to cut (and spill) whatever renders it.
const padding = 'p'.repeat(2_000);

class Credentials {
  readonly kind = 'service-account';
  constructor(
    readonly token: string,
    readonly padding: string,
  ) {}
  describe(): string {
    return this.kind;
  }
}

const shapes: Record<string, () => unknown> = {
  map: () =>
    new Map<unknown, unknown>([
      ['env', all],
      [`key ${secrets.api_key}`, { padding }],
    ]),
  set: () => new Set([all, padding]),
  error: () => Object.assign(new Error(`failed: ${all}`), { detail: all, padding }),
  url: () =>
    new URL(`https://ci:${'pw'.repeat(4)}@api.example.com/v1?token=${secrets.github_token}&pad=${padding}`),
  instance: () => new Credentials(all, padding),
  'nested instance': () => ({ items: [new Credentials(all, padding)], at: new Date(0) }),
};

describe('redaction of results that are not plain objects', () => {
  it('redacts secrets in a Map, Set, Error, URL or class instance result in every sink', async () => {
    let registry = new ToolRegistry();
    for (const [name, make] of Object.entries(shapes)) {
      registry = registry.register({
        name: `leak.${name.replace(' ', '_')}`,
        inputSchema: z.object({}),
        handler: make,
      });
    }
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
        ...defaultStack({ registry, output: outputGuard({ maxChars: 1_000, spill }) }),
      ],
      { redact: createRedactor(), onEvent: (event) => events.push(event) },
    );
    const sinks: Record<string, string> = {};
    for (const name of Object.keys(shapes)) {
      const outcome = await dispatcher.dispatch(`leak.${name.replace(' ', '_')}`, {});
      expect(outcome.ok, name).toBe(true);
      if (!outcome.ok) continue;
      sinks[`${name}: model text`] = toToolMessage(outcome, { maxLength: Infinity });
      sinks[`${name}: toJsonSafe`] = JSON.stringify(toJsonSafe(outcome.result));
      sinks[`${name}: JSON.stringify`] = JSON.stringify(outcome.result) ?? '';
      const handle = outcome.modelCopy?.handle;
      if (handle !== undefined) {
        const spilled = spill.get(handle);
        sinks[`${name}: spill`] = `${JSON.stringify(spilled)} ${JSON.stringify(toJsonSafe(spilled))}`;
      }
    }
    sinks.spans = JSON.stringify(
      telemetry
        .finished()
        .map((span) => ({ attributes: span.attributes, status: span.status, events: span.events })),
    );
    sinks.events = JSON.stringify(events);
    sinks.logs = JSON.stringify(records);
    // Every shape that renders long enough was cut and spilled, so the spill sink is not vacuous.
    expect(Object.keys(sinks).filter((name) => name.endsWith(': spill')).length).toBeGreaterThanOrEqual(4);
    for (const [name, text] of Object.entries(sinks)) {
      for (const core of [...secretCores, 'pwpwpwpw'])
        expect(text, `${name} holds ${core}`).not.toContain(core);
    }
    expect(sinks['map: model text']).toContain('[REDACTED:');
    expect(sinks['url: model text']).toContain('[REDACTED:url_password]');
  });
});
