// The approvals API over a real gate, registry, zod tool and memory store: list and filter, approve,
// deny, edit then approve, each refusal as its status, and a double click that runs nothing twice.

import { afterEach, describe, expect, it } from 'vitest';
import { memoryApprovalStore, type ApprovalStore } from '../../index.js';
import { bearer, refunds, serve, type Served, tokenOf } from './room.js';

let served: Served | undefined;
afterEach(async () => {
  await served?.stop();
  served = undefined;
});

const json = { ...bearer, 'content-type': 'application/json' };

function post(path: string, body: unknown = {}) {
  return (served as Served).call(path, { method: 'POST', headers: json, body: JSON.stringify(body) });
}

describe('the approvals API', () => {
  it('lists a paused call with its redacted preview, reason, call id, tenant, age and expiry', async () => {
    const { gate, dispatcher } = refunds();
    served = await serve({ gate });
    const paused = tokenOf(
      await dispatcher.dispatch(
        'payments.refund',
        { amount: 70, note: 'late' },
        { tenant: 'acme', callId: 'c-1' },
      ),
    );
    const listed = await served.call('/console/api/approvals', { headers: bearer });
    expect(listed.status).toBe(200);
    expect(listed.json.cursor).toBeUndefined();
    expect(listed.json.items).toEqual([
      {
        token: paused,
        tool: 'payments.refund',
        preview: '{"amount":70,"note":"late"}',
        reason: 'the tool always needs approval',
        callId: 'c-1',
        tenant: 'acme',
        createdAt: expect.any(Number),
        ageMs: expect.any(Number),
        expiresAt: expect.any(Number),
      },
    ]);
  });

  it('approves a paused call once: a double click answers 200 twice and the handler runs once', async () => {
    const { gate, dispatcher, runs } = refunds();
    served = await serve({ gate });
    const session = await served.login('ana');
    const args = { amount: 70 };
    const paused = tokenOf(await dispatcher.dispatch('payments.refund', args));
    const clicks = await Promise.all(
      [1, 2].map(() =>
        served!.call(`/console/api/approvals/${paused}/approve`, {
          method: 'POST',
          headers: served!.sessionPost(session),
        }),
      ),
    );
    for (const click of clicks) {
      expect(click.status).toBe(200);
      expect(click.json).toEqual({ ok: true, token: paused, decision: 'approved' });
    }
    const deliveries = await Promise.all(
      [1, 2, 3].map(() => dispatcher.dispatch('payments.refund', args, { approval: paused })),
    );
    for (const delivery of deliveries) expect(delivery).toMatchObject({ ok: true, result: { refunded: 70 } });
    expect(runs).toEqual([{ amount: 70 }]);
    const audit = await served.call(`/console/api/audit?token=${paused}`, { headers: bearer });
    expect(audit.json.items).toEqual([
      expect.objectContaining({ token: paused, decision: 'approved', by: 'ana', channel: 'console' }),
    ]);
    expect((await served.call('/console/api/approvals', { headers: bearer })).json.items).toEqual([]);
  });

  it('denies with a reason; the call then fails approval_denied and never runs', async () => {
    const { gate, dispatcher, runs } = refunds();
    served = await serve({ gate });
    const args = { amount: 9 };
    const paused = tokenOf(await dispatcher.dispatch('payments.refund', args));
    expect((await post(`/console/api/approvals/${paused}/deny`, { reason: '' })).status).toBe(400);
    expect((await post(`/console/api/approvals/${paused}/deny`, {})).json).toEqual({
      error: 'bad_request',
      message: 'a denial needs a reason',
    });
    const denied = await post(`/console/api/approvals/${paused}/deny`, { reason: 'not this customer' });
    expect(denied.json).toEqual({ ok: true, token: paused, decision: 'denied' });
    expect((await post(`/console/api/approvals/${paused}/deny`, { reason: 'again' })).status).toBe(200);
    const outcome = await dispatcher.dispatch('payments.refund', args, { approval: paused });
    expect(outcome).toMatchObject({ ok: false, kind: 'approval_denied' });
    expect(runs).toEqual([]);
  });

  it('edits then approves: the edited args run once, the asked ones never', async () => {
    const { gate, dispatcher, runs } = refunds();
    served = await serve({ gate });
    const paused = tokenOf(await dispatcher.dispatch('payments.refund', { amount: 900 }));
    const edited = { amount: 90, note: 'capped' };
    for (let click = 0; click < 2; click++) {
      const answer = await post(`/console/api/approvals/${paused}/approve`, { args: edited });
      expect(answer.status).toBe(200);
      expect(answer.json).toEqual({ ok: true, token: paused, decision: 'edited' });
    }
    expect((await dispatcher.dispatch('payments.refund', { amount: 900 }, { approval: paused })).ok).toBe(
      false,
    );
    expect(await dispatcher.dispatch('payments.refund', edited, { approval: paused })).toMatchObject({
      ok: true,
    });
    expect(await dispatcher.dispatch('payments.refund', edited, { approval: paused })).toMatchObject({
      ok: true,
    });
    expect(runs).toEqual([edited]);
  });

  it('answers edited args that fail the schema 422 with one line, and leaves the request pending', async () => {
    const { gate, dispatcher } = refunds();
    served = await serve({ gate });
    const paused = tokenOf(await dispatcher.dispatch('payments.refund', { amount: 5 }));
    const answer = await post(`/console/api/approvals/${paused}/approve`, { args: { amount: 'five' } });
    expect(answer.status).toBe(422);
    expect(answer.json.error).toBe('schema');
    expect(answer.json.message).toMatch(/^Invalid edited args for "payments\.refund": amount: /);
    expect(answer.json.message).not.toContain('\n');
    expect((await gate.store.get(paused))?.status).toBe('pending');
  });

  it('answers an unknown or expired token 404, and one answered the other way 409', async () => {
    const { gate, dispatcher } = refunds();
    served = await serve({ gate });
    const unknown = await post('/console/api/approvals/no-such-token/approve');
    expect(unknown.status).toBe(404);
    expect(unknown.json).toEqual({
      error: 'not_found',
      message: 'no request has this token: it is unknown or has expired',
    });
    const denied = tokenOf(await dispatcher.dispatch('payments.refund', { amount: 1 }));
    await post(`/console/api/approvals/${denied}/deny`, { reason: 'no' });
    const late = await post(`/console/api/approvals/${denied}/approve`);
    expect(late.status).toBe(409);
    expect(late.json).toEqual({ error: 'conflict', message: 'this request was already denied' });
    const approved = tokenOf(await dispatcher.dispatch('payments.refund', { amount: 2 }));
    await post(`/console/api/approvals/${approved}/approve`);
    const deny = await post(`/console/api/approvals/${approved}/deny`, { reason: 'too late' });
    expect(deny.status).toBe(409);
    const edit = await post(`/console/api/approvals/${approved}/approve`, { args: { amount: 3 } });
    expect(edit.status).toBe(409);
    expect(edit.json.message).toBe(
      'this request was already approved by a script (bearer token), for other args',
    );
  });

  // A store written before `list` took filters sends every pending request: the console filters.
  function ignoringFilters(inner: ApprovalStore): ApprovalStore {
    return {
      ...inner,
      open: (request) => inner.open(request),
      get: (token) => inner.get(token),
      answer: (token, answer) => inner.answer(token, answer),
      list: ({ tool: _tool, tenant: _tenant, ...rest } = {}) => inner.list?.(rest) ?? { items: [] },
    };
  }

  it.each([
    ['a store that filters', (store: ApprovalStore) => store],
    ['a store that ignores the filters', ignoringFilters],
  ])(
    'filters by tool and tenant over 10 000 pending requests, page by page, each once (%s)',
    async (_, wrap) => {
      const store = memoryApprovalStore();
      const { gate } = refunds(wrap(store));
      for (let i = 0; i < 10_000; i++) {
        store.open({
          token: `t-${i}`,
          callKey: `k-${i}`,
          tool: i % 10 === 0 ? 'payments.refund' : 'mail.send',
          fingerprint: 'f',
          key: null,
          callId: `c-${i}`,
          reason: 'r',
          ttlMs: 60_000,
          tenant: i % 4 === 0 ? 'acme' : 'globex',
        });
      }
      served = await serve({ gate });
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const query = `tool=payments.refund&tenant=acme&limit=120${cursor === undefined ? '' : `&cursor=${cursor}`}`;
        const page = await served.call(`/console/api/approvals?${query}`, { headers: bearer });
        expect(page.status).toBe(200);
        for (const item of page.json.items) {
          expect(item).toMatchObject({ tool: 'payments.refund', tenant: 'acme' });
          seen.push(item.token);
        }
        cursor = page.json.cursor;
        pages += 1;
      } while (cursor !== undefined);
      // Every 20th request is acme's refund: 500 of them, in order, none twice, in 5 pages.
      expect(seen).toEqual(Array.from({ length: 500 }, (_, i) => `t-${i * 20}`));
      expect(pages).toBe(5);
      expect((await served.call('/console/api/approvals?cursor=bogus', { headers: bearer })).status).toBe(
        400,
      );
      expect((await served.call('/console/api/approvals?limit=501', { headers: bearer })).status).toBe(400);
    },
  );

  it('goes on after a cursor whose last request was decided meanwhile', async () => {
    const { gate, dispatcher } = refunds();
    served = await serve({ gate });
    const tokens: string[] = [];
    for (let amount = 1; amount <= 4; amount++) {
      tokens.push(tokenOf(await dispatcher.dispatch('payments.refund', { amount })));
    }
    const first = await served.call('/console/api/approvals?limit=2', { headers: bearer });
    expect(first.json.items.map((item: { token: string }) => item.token)).toEqual(tokens.slice(0, 2));
    await post(`/console/api/approvals/${tokens[1]}/approve`);
    const second = await served.call(`/console/api/approvals?limit=2&cursor=${first.json.cursor}`, {
      headers: bearer,
    });
    expect(second.json.items.map((item: { token: string }) => item.token)).toEqual(tokens.slice(2));
  });

  it('says a store without list cannot list: the pane is off and the route answers 501', async () => {
    const inner = memoryApprovalStore();
    const store: ApprovalStore = {
      edits: true,
      open: (request) => inner.open(request),
      get: (token) => inner.get(token),
      answer: (token, answer) => inner.answer(token, answer),
    };
    const { gate, dispatcher } = refunds(store);
    served = await serve({ gate });
    expect((await served.call('/console/api/session', { headers: bearer })).json.panes.approvals).toBe(false);
    const listed = await served.call('/console/api/approvals', { headers: bearer });
    expect(listed.status).toBe(501);
    expect(listed.json).toEqual({
      error: 'not_supported',
      message: 'this store cannot list pending requests',
    });
    const paused = tokenOf(await dispatcher.dispatch('payments.refund', { amount: 4 }));
    expect((await post(`/console/api/approvals/${paused}/approve`)).status).toBe(200);
    expect((await served.call('/console/api/audit', { headers: bearer })).status).toBe(501);
  });

  it('answers 501 on the approvals routes of a console without a gate', async () => {
    served = await serve();
    const answer = await served.call('/console/api/approvals', { headers: bearer });
    expect(answer.status).toBe(501);
    expect(answer.json.message).toBe('no approval gate is attached to this console');
  });
});
