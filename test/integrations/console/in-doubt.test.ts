import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createDispatcher,
  errorMapping,
  idempotency,
  OutcomeUnknownError,
  ToolRegistry,
  toolLookup,
  schemaValidation,
  type Receipt,
  type ReceiptStore,
  type ReconcileVerdict,
} from '../../../index.js';
import { memoryReceiptStore } from '../../../middleware/index.js';
import { inDoubtDesk } from '../../../integrations/console/in-doubt.js';
import { InDoubtActionError } from '../../../integrations/console/panes.js';
import { postgresReceiptStore } from '../../../integrations/postgres/index.js';
import { createTestDatabase, postgresSuitesEnabled, type TestDatabase } from '../../helpers/postgres.js';
import { secretCores, secrets } from '../../helpers/secrets.js';

afterEach(() => {
  vi.useRealTimers();
});

/** A refund tool whose handler loses its answer, and whose reconcile answers what the test sets. */
function refunds(verdict: () => ReconcileVerdict | Promise<ReconcileVerdict> = () => 'unknown') {
  const asked: Array<{ args: unknown; key: string | undefined; signal: AbortSignal }> = [];
  const registry = new ToolRegistry()
    .register({
      name: 'refund',
      description: 'refunds an order',
      inputSchema: z.object({ order: z.string(), apiKey: z.string() }),
      handler: () => {
        throw new OutcomeUnknownError('sent, no answer');
      },
      reconcile: (args, ctx) => {
        asked.push({ args, key: ctx.idempotencyKey, signal: ctx.signal });
        return verdict();
      },
    })
    .register({
      name: 'email',
      description: 'sends an email',
      inputSchema: z.object({ to: z.string() }),
      handler: () => {
        throw new OutcomeUnknownError('sent, no answer');
      },
    });
  return { registry, asked };
}

/** Leaves `key` in doubt through a real stack writing into `receipts`. */
async function leaveInDoubt(
  registry: ToolRegistry,
  receipts: ReceiptStore,
  tool: string,
  args: unknown,
  key: string,
): Promise<void> {
  const dispatcher = createDispatcher([
    errorMapping(),
    toolLookup(registry),
    schemaValidation(),
    idempotency({ receipts }),
  ]);
  const outcome = await dispatcher.dispatch(tool, args, { idempotencyKey: key });
  expect(outcome).toMatchObject({ ok: false, kind: 'outcome_unknown' });
}

function deskSuite(name: string, makeReceipts: () => ReceiptStore | Promise<ReceiptStore>) {
  describe(`inDoubtDesk over ${name}`, () => {
    it('lists an in-doubt call with its window and a redacted preview of its args', async () => {
      const receipts = await makeReceipts();
      const { registry } = refunds();
      await leaveInDoubt(
        registry,
        receipts,
        'refund',
        { order: 'o-1', apiKey: secrets.api_key },
        'refund-o-1',
      );
      await leaveInDoubt(registry, receipts, 'email', { to: 'a@example.com' }, 'email-1');
      const desk = inDoubtDesk({ receipts, registry });
      const items = await desk.list();
      const refund = items.find((item) => item.key === 'refund-o-1');
      expect(refund).toMatchObject({
        tool: 'refund',
        window: 'handler_unknown',
        attempts: 1,
        canReconcile: true,
      });
      expect(refund?.preview).toContain('"order":"o-1"');
      expect(items.find((item) => item.key === 'email-1')?.canReconcile).toBe(false);
      expect(await desk.list({ tool: 'email' })).toHaveLength(1);
      const stored = await receipts.get('refund-o-1');
      for (const core of secretCores) {
        expect(JSON.stringify(items)).not.toContain(core);
        expect(JSON.stringify(stored)).not.toContain(core);
      }
    });

    it('reconciles now: records committed as succeeded, and a second try finds it no longer in doubt', async () => {
      const receipts = await makeReceipts();
      let verdict: ReconcileVerdict = 'unknown';
      const { registry, asked } = refunds(() => verdict);
      await leaveInDoubt(registry, receipts, 'refund', { order: 'o-2', apiKey: 'plain' }, 'refund-o-2');
      verdict = { status: 'committed', evidence: { refundId: 'r-9', token: secrets.github_token } };
      asked.length = 0;
      const desk = inDoubtDesk({ receipts, registry });
      const [first, second] = await Promise.allSettled([
        desk.reconcile('refund-o-2', { by: 'ana' }),
        desk.reconcile('refund-o-2', { by: 'ben' }),
      ]);
      expect(first).toMatchObject({
        status: 'fulfilled',
        value: { status: 'succeeded', verdict: 'committed' },
      });
      expect(second).toMatchObject({ status: 'rejected', reason: { code: 'not_in_doubt' } });
      expect(asked).toHaveLength(1);
      expect(asked[0]?.args).toEqual({ order: 'o-2', apiKey: 'plain' });
      expect(asked[0]?.key).toBe('refund-o-2');
      expect(asked[0]?.signal).toBeInstanceOf(AbortSignal);
      const receipt = await receipts.get('refund-o-2');
      expect(receipt).toMatchObject({
        status: 'succeeded',
        settledBy: 'reconcile',
        evidence: { refundId: 'r-9' },
      });
      expect(JSON.stringify(receipt)).not.toContain(secretCores[4]);
      expect(JSON.stringify(first)).not.toContain(secretCores[4]);
      expect(await desk.list()).toEqual([]);
    });

    it('records not_committed as failed, and leaves unknown in doubt with the new evidence', async () => {
      const receipts = await makeReceipts();
      let verdict: ReconcileVerdict = { status: 'unknown', evidence: { looked: 'ledger' } };
      const { registry } = refunds(() => verdict);
      await leaveInDoubt(registry, receipts, 'refund', { order: 'o-3', apiKey: 'plain' }, 'refund-o-3');
      const desk = inDoubtDesk({ receipts, registry });
      await expect(desk.reconcile('refund-o-3', { by: 'ana' })).resolves.toEqual({
        status: 'in_doubt',
        verdict: 'unknown',
        evidence: { looked: 'ledger' },
      });
      expect((await desk.list())[0]?.evidence).toEqual({ looked: 'ledger' });
      verdict = 'not_committed';
      await expect(desk.reconcile('refund-o-3', { by: 'ana' })).resolves.toMatchObject({
        status: 'failed',
        verdict: 'not_committed',
      });
      expect(await receipts.get('refund-o-3')).toMatchObject({ status: 'failed', settledBy: 'reconcile' });
    });

    it('marks resolved by a person, with a redacted note, running nothing', async () => {
      const receipts = await makeReceipts();
      const { registry, asked } = refunds();
      await leaveInDoubt(registry, receipts, 'email', { to: 'a@example.com' }, 'email-2');
      const desk = inDoubtDesk({ receipts, registry });
      await expect(desk.reconcile('email-2', { by: 'ana' })).rejects.toMatchObject({ code: 'no_reconcile' });
      await expect(desk.resolve('email-2', { by: 'ana', note: ' ' })).rejects.toMatchObject({
        code: 'bad_input',
      });
      const resolution = await desk.resolve('email-2', {
        by: 'ana',
        note: `checked the outbox, ${secrets.slack_token}`,
      });
      expect(resolution).toEqual({ status: 'failed', verdict: 'resolved' });
      const receipt = await receipts.get('email-2');
      expect(receipt).toMatchObject({ status: 'failed', settledBy: 'person', resolution: { by: 'ana' } });
      expect(receipt?.resolution?.note).toContain('checked the outbox');
      expect(JSON.stringify(receipt)).not.toContain(secretCores[5]);
      await expect(desk.resolve('email-2', { by: 'ana', note: 'again' })).rejects.toMatchObject({
        code: 'not_in_doubt',
      });
      expect(asked).toEqual([]);
    });

    it('refuses an unknown key with not_found', async () => {
      const receipts = await makeReceipts();
      const desk = inDoubtDesk({ receipts, registry: refunds().registry });
      const refusal = await desk.reconcile('nope', { by: 'ana' }).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(InDoubtActionError);
      expect(refusal).toMatchObject({ code: 'not_found' });
      await expect(desk.resolve('nope', { by: 'ana', note: 'x' })).rejects.toMatchObject({
        code: 'not_found',
      });
    });
  });
}

