// The tool-health and in-doubt routes over injected sources: delegated as they are, each
// InDoubtActionError as its status, 501 without a source; and no secret in any answer of any route.

import { afterEach, describe, expect, it } from 'vitest';
import {
  type HealthSource,
  InDoubtActionError,
  type InDoubtItem,
  type InDoubtSource,
} from '../../integrations/console/index.js';
import { secretCores, secrets } from '../helpers/secrets.js';
import { bearer, refunds, serve, type Served, stream, tokenOf } from './room.js';

let served: Served | undefined;
afterEach(async () => {
  await served?.stop();
  served = undefined;
});

const json = { ...bearer, 'content-type': 'application/json' };

function post(path: string, body: unknown = {}) {
  return (served as Served).call(path, { method: 'POST', headers: json, body: JSON.stringify(body) });
}

// Sources that leak on purpose: the console must redact what they give, whatever they promise.
const leakyHealth: HealthSource = {
  report: () => ({
    at: 5,
    windowMs: 60_000,
    processes: 1,
    tools: [
      {
        tool: 'payments.refund',
        callsPerSecond: 1,
        calls: 60,
        p50: 10,
        p95: 20,
        p99: 30,
        outcomes: { ok: 59, timeout: 1 },
        retries: 0,
        autopilot: { source: `learned with ${secrets.aws_key}` },
      },
    ],
  }),
  subscribe: () => () => {},
};

function inDoubtSource(): InDoubtSource & { calls: string[] } {
  const calls: string[] = [];
  const item: InDoubtItem = {
    key: 'refund/7',
    tool: 'payments.refund',
    window: 'connection_lost',
    startedAt: 1,
    attempts: 1,
    preview: `{"card":"${secrets.api_key}"}`,
    evidence: { header: secrets.bearer },
    canReconcile: false,
  };
  return {
    calls,
    list: async (query) => {
      calls.push(`list ${JSON.stringify(query)}`);
      return [item];
    },
    reconcile: async (key, by) => {
      calls.push(`reconcile ${key} by ${by.by}`);
      if (key === 'gone') throw new InDoubtActionError('not_found', `no receipt under "${key}"`);
      if (key === 'settled') throw new InDoubtActionError('not_in_doubt', 'it already settled');
      throw new InDoubtActionError('no_reconcile', 'payments.refund declares no reconcile; mark it resolved');
    },
    resolve: async (key, by) => {
      calls.push(`resolve ${key} by ${by.by}: ${by.note}`);
      if (by.note === 'bad') throw new InDoubtActionError('bad_input', 'the note is not usable');
      return { status: 'failed', verdict: 'resolved', evidence: { note: by.note } };
    },
  };
}

