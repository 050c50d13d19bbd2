// The windows a fleet on Redis loses an outcome in (issue 24, requirements 1 and 6): a lease lost
// mid-call, a leader that crashed leaving a running receipt, and a Redis restarted empty. A tool
// with `reconcile` is asked before the key runs again; one that is neither reconcilable nor
// idempotent is not run again (issue 31, item 17).

import { randomUUID } from 'node:crypto';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createDispatcher,
  defaultStack,
  ToolRegistry,
  type ReconcileContext,
  type ReconcileVerdict,
} from '../../../index.js';
import { fingerprint } from '../../../src/fingerprint.js';
import {
  redisIdempotencyStore,
  type RedisIdempotencyStoreOptions,
} from '../../../integrations/redis/index.js';
import { redisSuitesEnabled, startRedisServer, type RedisServer } from '../../helpers/redis-server.js';
import { connectNodeRedis, reconnected, type Connected } from './clients.js';

const enabled = redisSuitesEnabled('redis outcome windows');

describe.runIf(enabled)('outcome windows on a real redis-server', () => {
  let server: RedisServer;
  const open: Connected[] = [];
  const node = async () => {
    const connected = await connectNodeRedis(server.url);
    open.push(connected);
    return connected;
  };

  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await Promise.all(open.map((each) => each.close()));
    await server?.stop();
  });

  /** A charge against a ledger of its own, whose `reconcile` reads the ledger. */
  function charges(options: {
    store: ReturnType<typeof redisIdempotencyStore>;
    handler?: (key: string, signal: AbortSignal, run: number) => Promise<string>;
    verdict?: (key: string) => ReconcileVerdict;
    reconcile?: boolean;
  }) {
    const ledger = new Map<string, string>();
    const counts = { runs: 0, reconciles: [] as string[] };
    const charge = async (key: string) => {
      const id = `ch_${ledger.size + 1}`;
      ledger.set(key, id);
      return id;
    };
    const registry = new ToolRegistry().register({
      name: 'payments.charge',
      inputSchema: z.object({ amount: z.number() }),
      timeoutMs: 5_000,
      handler: async (_args, { idempotencyKey, signal }) => {
        counts.runs += 1;
        return options.handler === undefined
          ? charge(idempotencyKey as string)
          : options.handler(idempotencyKey as string, signal, counts.runs);
      },
      ...(options.reconcile === false
        ? {}
        : {
            reconcile: (_args: unknown, { idempotencyKey, window }: ReconcileContext) => {
              counts.reconciles.push(window);
              const key = idempotencyKey as string;
              if (options.verdict !== undefined) return options.verdict(key);
              const id = ledger.get(key);
              return id === undefined
                ? 'not_committed'
                : { status: 'committed', result: id, evidence: { id } };
            },
          }),
    });
    const dispatcher = createDispatcher(
      defaultStack({ registry, idempotency: { store: options.store }, retry: { maxAttempts: 1 } }),
    );
    const call = (key: string) =>
      dispatcher.dispatch('payments.charge', { amount: 5 }, { idempotencyKey: key });
    return { call, ledger, counts, charge };
  }

  async function storeOf(options: RedisIdempotencyStoreOptions = {}) {
    const prefix = options.prefix ?? `ow-${randomUUID()}`;
    return redisIdempotencyStore((await node()).store, { leaseMs: 300, pollMs: 50, ...options, prefix });
  }

  // Deletes a key's record behind its leader's back, as an expiry plus another leader's release would.
  async function dropRecord(prefix: string, key: string): Promise<void> {
    const raw = createClient({ url: server.url });
    raw.on('error', () => {});
    await raw.connect();
    await raw.del(`${prefix}:i:${key}`);
    raw.destroy();
  }

  // A handler that charges (or not), then hangs until its lease is lost.
  const chargeThenHang =
    (ledger: Map<string, string>, chargesFirst: boolean) =>
    async (key: string, signal: AbortSignal, run: number): Promise<string> => {
      if (run > 1) {
        ledger.set(key, `ch_${run}`);
        return `ch_${run}`;
      }
      if (chargesFirst) ledger.set(key, 'ch_1');
      return new Promise((_resolve, reject) => {
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    };

  it('reconciles a call whose lease was lost after its charge, and serves the charge (window lease_lost)', async () => {
    const prefix = `ow-${randomUUID()}`;
    const store = await storeOf({ prefix });
    const ledger = new Map<string, string>();
    const subject = charges({
      store,
      handler: chargeThenHang(ledger, true),
      verdict: (key) => verdictFrom(ledger, key),
    });
    const answer = subject.call('k-lost');
    await waitFor(() => ledger.has('k-lost'));
    await dropRecord(prefix, 'k-lost');
    expect(await answer).toEqual({
      ok: true,
      result: 'ch_1',
      attempts: 1,
      reconciled: { window: 'lease_lost' },
    });
    expect(subject.counts).toEqual({ runs: 1, reconciles: ['lease_lost'] });
    expect(await store.receipts.get('k-lost')).toMatchObject({
      status: 'succeeded',
      window: 'lease_lost',
      settledBy: 'reconcile',
    });
    // Stored as any success: the same key is a hit.
    expect(await subject.call('k-lost')).toMatchObject({ ok: true, result: 'ch_1', attempts: 0 });
    store.close();
  });

  it('runs a call whose lost lease charged nothing again, reconciling once', async () => {
    const prefix = `ow-${randomUUID()}`;
    const store = await storeOf({ prefix });
    const ledger = new Map<string, string>();
    const subject = charges({
      store,
      handler: chargeThenHang(ledger, false),
      verdict: (key) => verdictFrom(ledger, key),
    });
    const answer = subject.call('k-none');
    await waitFor(() => subject.counts.runs === 1);
    await dropRecord(prefix, 'k-none');
    expect(await answer).toMatchObject({ ok: true, result: 'ch_2' });
    expect(subject.counts).toEqual({ runs: 2, reconciles: ['lease_lost'] });
    expect(ledger.size).toBe(1);
    store.close();
  });

  it('answers outcome_unknown naming lease_lost when reconcile cannot tell, and leaves the key in doubt', async () => {
    const prefix = `ow-${randomUUID()}`;
    const store = await storeOf({ prefix });
    const ledger = new Map<string, string>();
    const subject = charges({ store, handler: chargeThenHang(ledger, true), verdict: () => 'unknown' });
    const answer = subject.call('k-unknown');
    await waitFor(() => ledger.has('k-unknown'));
    await dropRecord(prefix, 'k-unknown');
    expect(await answer).toMatchObject({ ok: false, kind: 'outcome_unknown', window: 'lease_lost' });
    expect(await store.receipts.list({ inDoubt: true })).toEqual([
      expect.objectContaining({ key: 'k-unknown', status: 'in_doubt', window: 'lease_lost' }),
    ]);
    expect(subject.counts.runs).toBe(1);
    store.close();
  });

  it('reconciles a key whose leader crashed leaving a running receipt and no lease (window leader_crashed)', async () => {
    const prefix = `ow-${randomUUID()}`;
    const crashed = await storeOf({ prefix });
    // The crashed leader: it claimed, charged, and never completed nor renewed.
    const lead = await crashed.claim('k-crash', fingerprint('payments.charge', { amount: 5 }), {
      tool: 'payments.charge',
    });
    expect(lead.kind).toBe('lead');
    const survivor = charges({ store: await storeOf({ prefix }) });
    survivor.ledger.set('k-crash', 'ch_before');
    expect(await survivor.call('k-crash')).toEqual({
      ok: true,
      result: 'ch_before',
      attempts: 0,
      reconciled: { window: 'leader_crashed' },
    });
    expect(survivor.counts).toEqual({ runs: 0, reconciles: ['leader_crashed'] });
    crashed.close();
  });

  it('refuses a key whose leader crashed when the tool is neither idempotent nor reconcilable (window leader_crashed)', async () => {
    const prefix = `ow-${randomUUID()}`;
    const crashed = await storeOf({ prefix });
    await crashed.claim('k-crash-plain', fingerprint('payments.charge', { amount: 5 }), {
      tool: 'payments.charge',
    });
    const sent = await crashed.receipts.get('k-crash-plain');
    const survivor = charges({ store: await storeOf({ prefix }), reconcile: false });
    expect(await survivor.call('k-crash-plain')).toMatchObject({
      ok: false,
      kind: 'outcome_unknown',
      window: 'leader_crashed',
    });
    expect(survivor.counts.runs).toBe(0);
    expect(await crashed.receipts.get('k-crash-plain')).toEqual({
      ...sent,
      status: 'in_doubt',
      window: 'leader_crashed',
      preview: '{"amount":5}',
    });
    crashed.close();
  });

  it('runs a key whose first claim was answered too late to use, leaving no running receipt to look like a crash', async () => {
    const { store: client } = await node();
    let delayed = false;
    // Redis answers the first claim after its lease would be two-thirds gone: it is released.
    const slow = {
      ...client,
      evalScript: async (
        script: Parameters<typeof client.evalScript>[0],
        keys: readonly string[],
        args: readonly string[],
      ) => {
        const reply = await client.evalScript(script, keys, args);
        if (script.name === 'idempotency claim' && !delayed) {
          delayed = true;
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
        return reply;
      },
    };
    const store = redisIdempotencyStore(slow, { prefix: `ow-${randomUUID()}`, leaseMs: 300, pollMs: 50 });
    const subject = charges({ store, reconcile: false });
    expect(await subject.call('k-slow-claim')).toMatchObject({ ok: true, result: 'ch_1' });
    expect(delayed).toBe(true);
    expect(subject.counts.runs).toBe(1);
    expect(await store.receipts.get('k-slow-claim')).toMatchObject({ status: 'succeeded' });
    store.close();
  });

  it('puts the receipt back after a claim answered too late only while the key is still its own', async () => {
    const prefix = `ow-${randomUUID()}`;
    const print = fingerprint('payments.charge', { amount: 5 });
    const other = await storeOf({ prefix });
    // An earlier execution failed: the key's receipt says so.
    await other.receipts.record({
      key: 'k-late',
      tool: 'payments.charge',
      status: 'failed',
      attempts: 1,
      startedAt: Date.now() - 1_000,
      endedAt: Date.now() - 900,
    });
    const { store: client } = await node();
    let delayed = false;
    // Redis answers the first claim after its whole lease has passed.
    const slow = {
      ...client,
      evalScript: async (
        script: Parameters<typeof client.evalScript>[0],
        keys: readonly string[],
        args: readonly string[],
      ) => {
        const reply = await client.evalScript(script, keys, args);
        if (script.name === 'idempotency claim' && !delayed) {
          delayed = true;
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
        return reply;
      },
    };
    const late = redisIdempotencyStore(slow, { prefix, leaseMs: 300, pollMs: 50 });
    const claiming = late.claim('k-late', print, { tool: 'payments.charge', reconcilable: true });
    // Meanwhile its lease lapses, another leader takes the key and leaves it in doubt.
    await new Promise((resolve) => setTimeout(resolve, 350));
    const taken = await other.claim('k-late', print, { tool: 'payments.charge' });
    if (taken.kind !== 'lead') throw new Error(`expected a lead, got ${taken.kind}`);
    const inDoubt = {
      key: 'k-late',
      tool: 'payments.charge',
      status: 'in_doubt' as const,
      attempts: 1,
      startedAt: Date.now(),
      endedAt: Date.now(),
      window: 'attempt_timeout' as const,
    };
    await other.release(taken.lease, inDoubt);
    // The late claim's release finds the key free: the older receipt must not hide the doubt.
    const claim = await claiming;
    expect(delayed).toBe(true);
    expect(claim).toMatchObject({ kind: 'lead', receipt: inDoubt });
    expect(await other.receipts.get('k-late')).toMatchObject({ status: 'running' });
    late.close();
    other.close();
  });

  it('answers outcome_unknown naming lease_lost for a tool without reconcile, and never runs it again', async () => {
    const prefix = `ow-${randomUUID()}`;
    const store = await storeOf({ prefix });
    const ledger = new Map<string, string>();
    const subject = charges({ store, handler: chargeThenHang(ledger, true), reconcile: false });
    const answer = subject.call('k-lost-plain');
    await waitFor(() => ledger.has('k-lost-plain'));
    await dropRecord(prefix, 'k-lost-plain');
    expect(await answer).toMatchObject({ ok: false, kind: 'outcome_unknown', window: 'lease_lost' });
    expect(await subject.call('k-lost-plain')).toMatchObject({ ok: false, kind: 'outcome_unknown' });
    expect(subject.counts.runs).toBe(1);
    store.close();
  });

  it('after Redis restarts empty, reconciles a keyed call of a tool with reconcile once a lease has passed, and refuses the others', async () => {
    const prefix = `ow-${randomUUID()}`;
    const connected = await node();
    const store = redisIdempotencyStore(connected.store, {
      prefix,
      leaseMs: 300,
      pollMs: 50,
      resetWindowMs: 30_000,
    });
    const withReconcile = charges({ store });
    const without = charges({ store, reconcile: false });
    expect(await withReconcile.call('before')).toMatchObject({ ok: true });
    expect(await without.call('before-2')).toMatchObject({ ok: true });
    await server.restart();
    await reconnected(connected);
    // The charge of 'before' survived in the backend; the store forgot it.
    expect(await without.call('before-2')).toMatchObject({ ok: false, kind: 'store_unavailable' });
    expect(await withReconcile.call('before')).toEqual({
      ok: true,
      result: 'ch_1',
      attempts: 0,
      reconciled: { window: 'store_reset' },
    });
    expect(await withReconcile.call('fresh')).toMatchObject({ ok: true, result: 'ch_2', attempts: 1 });
    expect(withReconcile.counts).toEqual({ runs: 2, reconciles: ['store_reset', 'store_reset'] });
    expect(await store.receipts.get('before')).toMatchObject({ status: 'succeeded', window: 'store_reset' });
    store.close();
  });

  it('says a lead in an epoch younger than the reset window, and not marked as a restart, cannot vouch for the key', async () => {
    const print = fingerprint('payments.charge', { amount: 5 });
    const claimOf = async (store: ReturnType<typeof redisIdempotencyStore>, key: string) => {
      const claim = await store.claim(key, print, { tool: 'payments.charge', reconcilable: true });
      if (claim.kind !== 'lead') throw new Error(`expected a lead, got ${claim.kind}`);
      await store.release(claim.lease);
      return claim;
    };
    const prefix = `ow-${randomUUID()}`;
    const young = await storeOf({ prefix, resetWindowMs: 400 });
    expect(await claimOf(young, 'a')).toMatchObject({ pastUnknown: true, receipt: undefined });
    // The key's running receipt (its release wrote none) is the crash the layer settles anyway.
    expect(await claimOf(young, 'a')).not.toHaveProperty('pastUnknown');
    // Once the epoch is older than the window, whatever ran before it may run again anyway.
    await new Promise((resolve) => setTimeout(resolve, 450));
    expect(await claimOf(young, 'b')).not.toHaveProperty('pastUnknown');
    // A store that carries on after a reset never fails closed, nor asks.
    const carryOn = await storeOf({ prefix: `ow-${randomUUID()}`, onStoreReset: 'continue' });
    expect(await claimOf(carryOn, 'a')).not.toHaveProperty('pastUnknown');
    young.close();
    carryOn.close();
  });

  it('after Redis restarts empty, answers outcome_unknown naming store_reset when reconcile cannot tell', async () => {
    const prefix = `ow-${randomUUID()}`;
    const connected = await node();
    const store = redisIdempotencyStore(connected.store, { prefix, leaseMs: 300, pollMs: 50 });
    const subject = charges({ store, verdict: () => 'unknown' });
    expect(await subject.call('a')).toMatchObject({ ok: true });
    await server.restart();
    await reconnected(connected);
    expect(await subject.call('a')).toMatchObject({
      ok: false,
      kind: 'outcome_unknown',
      window: 'store_reset',
    });
    expect(subject.counts.runs).toBe(1);
    store.close();
  });
});

function verdictFrom(ledger: Map<string, string>, key: string): ReconcileVerdict {
  const id = ledger.get(key);
  return id === undefined ? 'not_committed' : { status: 'committed', result: id };
}

async function waitFor(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  if (!check()) throw new Error('not within 5 s');
}
