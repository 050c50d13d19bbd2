// Regression (issue 31, item 17): a keyed call of a non-idempotent tool without `reconcile` whose
// leader crashed (or lost its lease) mid-call ran again once the lease ended, which can charge
// twice; and a call in flight when its MCP connection closed failed `internal` and left no
// `in_doubt` receipt. "May have run" is one kind: outcome_unknown, with a window, in doubt.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../../index.js';
import { memoryIdempotencyStore, type MemoryIdempotencyStore } from '../../middleware/index.js';
import { lapsingIdempotencyStore } from '../helpers/lapsing-idempotency-store.js';
import { importMcpTools } from '../../integrations/mcp/index.js';
import { fingerprint } from '../../src/fingerprint.js';
import { buildRemoteServer } from '../integrations/mcp/fixtures/remote-server.js';

const key = { idempotencyKey: 'order-1' };

function chargeOn(
  store: MemoryIdempotencyStore,
  options: { idempotent?: boolean; hangFirst?: boolean } = {},
) {
  let runs = 0;
  const registry = new ToolRegistry().register({
    name: 'payments.charge',
    inputSchema: z.object({ amount: z.number() }),
    idempotent: options.idempotent ?? false,
    handler: (_args, { signal }) => {
      runs += 1;
      if (options.hangFirst !== true || runs > 1) return `ch_${runs}`;
      return new Promise<never>((_resolve, reject) => {
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    },
  });
  const dispatcher = createDispatcher(defaultStack({ registry, idempotency: { store } }));
  return { call: () => dispatcher.dispatch('payments.charge', { amount: 5 }, key), runs: () => runs };
}

describe('a leader that crashed or lost its lease', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('never runs a non-idempotent charge again after its leader crashed: outcome_unknown, in doubt', async () => {
    const store = lapsingIdempotencyStore({ leaseMs: 300 });
    // The crashed leader claimed the key, left its running receipt, and never settled.
    store.claim('order-1', fingerprint('payments.charge', { amount: 5 }), { tool: 'payments.charge' });
    const sent = store.receipts.get('order-1');
    const charge = chargeOn(store);
    const pending = charge.call();
    await vi.advanceTimersByTimeAsync(301);
    expect(await pending).toMatchObject({ ok: false, kind: 'outcome_unknown', window: 'leader_crashed' });
    expect(charge.runs()).toBe(0);
    // When the crashed leader started is kept; the call that found it in doubt adds the args' preview.
    expect(store.receipts.get('order-1')).toEqual({
      ...sent,
      status: 'in_doubt',
      window: 'leader_crashed',
      preview: '{"amount":5}',
    });
    expect(await charge.call()).toMatchObject({ kind: 'outcome_unknown', window: 'leader_crashed' });
    expect(charge.runs()).toBe(0);
  });

  it('runs an idempotent tool again after its leader crashed, as before', async () => {
    const store = lapsingIdempotencyStore({ leaseMs: 300 });
    store.claim('order-1', fingerprint('payments.charge', { amount: 5 }), { tool: 'payments.charge' });
    const charge = chargeOn(store, { idempotent: true });
    const pending = charge.call();
    await vi.advanceTimersByTimeAsync(301);
    expect(await pending).toMatchObject({ ok: true, result: 'ch_1' });
    expect(store.receipts.get('order-1')).toMatchObject({ status: 'succeeded' });
  });

  it('answers outcome_unknown (lease_lost) and leaves the key in doubt when a non-idempotent leader loses its lease', async () => {
    const inner = lapsingIdempotencyStore({ leaseMs: 300 });
    // Another holder takes the key at the first renewal: the lease is found gone.
    let taken = false;
    const store: MemoryIdempotencyStore = {
      ...inner,
      renew: (lease) => {
        if (!taken) {
          taken = true;
          inner.release(lease);
        }
        return inner.renew(lease);
      },
    };
    const charge = chargeOn(store, { hangFirst: true });
    const pending = charge.call();
    await vi.advanceTimersByTimeAsync(200);
    expect(await pending).toMatchObject({ ok: false, kind: 'outcome_unknown', window: 'lease_lost' });
    expect(inner.receipts.get('order-1')).toMatchObject({
      status: 'in_doubt',
      window: 'lease_lost',
      attempts: 1,
    });
    expect(await charge.call()).toMatchObject({ kind: 'outcome_unknown', window: 'lease_lost' });
    expect(charge.runs()).toBe(1);
  });
});

describe('an MCP connection that closes mid-call', () => {
  it('answers outcome_unknown (connection_lost) for a keyed write and leaves its receipt in doubt', async () => {
    const { server, log } = buildRemoteServer();
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    await server.connect(serverTransport);
    const client = new Client({ name: 'importer', version: '1.0.0' });
    await client.connect(clientTransport);
    try {
      const registry = new ToolRegistry();
      await importMcpTools(client, registry);
      const store = memoryIdempotencyStore();
      const dispatcher = createDispatcher(defaultStack({ registry, idempotency: { store } }));
      const running = dispatcher.dispatch('slow_tool', {}, key);
      await expect.poll(() => log.calls['slowTool']).toBe(1);
      await client.close();
      expect(await running).toMatchObject({
        ok: false,
        kind: 'outcome_unknown',
        window: 'connection_lost',
        attempts: 1,
      });
      expect(store.receipts.get('order-1')).toMatchObject({ status: 'in_doubt', window: 'connection_lost' });
      expect(await dispatcher.dispatch('slow_tool', {}, key)).toMatchObject({ kind: 'outcome_unknown' });
      expect(log.calls['slowTool']).toBe(1);
    } finally {
      await client.close().catch(() => {});
      await server.close().catch(() => {});
    }
  });
});