deskSuite('the memory receipt store', () => memoryReceiptStore());

const postgres = await postgresSuitesEnabled('console in-doubt');
let database: TestDatabase | undefined;
beforeAll(async () => {
  if (postgres) database = await createTestDatabase('console_in_doubt');
});
afterAll(async () => {
  await database?.drop();
});
let tables = 0;
if (postgres) {
  deskSuite('PostgreSQL', async () => {
    const receipts = postgresReceiptStore(database?.pool as never, {
      createTable: true,
      table: `receipts_${++tables}`,
    });
    await receipts.ready();
    return receipts;
  });
}

describe('inDoubtDesk: reconcile under its timeout', () => {
  it('aborts a reconcile that does not answer within reconcileTimeoutMs and leaves the call in doubt', async () => {
    vi.useFakeTimers();
    const receipts = memoryReceiptStore();
    let seen: AbortSignal | undefined;
    const registry = new ToolRegistry().register({
      name: 'slow',
      description: 'reconciles slowly',
      inputSchema: z.object({}),
      reconcileTimeoutMs: 500,
      handler: () => 'ok',
      reconcile: (_args, ctx) => {
        seen = ctx.signal;
        return new Promise<ReconcileVerdict>(() => {});
      },
    });
    const receipt: Receipt = {
      key: 'k',
      tool: 'slow',
      status: 'in_doubt',
      attempts: 1,
      startedAt: 1,
      window: 'attempt_timeout',
    };
    receipts.record(receipt);
    const desk = inDoubtDesk({ receipts, registry });
    const answer = desk.reconcile('k', { by: 'ana' });
    await vi.advanceTimersByTimeAsync(500);
    await expect(answer).resolves.toMatchObject({ status: 'in_doubt', verdict: 'unknown' });
    expect(seen?.aborted).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('hands reconcile no args when the preview was cut', async () => {
    const receipts = memoryReceiptStore();
    const args: unknown[] = [];
    const registry = new ToolRegistry().register({
      name: 'big',
      description: 'big args',
      inputSchema: z.object({}),
      handler: () => 'ok',
      reconcile: (given) => {
        args.push(given);
        return 'committed';
      },
    });
    receipts.record({
      key: 'k',
      tool: 'big',
      status: 'in_doubt',
      attempts: 1,
      startedAt: 1,
      preview: '{"a":"xx…[truncated]',
    });
    await inDoubtDesk({ receipts, registry }).reconcile('k', { by: 'ana' });
    expect(args).toEqual([undefined]);
  });

  it('rejects bad options naming them', () => {
    expect(() => inDoubtDesk({} as never)).toThrow(/receipts/);
    expect(() => inDoubtDesk({ receipts: memoryReceiptStore(), registry: 1 as never })).toThrow(/registry/);
    expect(() => inDoubtDesk({ receipts: memoryReceiptStore(), limits: 3 } as never)).toThrow(/limit/);
  });
});
