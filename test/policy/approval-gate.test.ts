// The approval gate: rule order, tokens bound to the call, one request per call, exactly once, deny final, fail closed, shadow.

import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  approvalGate,
  createBudget,
  createDispatcher,
  defaultStack,
  memoryApprovalStore,
  ToolRegistry,
  toToolMessage,
  type ApprovalGateOptions,
  type ApprovalStore,
  type DispatchEvent,
  type Outcome,
  type ToolAnnotations,
  type ToolDefinition,
} from '../../index.js';
import type { StandardSchemaV1 } from '../../src/standard-schema.js';

const refundArgs = z.object({ amount: z.number() });

interface Setup {
  requiresApproval?: ToolDefinition<typeof refundArgs>['requiresApproval'];
  annotations?: ToolAnnotations;
  gate?: Omit<ApprovalGateOptions, 'registry'>;
  handler?: () => unknown;
}

function setup(options: Setup = {}) {
  let runs = 0;
  const registry = new ToolRegistry().register({
    name: 'payments.refund',
    inputSchema: refundArgs,
    ...(options.requiresApproval === undefined ? {} : { requiresApproval: options.requiresApproval }),
    ...(options.annotations === undefined ? {} : { annotations: options.annotations }),
    handler: async ({ amount }) => {
      runs += 1;
      return options.handler === undefined ? { refunded: amount } : options.handler();
    },
  });
  const gate = approvalGate({ registry, ...options.gate });
  const events: DispatchEvent[] = [];
  const dispatcher = createDispatcher(defaultStack({ registry, approval: gate }), {
    onEvent: (event) => events.push(event),
  });
  return { registry, gate, dispatcher, events, runs: () => runs };
}

function failure(outcome: Outcome) {
  if (outcome.ok) throw new Error('expected a failure');
  return outcome;
}

function tokenOf(outcome: Outcome): string {
  const token = failure(outcome).approval?.token;
  if (token === undefined) throw new Error(`expected approval_required, got ${failure(outcome).kind}`);
  return token;
}

const ofType = (events: DispatchEvent[], type: string) => events.filter((event) => event.type === type);

afterEach(() => {
  vi.useRealTimers();
});

describe('approvalGate rule order', () => {
  it.each([
    [
      'decide beats everything',
      {
        gate: {
          overrides: { 'payments.refund': false },
          decide: () => ({ action: 'require' as const, reason: 'policy' }),
        },
      },
      'require',
      'decide',
    ],
    [
      'an override beats the tool and its hints',
      { requiresApproval: true, gate: { overrides: { 'payments.refund': false } } },
      'allow',
      'override',
    ],
    [
      'requiresApproval beats the hints',
      { requiresApproval: false, annotations: { destructiveHint: true } },
      'allow',
      'tool',
    ],
    [
      'a function of the args',
      { requiresApproval: (args: { amount: number }) => args.amount > 100 },
      'require',
      'tool',
    ],
    ['readOnlyHint allows', { annotations: { readOnlyHint: true } }, 'allow', 'annotations'],
    ['destructiveHint false allows', { annotations: { destructiveHint: false } }, 'allow', 'annotations'],
    ['other hints require', { annotations: { openWorldHint: true } }, 'require', 'annotations'],
    ['nothing falls back to require', {}, 'require', 'fallback'],
    ['a fallback of allow', { gate: { fallback: 'allow' as const } }, 'allow', 'fallback'],
  ] satisfies [string, Setup, string, string][])('%s', async (_name, options, action, source) => {
    const { gate } = setup(options);
    expect(await gate.evaluate('payments.refund', { amount: 500 }, { callId: 'c-1' })).toMatchObject({
      action,
      source,
      enforced: true,
    });
  });

  it('gives decide the default verdict', async () => {
    const decide = vi.fn((_call, byDefault) => byDefault);
    const { gate } = setup({ requiresApproval: true, gate: { decide } });
    expect((await gate.evaluate('payments.refund', { amount: 1 })).source).toBe('tool');
    expect(decide.mock.calls[0]?.[1]).toMatchObject({ action: 'require', source: 'tool' });
  });
});

