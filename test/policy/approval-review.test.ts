// The reviewer's side of the approval gate for a console: a redacted, capped preview of the args
// in the store, decisions with who and through which channel, audited once each, heard as
// `approval.decided`, and edit-then-approve (validated, fingerprinted anew, run once).

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  approvalGate,
  createDispatcher,
  createRedactor,
  defaultStack,
  memoryApprovalStore,
  ToolRegistry,
  type ApprovalDecidedEvent,
  type ApprovalGateOptions,
  type Outcome,
} from '../../index.js';
import { secretCores, secrets } from '../helpers/secrets.js';

function setup(gate: Omit<ApprovalGateOptions, 'registry'> = {}, redact = false) {
  const runs: unknown[] = [];
  const registry = new ToolRegistry().register({
    name: 'payments.refund',
    inputSchema: z.object({ amount: z.number().max(1_000), note: z.string().optional() }),
    requiresApproval: true,
    handler: async (args) => {
      runs.push(args);
      return { refunded: args.amount };
    },
  });
  const store = memoryApprovalStore();
  const approvals = approvalGate({ registry, store, ...gate });
  const dispatcher = createDispatcher(
    defaultStack({ registry, approval: approvals }),
    redact ? { redact: createRedactor() } : {},
  );
  return { gate: approvals, store, dispatcher, runs };
}

const tokenOf = (outcome: Outcome) => {
  if (outcome.ok || outcome.approval === undefined)
    throw new Error(`expected approval_required, got ${JSON.stringify(outcome)}`);
  return outcome.approval.token;
};

