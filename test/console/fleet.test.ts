// Two worker processes on one redis-server, each with a dispatcher, an approval gate on the Redis
// approval store and a control room: a call paused on A shows in B's console (its list and its event
// stream), B's approval reaches A's stream and A's resumed call runs the handler once; a deny in A's
// console reaches B's stream and B's resumed call is refused. Every wait is for an event, bounded.

import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisSuitesEnabled, startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import type { ConsoleWorkerConfig, FromWorker, ToWorker } from './fleet-worker.js';
import { bearer, type Served, stream, token } from './room.js';

const workerPath = fileURLToPath(new URL('./fleet-worker.ts', import.meta.url));
const enabled = redisSuitesEnabled('console fleet');
// The bound on every wait: far above the console's 250 ms listing and Redis pub/sub, yet a hang fails.
const boundMs = 10_000;

interface Worker {
  readonly name: string;
  readonly child: ChildProcess;
  readonly origin: string;
  dispatch(amount: number, approval?: string): Promise<Extract<FromWorker, { type: 'dispatched' }>>;
}

async function startWorker(name: string, redisUrl: string, prefix: string): Promise<Worker> {
  const config: ConsoleWorkerConfig = { name, redisUrl, prefix, token };
  const child = fork(workerPath, [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, TD_CONSOLE_WORKER: JSON.stringify(config) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const waiting = new Map<number, (message: Extract<FromWorker, { type: 'dispatched' }>) => void>();
  let next = 0;
  const ready = new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`worker ${name} exited ${String(code)}`)));
    child.on('message', (message: FromWorker) => {
      if (message.type === 'ready') resolve(message.origin);
      else waiting.get(message.id)?.(message);
    });
  });
  const origin = await within(ready, `worker ${name} to start`, 30_000);
  return {
    name,
    child,
    origin,
    dispatch: (amount, approval) => {
      const id = next++;
      const answered = new Promise<Extract<FromWorker, { type: 'dispatched' }>>((resolve) =>
        waiting.set(id, resolve),
      );
      const message: ToWorker = {
        type: 'dispatch',
        id,
        amount,
        ...(approval === undefined ? {} : { approval }),
      };
      child.send(message);
      return within(answered, `worker ${name} to answer a dispatch`);
    },
  };
}

async function within<T>(promise: Promise<T>, what: string, ms = boundMs): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`waited ${ms} ms for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

type Events = Awaited<ReturnType<typeof stream>>;

// The stream's next event of `type` about `approval`.
function eventAbout(events: Events, type: string, approval: string, what: string, ms = boundMs) {
  const found = (async () => {
    for (;;) {
      const hit = events.received.find((item) => item.event === type && item.data.token === approval);
      if (hit !== undefined) return hit;
      if (events.ended()) throw new Error(`the stream ended before ${type} ${approval}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  return within(found, what, ms);
}

const streamOf = (worker: Worker) => stream({ origin: worker.origin } as Served);