describe('approvalGate in a dispatch', () => {
  it('pauses a call with a token the model never sees, then runs it once approved', async () => {
    const { gate, dispatcher, events, runs } = setup({ requiresApproval: true });
    const paused = failure(await dispatcher.dispatch('payments.refund', { amount: 5 }, { callId: 'c-1' }));
    expect([paused.kind, paused.attempts, paused.jsonrpcCode]).toEqual(['approval_required', 0, -32603]);
    const token = tokenOf(paused);
    expect(paused.approval).toMatchObject({
      tool: 'payments.refund',
      callId: 'c-1',
      reason: expect.any(String),
    });
    expect(paused.toJSON().approval?.token).toBe(token);
    expect(paused.message).not.toContain(token);
    expect(toToolMessage(paused)).not.toContain(token);
    expect(toToolMessage(paused)).toMatch(/approval/);
    expect(await gate.approve(token, { by: 'ana' })).toBe(true);
    const done = await dispatcher.dispatch('payments.refund', { amount: 5 }, { approval: token });
    expect(done).toMatchObject({ ok: true, result: { refunded: 5 } });
    expect(runs()).toBe(1);
    expect(ofType(events, 'approval.required')).toHaveLength(1);
    expect(ofType(events, 'approval.decision').map((event) => [event.action, event.source])).toEqual([
      ['require', 'tool'],
      ['allow', 'token'],
    ]);
  });

  it('returns the pending token to a call sent again, and gives N calls in a batch N tokens', async () => {
    const { dispatcher, events } = setup({ requiresApproval: true });
    const first = tokenOf(await dispatcher.dispatch('payments.refund', { amount: 5 }, { callId: 'c-1' }));
    const again = tokenOf(await dispatcher.dispatch('payments.refund', { amount: 5 }, { callId: 'c-1' }));
    expect(again).toBe(first);
    const keyed = tokenOf(
      await dispatcher.dispatch('payments.refund', { amount: 5 }, { idempotencyKey: 'k' }),
    );
    expect(
      tokenOf(await dispatcher.dispatch('payments.refund', { amount: 5 }, { idempotencyKey: 'k' })),
    ).toBe(keyed);
    expect(ofType(events, 'approval.required')).toHaveLength(2);
    const batch = await dispatcher.gatherBounded(
      Array.from({ length: 4 }, () => ({ name: 'payments.refund', args: { amount: 5 } })),
    );
    expect(new Set(batch.map(tokenOf)).size).toBe(4);
  });

  it('runs an approved token delivered twice at once, or later, exactly once', async () => {
    let release = () => {};
    const { gate, dispatcher, runs } = setup({
      requiresApproval: true,
      handler: () => new Promise((resolve) => (release = () => resolve('done'))),
    });
    const token = tokenOf(await dispatcher.dispatch('payments.refund', { amount: 5 }));
    await gate.approve(token);
    const both = Promise.all([
      dispatcher.dispatch('payments.refund', { amount: 5 }, { approval: token }),
      dispatcher.dispatch('payments.refund', { amount: 5 }, { approval: token }),
    ]);
    await vi.waitFor(() => expect(runs()).toBe(1));
    release();
    expect((await both).map((outcome) => outcome.ok && outcome.result)).toEqual(['done', 'done']);
    const later = await dispatcher.dispatch('payments.refund', { amount: 5 }, { approval: token });
    expect(later).toMatchObject({ ok: true, result: 'done', attempts: 0 });
    expect(runs()).toBe(1);
  });

  it('refuses a token for other args, another tool or another key with idempotency_conflict', async () => {
    const { gate, dispatcher, registry } = setup({ requiresApproval: true });
    registry.register({
      name: 'payments.other',
      inputSchema: refundArgs,
      requiresApproval: true,
      handler: () => 1,
    });
    const token = tokenOf(
      await dispatcher.dispatch('payments.refund', { amount: 5 }, { idempotencyKey: 'k-1' }),
    );
    await gate.approve(token);
    const tries = [
      dispatcher.dispatch('payments.refund', { amount: 6 }, { idempotencyKey: 'k-1', approval: token }),
      dispatcher.dispatch('payments.other', { amount: 5 }, { idempotencyKey: 'k-1', approval: token }),
      dispatcher.dispatch('payments.refund', { amount: 5 }, { idempotencyKey: 'k-2', approval: token }),
      dispatcher.dispatch('payments.refund', { amount: 5 }, { approval: token }),
    ];
    for (const outcome of await Promise.all(tries))
      expect(failure(outcome).kind).toBe('idempotency_conflict');
    const right = await dispatcher.dispatch(
      'payments.refund',
      { amount: 5 },
      { idempotencyKey: 'k-1', approval: token },
    );
    expect(right.ok).toBe(true);
  });

  it('asks again for an expired or unknown token', async () => {
    vi.useFakeTimers();
    const { gate, dispatcher } = setup({ requiresApproval: true, gate: { ttlMs: 1_000 } });
    const token = tokenOf(await dispatcher.dispatch('payments.refund', { amount: 5 }));
    await gate.approve(token);
    vi.advanceTimersByTime(1_000);
    const fresh = tokenOf(await dispatcher.dispatch('payments.refund', { amount: 5 }, { approval: token }));
    expect(fresh).not.toBe(token);
    expect(await gate.approve(token)).toBe(false);
    const unknown = await dispatcher.dispatch(
      'payments.refund',
      { amount: 5 },
      { approval: 'no-such-token' },
    );
    expect(failure(unknown).kind).toBe('approval_required');
  });

  it('keeps a deny final, with the reviewer’s reason', async () => {
    const { gate, dispatcher, runs } = setup({ requiresApproval: true });
    const token = tokenOf(await dispatcher.dispatch('payments.refund', { amount: 5 }));
    expect(await gate.deny(token, 'too large')).toBe(true);
    expect(await gate.approve(token, { by: 'bob' })).toBe(false);
    const outcome = failure(await dispatcher.dispatch('payments.refund', { amount: 5 }, { approval: token }));
    expect([outcome.kind, outcome.attempts]).toEqual(['approval_denied', 0]);
    expect(outcome.message).toContain('too large');
    expect(runs()).toBe(0);
  });

  it('lets a policy deny win over a host approval, and a host approval run a required call', async () => {
    const denying = setup({ gate: { decide: () => ({ action: 'deny', reason: 'frozen account' }) } });
    const refused = failure(
      await denying.dispatcher.dispatch(
        'payments.refund',
        { amount: 5 },
        { approval: { approvedBy: 'ai-sdk' } },
      ),
    );
    expect([refused.kind, refused.message]).toEqual([
      'approval_denied',
      expect.stringContaining('frozen account'),
    ]);
    const requiring = setup({ requiresApproval: true });
    const ran = await requiring.dispatcher.dispatch(
      'payments.refund',
      { amount: 5 },
      { approval: { approvedBy: 'ai-sdk' } },
    );
    expect(ran.ok).toBe(true);
    expect(ofType(requiring.events, 'approval.decision')[0]).toMatchObject({
      action: 'allow',
      source: 'host',
    });
  });

  it('spends no budget and leaves no idempotency entry for a pending or denied call', async () => {
    const { dispatcher, gate, runs } = setup({ requiresApproval: true });
    const budget = createBudget(1);
    const token = tokenOf(
      await dispatcher.dispatch('payments.refund', { amount: 5 }, { budget, idempotencyKey: 'k' }),
    );
    expect(budget.remaining).toBe(1);
    await gate.approve(token);
    const ran = await dispatcher.dispatch(
      'payments.refund',
      { amount: 5 },
      { budget, idempotencyKey: 'k', approval: token },
    );
    expect(ran).toMatchObject({ ok: true, attempts: 1 });
    expect(runs()).toBe(1);
  });

  it('fails closed: a decide or rule that throws pauses the call, a failing store is store_unavailable', async () => {
    const throwing = setup({
      gate: {
        decide: () => {
          throw new Error('opa down');
        },
      },
    });
    expect(failure(await throwing.dispatcher.dispatch('payments.refund', { amount: 5 })).kind).toBe(
      'approval_required',
    );
    const rule = setup({
      requiresApproval: () => {
        throw new Error('bug');
      },
    });
    expect(failure(await rule.dispatcher.dispatch('payments.refund', { amount: 5 })).kind).toBe(
      'approval_required',
    );
    const broken: ApprovalStore = {
      open: () => Promise.reject(new Error('redis down')),
      get: () => undefined,
      answer: () => false,
    };
    const storeless = setup({ requiresApproval: true, gate: { store: broken } });
    expect(failure(await storeless.dispatcher.dispatch('payments.refund', { amount: 5 })).kind).toBe(
      'store_unavailable',
    );
    expect(throwing.runs() + rule.runs() + storeless.runs()).toBe(0);
  });

  it('blocks nothing in shadow mode and emits one decision with enforced false', async () => {
    const { dispatcher, events, runs } = setup({ requiresApproval: true, gate: { mode: 'shadow' } });
    expect((await dispatcher.dispatch('payments.refund', { amount: 5 })).ok).toBe(true);
    expect(runs()).toBe(1);
    const decisions = ofType(events, 'approval.decision');
    expect(decisions).toHaveLength(1);
    expect(decisions[0]).toMatchObject({ action: 'require', enforced: false });
  });

  it('waits for an asynchronous rule and validator, as the onion does', async () => {
    const asyncArgs: StandardSchemaV1<unknown, { amount: number }> = {
      '~standard': {
        version: 1,
        vendor: 'test',
        validate: async (value) => ({ value: value as { amount: number } }),
      },
    };
    let runs = 0;
    const registry = new ToolRegistry().register({
      name: 'payments.refund',
      inputSchema: asyncArgs,
      requiresApproval: async (args) => args.amount > 100,
      handler: () => ++runs,
    });
    const dispatcher = createDispatcher(defaultStack({ registry, approval: approvalGate({ registry }) }));
    expect((await dispatcher.dispatch('payments.refund', { amount: 5 })).ok).toBe(true);
    expect(failure(await dispatcher.dispatch('payments.refund', { amount: 500 })).kind).toBe(
      'approval_required',
    );
    expect(runs).toBe(1);
  });
});