describe('the approval gate for a reviewer', () => {
  it('stores a preview of the validated args, redacted before it is written, with the tenant', async () => {
    for (const redact of [false, true]) {
      const { store, dispatcher } = setup({}, redact);
      const note = `key ${secrets.api_key} and ${secrets.private_key}`;
      const token = tokenOf(
        await dispatcher.dispatch('payments.refund', { amount: 5, note }, { tenant: 'acme', callId: 'c-1' }),
      );
      const record = await store.get(token);
      expect(record).toMatchObject({ tenant: 'acme', callId: 'c-1', status: 'pending' });
      const preview = JSON.parse(record?.preview as string) as { amount: number; note: string };
      expect(preview.amount).toBe(5);
      expect(preview.note).toContain('[REDACTED:');
      const listed = JSON.stringify(await store.list?.());
      for (const core of secretCores) {
        expect(JSON.stringify(record)).not.toContain(core);
        expect(listed).not.toContain(core);
      }
    }
  });

  it('caps the preview at previewChars, and keeps none at 0', async () => {
    const capped = setup({ previewChars: 40 });
    const token = tokenOf(
      await capped.dispatcher.dispatch('payments.refund', { amount: 5, note: 'x'.repeat(500) }),
    );
    const preview = (await capped.store.get(token))?.preview as string;
    expect(preview).toHaveLength(40);
    expect(preview.endsWith('…[truncated]')).toBe(true);
    const none = setup({ previewChars: 0 });
    const unseen = tokenOf(await none.dispatcher.dispatch('payments.refund', { amount: 5 }));
    expect((await none.store.get(unseen))?.preview).toBeUndefined();
    expect(() => setup({ previewChars: -1 })).toThrow(/previewChars/);
    expect(() => setup({ redact: {} as never })).toThrow(/redact/);
  });

  it('audits each decision once with who and the channel, and tells subscribers', async () => {
    const { gate, store, dispatcher } = setup();
    const heard: ApprovalDecidedEvent[] = [];
    const stop = gate.subscribe((decided) => heard.push(decided));
    const one = tokenOf(await dispatcher.dispatch('payments.refund', { amount: 1 }, { callId: 'c-1' }));
    const two = tokenOf(await dispatcher.dispatch('payments.refund', { amount: 2 }, { callId: 'c-2' }));
    expect((await store.list?.())?.items.map((record) => record.token)).toEqual([one, two]);
    expect(await gate.approve(one, { by: 'ana', channel: 'console' })).toBe(true);
    expect(await gate.approve(one, { by: 'ana', channel: 'console' })).toBe(true);
    expect(await gate.deny(two, `no: ${secrets.api_key}`, { by: 'bo', channel: 'host' })).toBe(true);
    expect(await gate.approve(two)).toBe(false);
    expect((await store.list?.())?.items).toEqual([]);
    const log = (await store.audit?.())?.items ?? [];
    expect(log.map(({ token, decision, by, channel }) => ({ token, decision, by, channel }))).toEqual([
      { token: one, decision: 'approved', by: 'ana', channel: 'console' },
      { token: two, decision: 'denied', by: 'bo', channel: 'host' },
    ]);
    expect(log[1]?.reason).toBe('no: [REDACTED:api_key]');
    expect(heard.map((event) => [event.type, event.token, event.decision])).toEqual([
      ['approval.decided', one, 'approved'],
      ['approval.decided', two, 'denied'],
    ]);
    stop();
    await expect(gate.approve(one, { by: 'ana', channel: '' })).rejects.toThrow(/channel/);
    await expect(gate.approve(one, { who: 'ana' } as never)).rejects.toThrow(/who/);
  });

  it('runs edited args once on an edit-then-approve, and never the original ones', async () => {
    const { gate, store, dispatcher, runs } = setup();
    const token = tokenOf(
      await dispatcher.dispatch('payments.refund', { amount: 900 }, { idempotencyKey: 'r-1' }),
    );
    const invalid = gate.approve(token, { by: 'ana', channel: 'console', args: { amount: 5_000 } });
    await expect(invalid).rejects.toMatchObject({ kind: 'schema' });
    expect((await store.get(token))?.status).toBe('pending');
    expect(await gate.approve(token, { by: 'ana', channel: 'console', args: { amount: 90 } })).toBe(true);
    // Sent again (a double click), it stands; a plain approval does not stand for the original args.
    expect(await gate.approve(token, { by: 'ana', args: { amount: 90 } })).toBe(true);
    expect(await gate.approve(token, { by: 'ana' })).toBe(false);
    const original = await dispatcher.dispatch(
      'payments.refund',
      { amount: 900 },
      { idempotencyKey: 'r-1', approval: token },
    );
    expect(original.ok === false && [original.kind, original.message]).toEqual([
      'idempotency_conflict',
      expect.stringContaining('edited args'),
    ]);
    const edited = await dispatcher.dispatch(
      'payments.refund',
      { amount: 90 },
      { idempotencyKey: 'r-1', approval: token },
    );
    expect(edited).toMatchObject({ ok: true, result: { refunded: 90 }, attempts: 1 });
    const again = await dispatcher.dispatch(
      'payments.refund',
      { amount: 90 },
      { idempotencyKey: 'r-1', approval: token },
    );
    expect(again).toMatchObject({ ok: true, result: { refunded: 90 }, attempts: 0 });
    expect(runs).toEqual([{ amount: 90 }]);
    const [audited] = (await store.audit?.({ token }))?.items ?? [];
    expect(audited).toMatchObject({ decision: 'edited', by: 'ana', channel: 'console' });
    expect(audited?.fingerprint).not.toBe(audited?.editedFrom);
    expect(JSON.parse((await store.get(token))?.preview as string)).toEqual({ amount: 90 });
  });

  it('refuses edit-then-approve without a registry or on a store that takes no edits', async () => {
    const { store, dispatcher } = setup();
    const token = tokenOf(await dispatcher.dispatch('payments.refund', { amount: 9 }));
    await expect(approvalGate({ store }).approve(token, { args: { amount: 1 } })).rejects.toThrow(/registry/);
    const registry = new ToolRegistry();
    const plain = {
      open: store.open.bind(store),
      get: store.get.bind(store),
      answer: store.answer.bind(store),
    };
    await expect(
      approvalGate({ registry, store: plain }).approve(token, { args: { amount: 1 } }),
    ).rejects.toThrow(/edits/);
    expect((await store.get(token))?.status).toBe('pending');
  });
});

describe('gate.subscribe over a store that publishes nothing', () => {
  it('hears the decisions made through this gate', async () => {
    const inner = memoryApprovalStore();
    const plain = {
      open: inner.open.bind(inner),
      get: inner.get.bind(inner),
      answer: inner.answer.bind(inner),
    };
    const registry = new ToolRegistry().register({
      name: 't',
      inputSchema: z.object({}),
      requiresApproval: true,
      handler: async () => 'ran',
    });
    const gate = approvalGate({ registry, store: plain });
    const dispatcher = createDispatcher(defaultStack({ registry, approval: gate }));
    const heard: ApprovalDecidedEvent[] = [];
    gate.subscribe((decided) => heard.push(decided));
    const token = tokenOf(await dispatcher.dispatch('t', {}));
    expect(await gate.deny(token, 'no', { by: 'bo', channel: 'console' })).toBe(true);
    expect(heard).toMatchObject([{ type: 'approval.decided', token, decision: 'denied', reason: 'no' }]);
  });
});