describe.skipIf(!enabled)('the console across two worker processes on one redis-server', () => {
  let redis: RedisServer;
  let a: Worker;
  let b: Worker;
  let onA: Events;
  let onB: Events;

  beforeAll(async () => {
    redis = await startRedisServer();
    const prefix = `console-fleet-${process.pid}`;
    [a, b] = await Promise.all([startWorker('A', redis.url, prefix), startWorker('B', redis.url, prefix)]);
    onA = await streamOf(a);
    onB = await streamOf(b);
    await streamsListening();
  }, 60_000);

  afterAll(async () => {
    onA?.close();
    onB?.close();
    for (const worker of [a, b]) {
      if (worker === undefined || worker.child.exitCode !== null) continue;
      const exited = once(worker.child, 'exit');
      worker.child.send({ type: 'stop' } satisfies ToWorker);
      await within(exited, `worker ${worker.name} to stop`).catch(() => worker.child.kill('SIGKILL'));
    }
    await redis?.stop();
  });

  // A stream lists the pending requests once to set its baseline and subscribes to decisions on
  // Redis: both land a moment after it opens. A warm-up request is paused on A and denied until both
  // streams have announced one (baseline set) and heard its decision (subscribed).
  async function streamsListening(): Promise<void> {
    for (let round = 0; ; round++) {
      const warm = (await a.dispatch(1)).approval as string;
      const opened = await Promise.all([
        eventAbout(onA, 'approval.opened', warm, 'a warm-up opening on A', 2_000).catch(() => undefined),
        eventAbout(onB, 'approval.opened', warm, 'a warm-up opening on B', 2_000).catch(() => undefined),
      ]);
      const denied = await fetch(`${a.origin}/console/api/approvals/${warm}/deny`, {
        method: 'POST',
        headers: { ...bearer, 'content-type': 'application/json' },
        body: JSON.stringify({ reason: 'warm-up' }),
      });
      expect(denied.status).toBe(200);
      const decided = await Promise.all([
        eventAbout(onA, 'approval.decided', warm, 'a warm-up decision on A', 2_000).catch(() => undefined),
        eventAbout(onB, 'approval.decided', warm, 'a warm-up decision on B', 2_000).catch(() => undefined),
      ]);
      if ([...opened, ...decided].every((event) => event !== undefined)) return;
      if (round === 5) throw new Error('the streams never heard a warm-up request');
    }
  }

  it('shows a call paused on A in B’s list and stream; B’s approval reaches A, whose resumed call runs once', async () => {
    const paused = await a.dispatch(42);
    expect(paused).toMatchObject({ ok: false, kind: 'approval_required', runs: 0 });
    const approval = paused.approval as string;

    const listed = await fetch(`${b.origin}/console/api/approvals`, { headers: bearer });
    expect(listed.status).toBe(200);
    const { items } = (await listed.json()) as {
      items: Array<{ token: string; tool: string; preview?: string }>;
    };
    expect(items.map((item) => item.token)).toEqual([approval]);
    expect(items[0]).toMatchObject({ tool: 'payments.refund', preview: '{"amount":42}' });
    const opened = await eventAbout(onB, 'approval.opened', approval, 'B to announce the request');
    expect(opened.data).toMatchObject({ token: approval, tool: 'payments.refund' });

    const approved = await fetch(`${b.origin}/console/api/approvals/${approval}/approve`, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(approved.status).toBe(200);
    const decided = await eventAbout(onA, 'approval.decided', approval, 'A to hear B’s approval');
    expect(decided.data).toMatchObject({ token: approval, decision: 'approved', channel: 'console' });

    expect(await a.dispatch(42, approval)).toMatchObject({ ok: true, runs: 1 });
    // Delivered again, on either process, the approval gives back the one run and runs nothing.
    expect(await b.dispatch(42, approval)).toMatchObject({ ok: true, runs: 0 });
    expect(await a.dispatch(42, approval)).toMatchObject({ ok: true, runs: 1 });
    const after = await fetch(`${a.origin}/console/api/approvals`, { headers: bearer });
    expect(((await after.json()) as { items: unknown[] }).items).toEqual([]);
  }, 60_000);

  it('sends a deny made in A’s console, by a person logged in there, to B, whose resumed call is refused', async () => {
    const paused = await b.dispatch(7);
    const approval = paused.approval as string;
    await eventAbout(onA, 'approval.opened', approval, 'A to announce the request paused on B');

    const login = await fetch(`${a.origin}/console/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: a.origin },
      body: JSON.stringify({ token, name: 'rui' }),
    });
    expect(login.status).toBe(200);
    const { csrf } = (await login.json()) as { csrf: string };
    const cookie = (login.headers.get('set-cookie') ?? '').split(';', 1)[0] as string;
    const denied = await fetch(`${a.origin}/console/api/approvals/${approval}/deny`, {
      method: 'POST',
      headers: { cookie, origin: a.origin, 'x-csrf-token': csrf, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'not this customer' }),
    });
    expect(denied.status).toBe(200);

    const decided = await eventAbout(onB, 'approval.decided', approval, 'B to hear A’s deny');
    expect(decided.data).toMatchObject({
      token: approval,
      decision: 'denied',
      by: 'rui',
      reason: 'not this customer',
      channel: 'console',
    });
    const resumed = await b.dispatch(7, approval);
    expect(resumed).toMatchObject({ ok: false, kind: 'approval_denied', runs: 0 });
    // Approving it afterwards, in B's console, is a conflict: the deny stands.
    const late = await fetch(`${b.origin}/console/api/approvals/${approval}/approve`, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(late.status).toBe(409);
  }, 60_000);
});
