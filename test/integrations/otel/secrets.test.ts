// Every failure kind, dispatched with a secret idempotency key and secret argument text: neither
// may reach a span, a metric or a log line unless recording arguments is on (the key: never).

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  circuitBreaker,
  createDispatcher,
  defaultStack,
  DispatchError,
  logging,
  ToolError,
  ToolRegistry,
  TransientError,
  type IdempotencyClaim,
  type IdempotencyStore,
  type LogRecord,
  type Middleware,
  type Outcome,
} from '../../../index.js';
import { otelMetrics, otelTracing } from '../../../integrations/otel/index.js';
import { flush } from '../../helpers/gate.js';
import { installTelemetry, manualClock, type Telemetry } from './harness.js';

let telemetry: Telemetry;
beforeAll(() => {
  telemetry = installTelemetry();
});
afterAll(async () => {
  await telemetry.shutdown();
});
beforeEach(() => telemetry.reset());

const key = 'idem-7f3a9c2e-5b1d-4e8a-9c1f';
const ssn = '078-05-1120';
const text = `ssn ${ssn} for Jane Roe`;
// A JSON parser quotes about ten characters around where it failed: the start of the number.
const argumentSecrets = [ssn.slice(0, 6), 'Jane Roe'];
const note = z.object({ note: z.string() });
const clock = manualClock();

function registry(): ToolRegistry {
  return new ToolRegistry()
    .register({ name: 'note.echo', inputSchema: note, handler: () => 'saved' })
    .register({
      name: 'note.check',
      // A validator that quotes the value it rejects, as valibot's messages do.
      inputSchema: z.object({
        note: z.string().refine(() => false, { error: (issue) => `Not allowed: ${String(issue.input)}` }),
      }),
      handler: () => 'saved',
    })
    .register({
      name: 'note.parse',
      inputSchema: note,
      handler: ({ note }) => JSON.parse(note) as unknown,
    })
    .register({
      name: 'note.remote',
      inputSchema: note,
      handler: ({ note }) => {
        throw new ToolError(`The remote tool rejected note ${note}`, { kind: 'schema' });
      },
    })
    .register({
      name: 'note.flaky',
      inputSchema: note,
      handler: () => {
        throw new TransientError('upstream busy');
      },
    })
    .register({
      name: 'note.declined',
      inputSchema: note,
      handler: () => {
        throw new ToolError('The note was declined');
      },
    })
    .register({
      name: 'note.slow',
      inputSchema: note,
      timeoutMs: 50,
      handler: (_args, ctx) =>
        new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve('late'))),
    });
}

/** An idempotency store whose every claim answers `claim(key)`. */
function storeAnswering(claim: (key: string) => IdempotencyClaim): IdempotencyStore {
  return {
    claim: (claimed) => claim(claimed),
    renew: () => true,
    complete: () => ({ kind: 'stored' }),
    release: () => undefined,
    changed: () => undefined,
  };
}

/** A layer in front of the stack that fails every call with `kind`, quoting the key. */
function failingWith(kind: string): Middleware {
  return async function failing(ctx) {
    throw new DispatchError(kind, `${kind} for key "${String(ctx.options.idempotencyKey)}"`);
  };
}

interface Setup {
  store?: IdempotencyStore;
  front?: Middleware;
  breaker?: Middleware;
  recordArguments?: boolean;
}

function setup(options: Setup = {}) {
  const records: LogRecord[] = [];
  const keep = (record: LogRecord) => records.push(record);
  const layers = defaultStack({
    registry: registry(),
    retry: { clock, random: () => 0, maxAttempts: 2 },
    timeout: { clock },
    ...(options.store === undefined ? {} : { idempotency: { store: options.store } }),
  });
  if (options.breaker !== undefined) {
    layers.splice(
      layers.findIndex((layer) => layer.name === 'concurrencyLimit'),
      0,
      options.breaker,
    );
  }
  const recordArguments = options.recordArguments ?? false;
  const dispatcher = createDispatcher([
    otelTracing({ tracer: telemetry.tracer, recordArguments }),
    otelMetrics({ meter: telemetry.meterProvider.getMeter('tool-dispatcher') }),
    logging({ logger: { debug: keep, info: keep, warn: keep, error: keep }, recordArguments }),
    ...(options.front === undefined ? [] : [options.front]),
    ...layers,
  ]);
  return { dispatcher, records };
}

type Dispatcher = ReturnType<typeof setup>['dispatcher'];

/** Runs a call to its outcome, firing the retry and timeout timers it sets. */
async function settle(pending: Promise<Outcome>): Promise<Outcome> {
  let outcome: Outcome | undefined;
  void pending.then((settled) => (outcome = settled));
  for (let round = 0; round < 10 && outcome === undefined; round++) {
    await flush();
    clock.fire();
  }
  return pending;
}

const keyed = { idempotencyKey: key };
const call = (dispatcher: Dispatcher, tool: string) =>
  settle(dispatcher.dispatch(tool, { note: text }, keyed));

interface Case {
  name: string;
  kind: string;
  setup?: Setup;
  run: (dispatcher: Dispatcher) => Promise<Outcome>;
}

