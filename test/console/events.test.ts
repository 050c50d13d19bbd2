// The console's event stream: newly pending requests (listed while a stream is open), decisions made
// anywhere, health reports and in-doubt changes; every stream and source released on client close
// and on room.close().

import { afterEach, describe, expect, it, vi } from 'vitest';
import type {
  HealthReport,
  HealthSource,
  InDoubtItem,
  InDoubtSource,
} from '../../integrations/console/index.js';
import { bearer, refunds, serve, type Served, stream, tokenOf } from './room.js';

let served: Served | undefined;
afterEach(async () => {
  await served?.stop();
  served = undefined;
});

function healthSource() {
  const listeners = new Set<(report: HealthReport) => void>();
  let subscribed = 0;
  const source: HealthSource = {
    report: () => ({ at: 1, windowMs: 60_000, tools: [], processes: 1 }),
    subscribe: (listener) => {
      subscribed += 1;
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
  };
  return { source, listeners, subscribed: () => subscribed };
}

function inDoubtSource(items: InDoubtItem[]) {
  let reads = 0;
  const source: InDoubtSource = {
    list: async () => {
      reads += 1;
      return [...items];
    },
    reconcile: async () => ({ status: 'succeeded', verdict: 'committed' }),
    resolve: async () => ({ status: 'failed', verdict: 'resolved' }),
  };
  return { source, reads: () => reads };
}

describe('the console event stream', () => {
  it('sends approval.opened for a call paused after it opened, and approval.decided for the decision', async () => {
    const { gate, dispatcher } = refunds();
    served = await serve({ gate });
    const before = tokenOf(await dispatcher.dispatch('payments.refund', { amount: 1 }));
    const events = await stream(served);
    const paused = tokenOf(
      await dispatcher.dispatch('payments.refund', { amount: 2 }, { tenant: 'acme', callId: 'c-9' }),
    );
    const opened = await events.next('approval.opened');
    expect(opened.data).toMatchObject({
      token: paused,
      tool: 'payments.refund',
      preview: '{"amount":2}',
      callId: 'c-9',
      tenant: 'acme',
    });
    expect(events.received.filter((item) => item.data.token === before)).toEqual([]);
    await gate.approve(paused, { by: 'bo', channel: 'host' });
    const decided = await events.next('approval.decided');
    expect(decided.data).toMatchObject({ token: paused, decision: 'approved', by: 'bo', channel: 'host' });
    expect(decided.data.type).toBeUndefined();
    events.close();
    await events.pump;
  });

  it('forwards health reports and sends in-doubt when the list changes', async () => {
    const health = healthSource();
    const items: InDoubtItem[] = [];
    const inDoubt = inDoubtSource(items);
    served = await serve({ health: health.source, inDoubt: inDoubt.source });
    const events = await stream(served);
    expect(health.listeners.size).toBe(1);
    for (const listener of health.listeners) listener({ at: 2, windowMs: 60_000, tools: [], processes: 3 });
    expect((await events.next('health')).data).toEqual({ at: 2, windowMs: 60_000, tools: [], processes: 3 });
    items.push({
      key: 'k-1',
      tool: 'payments.refund',
      window: 'connection_lost',
      startedAt: 1,
      attempts: 1,
      canReconcile: true,
    });
    const changed = await events.next('in-doubt');
    expect(changed.data.items).toEqual([expect.objectContaining({ key: 'k-1' })]);
    events.close();
    await events.pump;
  }, 20_000);

  it('stops listening and polling once the last stream closes, and starts again for the next', async () => {
    const health = healthSource();
    const inDoubt = inDoubtSource([]);
    const { gate } = refunds();
    served = await serve({ gate, health: health.source, inDoubt: inDoubt.source });
    const first = await stream(served);
    const second = await stream(served);
    expect(health.subscribed()).toBe(1);
    first.close();
    await first.pump;
    expect(health.listeners.size).toBe(1);
    second.close();
    await second.pump;
    await waitFor(() => health.listeners.size === 0);
    const reads = inDoubt.reads();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(inDoubt.reads()).toBe(reads);
    const third = await stream(served);
    expect(health.subscribed()).toBe(2);
    expect(health.listeners.size).toBe(1);
    third.close();
    await third.pump;
  });

  it('ends every stream on room.close(), releases every source, and lets the server close at once', async () => {
    const health = healthSource();
    const { gate, dispatcher } = refunds();
    served = await serve({ gate, health: health.source });
    const events = await stream(served);
    await room(served).close();
    await events.pump;
    expect(events.ended()).toBe(true);
    expect(health.listeners.size).toBe(0);
    // Nothing is left to keep the server open: it closes with no connection forced shut.
    await new Promise<void>((resolve, reject) =>
      served!.server.close((error) => (error ? reject(error) : resolve())),
    );
    const late = tokenOf(await dispatcher.dispatch('payments.refund', { amount: 3 }));
    expect(late).toEqual(expect.any(String));
    served = undefined;
  });

  it('sends a ping comment every 15 s, and stops when the stream closes', async () => {
    // Only the interval is faked: the server, the client and the polls run on real timers.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      served = await serve();
      const events = await stream(served);
      expect(vi.getTimerCount()).toBe(1);
      vi.advanceTimersByTime(15_000);
      vi.advanceTimersByTime(15_000);
      await waitFor(() => events.raw().split(': ping\n\n').length === 3);
      events.close();
      await events.pump;
      await waitFor(() => vi.getTimerCount() === 0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('answers 503 once closed', async () => {
    served = await serve();
    await served.room.close();
    const answer = await served.call('/console/healthz', { headers: bearer });
    expect(answer.status).toBe(503);
    expect(answer.json).toEqual({ error: 'closed', message: 'the console is closed' });
  });
});

function room(served: Served) {
  return served.room;
}

async function waitFor(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 5));
}