describe('the tool-health and in-doubt routes', () => {
  it('delegate to the injected sources, redacted, and map each InDoubtActionError to its status', async () => {
    const inDoubt = inDoubtSource();
    served = await serve({ health: leakyHealth, inDoubt });
    const session = await served.call('/console/api/session', { headers: bearer });
    expect(session.json.panes).toEqual({ approvals: false, health: true, inDoubt: true });
    const health = await served.call('/console/api/health', { headers: bearer });
    expect(health.json.tools[0]).toMatchObject({ tool: 'payments.refund', p99: 30 });
    expect(health.json.tools[0].autopilot.source).toBe('learned with [REDACTED:aws_key]');
    const listed = await served.call('/console/api/in-doubt?tool=payments.refund&limit=5', {
      headers: bearer,
    });
    expect(listed.json.items).toEqual([expect.objectContaining({ key: 'refund/7', canReconcile: false })]);
    expect(inDoubt.calls).toContain('list {"limit":5,"tool":"payments.refund"}');
    const key = encodeURIComponent('refund/7');
    const refused = await post(`/console/api/in-doubt/${key}/reconcile`);
    expect(refused.status).toBe(409);
    expect(refused.json).toEqual({
      error: 'no_reconcile',
      message: 'payments.refund declares no reconcile; mark it resolved',
    });
    expect((await post('/console/api/in-doubt/gone/reconcile')).status).toBe(404);
    expect((await post('/console/api/in-doubt/settled/reconcile')).status).toBe(409);
    expect((await post(`/console/api/in-doubt/${key}/resolve`, { note: '' })).status).toBe(400);
    expect((await post(`/console/api/in-doubt/${key}/resolve`, { note: 'bad' })).status).toBe(400);
    const resolved = await post(`/console/api/in-doubt/${key}/resolve`, { note: 'refunded by hand' });
    expect(resolved.json).toEqual({
      status: 'failed',
      verdict: 'resolved',
      evidence: { note: 'refunded by hand' },
    });
    expect(inDoubt.calls).toContain('resolve refund/7 by a script (bearer token): refunded by hand');
  });

  it('answer 501 with a clear message when no source is attached', async () => {
    served = await serve();
    const health = await served.call('/console/api/health', { headers: bearer });
    expect(health.status).toBe(501);
    expect(health.json).toEqual({
      error: 'not_configured',
      message: 'no tool-health source is attached to this console',
    });
    expect((await served.call('/console/api/in-doubt', { headers: bearer })).status).toBe(501);
    expect((await post('/console/api/in-doubt/k/resolve', { note: 'n' })).status).toBe(501);
  });

  it('answer a source that fails 500 with its first line, redacted', async () => {
    const failing: HealthSource = {
      report: () => {
        throw new Error(`store down: ${secrets.api_key}\n    at somewhere`);
      },
      subscribe: () => () => {},
    };
    served = await serve({ health: failing });
    const answer = await served.call('/console/api/health', { headers: bearer });
    expect(answer.status).toBe(500);
    expect(answer.json).toEqual({
      error: 'internal',
      message: 'the console could not answer: store down: [REDACTED:api_key]',
    });
  });

  it('answer a wrong method 405 with Allow', async () => {
    served = await serve();
    const answer = await post('/console/api/health');
    expect(answer.status).toBe(405);
    expect(answer.headers.get('allow')).toBe('GET');
    const get = await served.call('/console/api/approvals/t/approve', { headers: bearer });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
  });
});

describe('the console and secrets', () => {
  it('sends no secret in any answer of any route when tool args, reasons and sources carry one', async () => {
    const { gate, dispatcher } = refunds();
    served = await serve({ gate, health: leakyHealth, inDoubt: inDoubtSource() });
    const session = await served.login(`ana ${secrets.github_token}`);
    const events = await stream(served);
    const note = `${secrets.api_key} ${secrets.aws_key} ${secrets.jwt} ${secrets.slack_token}`;
    const first = tokenOf(
      await dispatcher.dispatch('payments.refund', { amount: 1, note }, { tenant: 'acme' }),
    );
    const second = tokenOf(await dispatcher.dispatch('payments.refund', { amount: 2, note }));
    const third = tokenOf(await dispatcher.dispatch('payments.refund', { amount: 3, note }));
    await served.call('/console/api/session', { headers: { cookie: session.cookie } });
    await served.call('/console/api/approvals', { headers: bearer });
    await served.call(`/console/api/approvals/${first}/approve`, {
      method: 'POST',
      headers: served.sessionPost(session),
      body: JSON.stringify({ args: { amount: 1, note: `edited ${secrets.private_key}` } }),
    });
    await post(`/console/api/approvals/${second}/deny`, { reason: `leaked ${secrets.api_key}` });
    await post(`/console/api/approvals/${third}/approve`, { args: { amount: `${secrets.aws_key}` } });
    await served.call('/console/api/audit', { headers: bearer });
    await served.call('/console/api/health', { headers: bearer });
    await served.call('/console/api/in-doubt', { headers: bearer });
    await post('/console/api/in-doubt/refund%2F7/reconcile');
    await post('/console/api/in-doubt/refund%2F7/resolve', { note: `paid with ${secrets.api_key}` });
    await served.call('/console');
    await events.next('approval.decided');
    await events.next('approval.opened');
    events.close();
    await events.pump;
    const all = `${served.bodies.join('\n')}\n${events.raw()}`;
    expect(all).toContain('[REDACTED:');
    expect(served.bodies.length).toBeGreaterThanOrEqual(12);
    for (const core of secretCores) expect(all).not.toContain(core);
  });
});