const cases: Case[] = [
  { name: 'a success', kind: 'ok', run: (d) => call(d, 'note.echo') },
  { name: 'an unknown tool', kind: 'not_found', run: (d) => call(d, 'note.ghost') },
  {
    name: 'malformed JSON arguments',
    kind: 'schema',
    run: (d) => settle(d.dispatchJson('note.echo', `{"note": ${text}`, keyed)),
  },
  { name: 'a validator quoting the value', kind: 'schema', run: (d) => call(d, 'note.check') },
  { name: 'a remote schema rejection', kind: 'schema', run: (d) => call(d, 'note.remote') },
  { name: 'a handler parsing an argument', kind: 'internal', run: (d) => call(d, 'note.parse') },
  { name: 'retried transient failures', kind: 'transient', run: (d) => call(d, 'note.flaky') },
  { name: 'a tool error', kind: 'tool_error', run: (d) => call(d, 'note.declined') },
  { name: 'a timeout', kind: 'timeout', run: (d) => call(d, 'note.slow') },
  {
    name: 'a spent budget',
    kind: 'budget_exceeded',
    run: (d) => settle(d.dispatch('note.echo', { note: text }, { ...keyed, budget: 0 })),
  },
  {
    name: 'an open circuit',
    kind: 'circuit_open',
    setup: { breaker: circuitBreaker({ failureThreshold: 1, cooldownMs: 60_000 }) },
    run: async (d) => {
      await call(d, 'note.parse');
      return call(d, 'note.parse');
    },
  },
  {
    name: 'a caller abort',
    kind: 'cancelled',
    run: async (d) => {
      const controller = new AbortController();
      const pending = d.dispatch('note.slow', { note: text }, { ...keyed, signal: controller.signal });
      await flush();
      controller.abort();
      return pending;
    },
  },
  {
    name: 'a key reused with other arguments',
    kind: 'idempotency_conflict',
    run: async (d) => {
      await call(d, 'note.echo');
      return settle(d.dispatch('note.echo', { note: `${text}, again` }, keyed));
    },
  },
  {
    name: 'a stored result that cannot be shared',
    kind: 'idempotency_result_unavailable',
    setup: { store: storeAnswering(() => ({ kind: 'unshareable', reason: 'too big', expiresInMs: 1 })) },
    run: (d) => call(d, 'note.echo'),
  },
  {
    name: 'a store error quoting the key',
    kind: 'store_unavailable',
    setup: {
      store: storeAnswering((claimed) => {
        throw new Error(`no claim for ${claimed}`);
      }),
    },
    run: (d) => call(d, 'note.echo'),
  },
  {
    name: 'a lost lease',
    kind: 'lease_lost',
    setup: { front: failingWith('lease_lost') },
    run: (d) => call(d, 'note.echo'),
  },
  {
    name: "a custom layer's kind quoting the key",
    kind: 'rate_limited',
    setup: { front: failingWith('rate_limited') },
    run: (d) => call(d, 'note.echo'),
  },
];

/** Everything the SDK holds for the finished spans: names, attributes, events, links, status. */
function recordedSpans(): string {
  return JSON.stringify(
    telemetry.finished().map(({ name, attributes, events, links, status }) => ({
      name,
      attributes,
      events: events.map((event) => [event.name, event.attributes]),
      links: links.map((link) => link.attributes),
      status,
    })),
  );
}

async function recordedMetrics(): Promise<string> {
  const data = await telemetry.collect();
  return JSON.stringify(
    [...data.values()].map((metric) => [
      metric.descriptor,
      metric.dataPoints.map((point) => point.attributes),
    ]),
  );
}

describe('telemetry never records the idempotency key or argument text', () => {
  it.each(cases)('for $name ($kind)', async ({ kind, setup: options, run }) => {
    const { dispatcher, records } = setup(options);
    const outcome = await run(dispatcher);
    await flush();
    expect(outcome.ok ? 'ok' : outcome.kind).toBe(kind);
    expect(telemetry.finished().length).toBeGreaterThan(0);

    const spans = recordedSpans();
    const points = await recordedMetrics();
    // Log records carry the key by design (`idempotency.hit` has it); never argument text.
    const lines = JSON.stringify(records);
    expect(records.length).toBeGreaterThan(0);
    for (const secret of [key, ...argumentSecrets]) {
      expect(spans).not.toContain(secret);
      expect(points).not.toContain(secret);
    }
    for (const secret of argumentSecrets) expect(lines).not.toContain(secret);
  });
});

describe('with recordArguments', () => {
  it('records the messages that quote the arguments, and still never the key', async () => {
    const { dispatcher, records } = setup({ recordArguments: true });
    await settle(dispatcher.dispatchJson('note.echo', `{"note": ${text}`, keyed));
    await call(dispatcher, 'note.check');
    await call(dispatcher, 'note.echo');
    await settle(dispatcher.dispatch('note.echo', { note: 'other' }, keyed));
    await flush();

    const statuses = telemetry.finished().map((span) => span.status.message ?? '');
    expect(statuses[0]).toContain('is not valid JSON');
    expect(statuses[1]).toContain(`Not allowed: ${text}`);
    expect(statuses[3]).toBe('The idempotency key was already used for a different tool or different args');
    expect(recordedSpans()).not.toContain(key);
    const failures = records.filter((record) => record.event === 'dispatch.failure');
    expect(failures.map((record) => record.message)).toEqual([
      expect.stringContaining('is not valid JSON'),
      expect.stringContaining(`Not allowed: ${text}`),
      expect.stringContaining('was already used'),
    ]);
  });
});
