// redisApprovalStore on its own redis-server: two workers share requests and answers, and an
// approved token delivered to both runs the handler once (its run is claimed in Redis).

import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { approvalGate, createDispatcher, defaultStack, ToolRegistry, type Outcome } from '../../../index.js';
import {
  defineScript,
  redisApprovalStore,
  redisIdempotencyStore,
  type StoreClient,
} from '../../../integrations/redis/index.js';
import { secretCores, secrets } from '../../helpers/secrets.js';
import { redisSuitesEnabled } from '../../helpers/redis-server.js';
import { redisSuite } from '../../helpers/redis-suite.js';
import { until } from '../../stores/contract.js';

const enabled = redisSuitesEnabled('redis approval store');

describe.runIf(enabled)('redisApprovalStore on a real server', () => {
  const redis = redisSuite();
  const connect = () => redis.node();

  // One worker: its own registry, gate, idempotency layer and connection, sharing Redis.
  async function worker(prefix: string, runs: string[], name: string, hold?: Promise<void>) {
    const { store } = await connect();
    const registry = new ToolRegistry().register({
      name: 'payments.refund',
      inputSchema: z.object({ amount: z.number().max(1_000), note: z.string().optional() }),
      requiresApproval: true,
      handler: async ({ amount }) => {
        runs.push(name);
        await hold;
        return { refunded: amount };
      },
    });
    const gate = approvalGate({ registry, store: redisApprovalStore(store, { prefix }) });
    const dispatcher = createDispatcher(
      defaultStack({
        registry,
        approval: gate,
        idempotency: { store: redisIdempotencyStore(store, { prefix }) },
      }),
    );
    return { gate, dispatcher, client: store };
  }

  // Every key of a namespace and what it holds, as Redis keeps it.
  const dumpScript = defineScript(
    'test dump',
    `
local out = {}
for _, key in ipairs(redis.call('KEYS', ARGV[1] .. ':*')) do
  local kind = redis.call('TYPE', key)['ok']
  out[#out + 1] = key
  if kind == 'hash' then out[#out + 1] = cjson.encode(redis.call('HGETALL', key))
  elseif kind == 'string' then out[#out + 1] = redis.call('GET', key)
  elseif kind == 'zset' then out[#out + 1] = cjson.encode(redis.call('ZRANGE', key, 0, -1))
  elseif kind == 'stream' then out[#out + 1] = cjson.encode(redis.call('XRANGE', key, '-', '+'))
  else out[#out + 1] = kind end
end
return out
`,
  );
  const dump = async (client: StoreClient, prefix: string) =>
    ((await client.evalScript(dumpScript, [], [prefix])) as string[]).join('\n');

  const tokenOf = (outcome: Outcome) => {
    if (outcome.ok || outcome.approval === undefined)
      throw new Error(`expected approval_required, got ${JSON.stringify(outcome)}`);
    return outcome.approval.token;
  };

  it('ends a filtered page early after 20 000 requests looked at, and goes on from its cursor', async () => {
    const { store: client } = await connect();
    const store = redisApprovalStore(client, { prefix: `ap-budget-${randomUUID()}` });
    const count = 20_005;
    // The tokens sort in the order they are opened, so the index's ties on a millisecond keep it.
    const tokenAt = (i: number) => `t-${String(i).padStart(6, '0')}`;
    for (let from = 0; from < count; from += 1_000) {
      await Promise.all(
        Array.from({ length: Math.min(1_000, count - from) }, (_, k) => {
          const i = from + k;
          return store.open({
            token: tokenAt(i),
            callKey: `call-${i}`,
            tool: 'payments.refund',
            fingerprint: `fp-${i}`,
            key: null,
            callId: `c-${i}`,
            reason: 'a refund',
            ttlMs: 600_000,
            tenant: i === 3 || i >= count - 3 ? 'rare' : 'common',
          });
        }),
      );
    }
    const pages: string[][] = [];
    let cursor: string | undefined;
    do {
      const page = await store.list?.({
        tenant: 'rare',
        limit: 10,
        ...(cursor === undefined ? {} : { cursor }),
      });
      if (page === undefined) throw new Error('the store cannot list');
      pages.push(page.items.map((record) => record.token));
      cursor = page.cursor;
    } while (cursor !== undefined);
    // The first call stops at its budget with one match found; the second finds the last three.
    expect(pages).toEqual([[tokenAt(3)], [count - 3, count - 2, count - 1].map(tokenAt)]);
  }, 60_000);

  it('runs a token approved on one worker once, delivered to both at once and again later', async () => {
    const prefix = `t-${randomUUID()}`;
    const runs: string[] = [];
    let release = () => {};
    const hold = new Promise<void>((resolve) => (release = resolve));
    const a = await worker(prefix, runs, 'a', hold);
    const b = await worker(prefix, runs, 'b', hold);
    const token = tokenOf(await a.dispatcher.dispatch('payments.refund', { amount: 500 }, { callId: 'c-1' }));
    // The same call sent again to the other worker gets its token back.
    expect(tokenOf(await b.dispatcher.dispatch('payments.refund', { amount: 500 }, { callId: 'c-1' }))).toBe(
      token,
    );
    expect(await b.gate.approve(token, { by: 'ana' })).toBe(true);
    expect(await a.gate.approve(token, { by: 'ana' })).toBe(true);
    // The run is claimed in the store: a delivery to the other worker while it runs is refused.
    const onA = a.dispatcher.dispatch('payments.refund', { amount: 500 }, { approval: token });
    await until(() => runs.length === 1);
    const onB = await b.dispatcher.dispatch('payments.refund', { amount: 500 }, { approval: token });
    expect(onB.ok ? 'ran' : onB.kind).toBe('idempotency_result_unavailable');
    release();
    expect(await onA).toMatchObject({ ok: true, result: { refunded: 500 }, attempts: 1 });
    // Later deliveries, to either worker, get the recorded outcome.
    for (const { dispatcher } of [a, b]) {
      const later = await dispatcher.dispatch('payments.refund', { amount: 500 }, { approval: token });
      expect(later).toMatchObject({ ok: true, result: { refunded: 500 }, attempts: 0 });
    }
    expect(runs).toEqual(['a']);
  });

  it('keeps a deny final across workers and refuses a token bound to other args', async () => {
    const prefix = `t-${randomUUID()}`;
    const runs: string[] = [];
    const a = await worker(prefix, runs, 'a');
    const b = await worker(prefix, runs, 'b');
    const token = tokenOf(
      await a.dispatcher.dispatch('payments.refund', { amount: 900 }, { idempotencyKey: 'k-9' }),
    );
    const other = await b.dispatcher.dispatch(
      'payments.refund',
      { amount: 901 },
      { idempotencyKey: 'k-9', approval: token },
    );
    expect(other.ok === false && other.kind).toBe('idempotency_conflict');
    expect(await b.gate.deny(token, 'over the limit')).toBe(true);
    expect(await b.gate.deny(token, 'over the limit')).toBe(true);
    expect(await a.gate.approve(token)).toBe(false);
    const denied = await a.dispatcher.dispatch(
      'payments.refund',
      { amount: 900 },
      { idempotencyKey: 'k-9', approval: token },
    );
    expect(denied.ok === false && [denied.kind, denied.message.includes('over the limit')]).toEqual([
      'approval_denied',
      true,
    ]);
    // A denied call asks afresh: a new request, a new token.
    const again = tokenOf(
      await b.dispatcher.dispatch('payments.refund', { amount: 900 }, { idempotencyKey: 'k-9' }),
    );
    expect(again).not.toBe(token);
    expect(runs).toEqual([]);
  });

  it('lists a request paused on one worker from another, with its args redacted in every key, and edits it from there', async () => {
    const prefix = `t-${randomUUID()}`;
    const runs: string[] = [];
    const a = await worker(prefix, runs, 'a');
    const b = await worker(prefix, runs, 'b');
    const heard: string[] = [];
    const stop = a.gate.subscribe((decided) =>
      heard.push(`${decided.decision}:${decided.channel}:${decided.by}`),
    );
    const note = `card via ${secrets.api_key}; ${secrets.private_key}; ${secrets.jwt}`;
    const token = tokenOf(
      await a.dispatcher.dispatch(
        'payments.refund',
        { amount: 900, note },
        { tenant: 'acme', callId: 'c-9' },
      ),
    );
    const page = await b.gate.store.list?.({ limit: 10 });
    expect(page?.items).toHaveLength(1);
    expect(page?.items[0]).toMatchObject({ token, tool: 'payments.refund', tenant: 'acme', callId: 'c-9' });
    expect(page?.items[0]?.preview).toContain('[REDACTED:');
    expect(JSON.parse(page?.items[0]?.preview as string)).toMatchObject({ amount: 900 });
    // Edited on worker B against the tool's schema: invalid args are refused, valid ones approved.
    await expect(
      b.gate.approve(token, { by: 'ana', channel: 'console', args: { amount: 5_000 } }),
    ).rejects.toMatchObject({
      kind: 'schema',
    });
    const edited = { amount: 90, note: `refund less; ${secrets.github_token}` };
    expect(await b.gate.approve(token, { by: 'ana', channel: 'console', args: edited })).toBe(true);
    expect((await a.gate.store.list?.())?.items).toEqual([]);
    // Worker A hears the decision made on B, through Redis.
    await until(() => heard.length === 1);
    expect(heard).toEqual(['edited:console:ana']);
    stop();
    // The original args no longer run on the token; the edited ones run once, wherever delivered.
    const original = await a.dispatcher.dispatch(
      'payments.refund',
      { amount: 900, note },
      { approval: token },
    );
    expect(original.ok ? 'ran' : original.kind).toBe('idempotency_conflict');
    const first = await a.dispatcher.dispatch('payments.refund', edited, { approval: token });
    expect(first).toMatchObject({ ok: true, result: { refunded: 90 }, attempts: 1 });
    const second = await b.dispatcher.dispatch('payments.refund', edited, { approval: token });
    expect(second).toMatchObject({ ok: true, result: { refunded: 90 }, attempts: 0 });
    expect(runs).toEqual(['a']);
    const audit = (await a.gate.store.audit?.())?.items ?? [];
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      token,
      decision: 'edited',
      by: 'ana',
      channel: 'console',
      tenant: 'acme',
    });
    // No secret in any key of the namespace: records, indexes, the audit stream, per-token audit.
    const raw = await dump(a.client, prefix);
    expect(raw).toContain(':ap:audit');
    expect(raw).toContain('[REDACTED:');
    for (const core of secretCores) expect(raw).not.toContain(core);
  });
});
