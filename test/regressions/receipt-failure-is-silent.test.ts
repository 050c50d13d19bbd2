// Regression (issue 31, item 15): a receipt that could not be written vanished without a word
// (no event, no log line, no span event), and a store with `createTable` that could not reach
// PostgreSQL said nothing until a keyed call's receipt was lost.

import pg from 'pg';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, logging, ToolRegistry, type LogRecord } from '../../index.js';
import { otelTracing } from '../../integrations/otel/index.js';
import { postgresReceiptStore } from '../../integrations/postgres/index.js';
import { freePort } from '../helpers/free-port.js';
import { installTelemetry, type Telemetry } from '../integrations/otel/harness.js';

let telemetry: Telemetry;
let pool: pg.Pool;
let port: number;
beforeAll(async () => {
  telemetry = installTelemetry();
  // Nobody listens on this port: every statement fails to connect.
  port = await freePort();
  pool = new pg.Pool({ host: '127.0.0.1', port, user: 'postgres', connectionTimeoutMillis: 2_000 });
  pool.on('error', () => {});
});
afterEach(() => telemetry.reset());
afterAll(async () => {
  await pool.end();
  await telemetry.shutdown();
});

function collector() {
  const records: LogRecord[] = [];
  const write = (record: LogRecord) => {
    records.push(record);
  };
  return { records, logger: { debug: write, info: write, warn: write, error: write } };
}

it('says receipt.failed in the log and the span when a receipt cannot be written, and the call still succeeds', async () => {
  const receipts = postgresReceiptStore(pool);
  const registry = new ToolRegistry().register({
    name: 'payments.charge',
    inputSchema: z.object({ amount: z.number() }),
    handler: () => ({ id: 'ch_1' }),
  });
  const { records, logger } = collector();
  const dispatcher = createDispatcher([
    otelTracing({ tracer: telemetry.tracer }),
    logging({ logger }),
    ...defaultStack({ registry, idempotency: { receipts } }),
  ]);
  const outcome = await dispatcher.dispatch('payments.charge', { amount: 5 }, { idempotencyKey: 'order-1' });
  expect(outcome).toMatchObject({ ok: true, result: { id: 'ch_1' } });
  const failed = records.find((record) => record.event === 'receipt.failed');
  expect(failed).toMatchObject({
    event: 'receipt.failed',
    key: 'order-1',
    receiptStatus: 'succeeded',
    kind: 'store_unavailable',
    message: expect.stringMatching(/PostgreSQL receipt store failed \(ECONNREFUSED\)/),
  });
  const [span] = telemetry.finished();
  const event = span?.events.find((each) => each.name === 'tool_dispatcher.receipt.failed');
  expect(event?.attributes).toMatchObject({
    'tool_dispatcher.receipt.status': 'succeeded',
    'error.type': 'store_unavailable',
  });
});

it('rejects ready() at start-up with an error naming the table and the connection that failed', async () => {
  const receipts = postgresReceiptStore(pool, { createTable: true });
  const failure = await receipts.ready().then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(failure).toMatchObject({ kind: 'store_unavailable' });
  expect((failure as Error).message).toMatch(
    /could not create its table "tool_dispatcher_receipts".*ECONNREFUSED/,
  );
  expect((failure as Error).message).toContain(String(port));
});