describe('approvalGate options', () => {
  it.each([
    ['mode', { mode: 'audit' }],
    ['fallback', { fallback: 'maybe' }],
    ['overrides', { overrides: { 'a.b': 'yes' } }],
    ['ttlMs', { ttlMs: 0 }],
    ['decide', { decide: 'allow' }],
    ['store', { store: {} }],
    ['redeem and settle', { store: { open() {}, get() {}, answer() {}, redeem() {} } }],
  ])('throws a TypeError naming %s', (name, options) => {
    expect(() => approvalGate(options as ApprovalGateOptions)).toThrow(new RegExp(name));
  });

  it('refuses a malformed approval dispatch option with schema and 0 attempts', async () => {
    const { dispatcher } = setup({ requiresApproval: true });
    const outcome = failure(
      await dispatcher.dispatch('payments.refund', { amount: 1 }, { approval: { by: 1 } as never }),
    );
    expect([outcome.kind, outcome.attempts]).toEqual(['schema', 0]);
  });

  it('throws a TypeError naming a bad requiresApproval or annotations', () => {
    const registry = new ToolRegistry();
    const tool = { name: 'a.b', inputSchema: z.object({}), handler: () => 1 };
    expect(() => registry.register({ ...tool, requiresApproval: 'yes' as never })).toThrow(
      /requiresApproval/,
    );
    expect(() => registry.register({ ...tool, annotations: 'x' as never })).toThrow(/annotations/);
  });

  it('keeps a memory store to its size', () => {
    const store = memoryApprovalStore({ maxEntries: 1 });
    const request = {
      callKey: 'a',
      tool: 't',
      fingerprint: 'f',
      key: null,
      callId: 'c',
      reason: 'r',
      ttlMs: 1_000,
    };
    store.open({ ...request, token: 'one' });
    store.open({ ...request, callKey: 'b', token: 'two' });
    expect(store.get('one')).toBeUndefined();
    expect(() => memoryApprovalStore({ maxEntries: 0 })).toThrow(/maxEntries/);
  });
});

describe('memoryApprovalStore', () => {
  const request = (n: number) => ({
    token: `t-${n}`,
    callKey: `call-${n}`,
    tool: 't',
    fingerprint: 'f',
    key: null,
    callId: `c-${n}`,
    reason: 'r',
    ttlMs: 1_000,
  });

  it('evicts the oldest request first, and a call whose request was evicted asks anew', async () => {
    const store = memoryApprovalStore({ maxEntries: 3 });
    for (let n = 1; n <= 5; n++) await store.open(request(n));
    expect(await Promise.all([1, 2, 3, 4, 5].map(async (n) => (await store.get(`t-${n}`))?.token))).toEqual([
      undefined,
      undefined,
      't-3',
      't-4',
      't-5',
    ]);
    expect((await store.open({ ...request(1), token: 'again' })).created).toBe(true);
    expect(await store.get('t-3')).toBeUndefined();
  });

  it('keeps the pending request of a call it still holds, after many evictions', async () => {
    let now = 0;
    const store = memoryApprovalStore({ maxEntries: 2, clock: { now: () => now } });
    for (let n = 1; n <= 50; n++) {
      await store.open(request(n));
      // Every other request expires and is forgotten when read.
      if (n % 2 === 0) {
        now += 1_000;
        expect(await store.get(`t-${n}`)).toBeUndefined();
      }
    }
    const last = await store.open({ ...request(51), callKey: 'call-51' });
    expect(await store.open({ ...request(52), callKey: 'call-51' })).toEqual({
      record: last.record,
      created: false,
    });
  });
});
