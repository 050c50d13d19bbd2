// The console suites' fixture: a real approval gate over a zod tool and the memory store, a
// default-stack dispatcher, and a control room served by a real node:http server on 127.0.0.1:0.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import { z } from 'zod';
import {
  approvalGate,
  createDispatcher,
  defaultStack,
  memoryApprovalStore,
  ToolRegistry,
  type ApprovalStore,
  type Outcome,
} from '../../index.js';
import { controlRoom, type ControlRoom, type ControlRoomOptions } from '../../integrations/console/index.js';

export const token = 'console-token-0123456789abcdef';

/** A clock a test moves by hand. */
export function manualClock(start = 1_750_000_000_000) {
  const clock = { at: start, now: () => clock.at };
  return clock;
}

/** A zod refund tool that always needs approval, its gate and dispatcher, and the runs it made. */
export function refunds(store: ApprovalStore = memoryApprovalStore()) {
  const runs: Array<{ amount: number; note?: string | undefined }> = [];
  const registry = new ToolRegistry().register({
    name: 'payments.refund',
    inputSchema: z.object({ amount: z.number().max(1_000), note: z.string().optional() }),
    requiresApproval: true,
    handler: async (args) => {
      runs.push(args);
      return { refunded: args.amount };
    },
  });
  const gate = approvalGate({ registry, store });
  const dispatcher = createDispatcher(defaultStack({ registry, approval: gate }));
  return { registry, gate, dispatcher, runs, store };
}

/** The approval token of a paused call. */
export function tokenOf(outcome: Outcome): string {
  if (outcome.ok || outcome.approval === undefined) {
    throw new Error(`expected approval_required, got ${JSON.stringify(outcome)}`);
  }
  return outcome.approval.token;
}

/** A room served on 127.0.0.1:0, and a client that records every body it reads. */
export interface Served {
  readonly room: ControlRoom;
  readonly server: Server;
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
  /** Every response body read through `call`, for the no-secret sweep. */
  readonly bodies: string[];
  /** Fetches `path` (under the origin), records the body, answers the status, headers, text and JSON. */
  call(path: string, init?: RequestInit): Promise<Answer>;
  /** Logs in; answers the cookie header and the CSRF token. */
  login(name?: string): Promise<{ cookie: string; csrf: string }>;
  /** Headers for a POST with a session: cookie, same origin, CSRF token, JSON. */
  sessionPost(session: { cookie: string; csrf: string }): Record<string, string>;
  /** Closes the room, then the server. */
  stop(): Promise<void>;
}

/** One answer. */
export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  // biome-ignore lint/suspicious/noExplicitAny: the tests read the answers' fields freely
  readonly json: any;
}

export const bearer = { authorization: `Bearer ${token}` };

/** Serves a room made with `options` (the token is the fixture's unless given). */
export async function serve(
  options: Omit<ControlRoomOptions, 'token'> & { token?: string } = {},
): Promise<Served> {
  const room = controlRoom({ token, ...options });
  const server = createServer(room.handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  const bodies: string[] = [];
  const call = async (path: string, init: RequestInit = {}): Promise<Answer> => {
    const response = await fetch(`${origin}${path}`, { redirect: 'manual', ...init });
    const text = await response.text();
    bodies.push(text);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: response.status, headers: response.headers, text, json };
  };
  const login = async (name = 'ana') => {
    const answer = await call('/console/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin },
      body: JSON.stringify({ token, name }),
    });
    if (answer.status !== 200) throw new Error(`login failed: ${answer.status} ${answer.text}`);
    const cookie = (answer.headers.get('set-cookie') ?? '').split(';', 1)[0] as string;
    return { cookie, csrf: answer.json.csrf as string };
  };
  const sessionPost = (session: { cookie: string; csrf: string }) => ({
    cookie: session.cookie,
    origin,
    'x-csrf-token': session.csrf,
    'content-type': 'application/json',
  });
  const stop = async () => {
    await room.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { room, server, origin, bodies, call, login, sessionPost, stop };
}

export interface Received {
  readonly event: string;
  // biome-ignore lint/suspicious/noExplicitAny: the tests read the events' fields freely
  readonly data: any;
}

/** An open stream: the events as they come, a wait for the next of a type, and the close. */
export async function stream(served: Served) {
  const abort = new AbortController();
  const response = await fetch(`${served.origin}/console/api/events`, {
    headers: bearer,
    signal: abort.signal,
  });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const received: Received[] = [];
  let raw = '';
  let buffer = '';
  let ended = false;
  const pump = (async () => {
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done) break;
      const text = decoder.decode(value, { stream: true });
      raw += text;
      buffer += text;
      let end = buffer.indexOf('\n\n');
      while (end !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (event !== undefined && data !== undefined) received.push({ event, data: JSON.parse(data) });
        end = buffer.indexOf('\n\n');
      }
    }
    ended = true;
  })();
  const next = async (event: string, from = 0): Promise<Received> => {
    for (;;) {
      const found = received.slice(from).find((item) => item.event === event);
      if (found !== undefined) return found;
      if (ended) throw new Error(`the stream ended before ${event}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  return {
    received,
    next,
    raw: () => raw,
    ended: () => ended,
    pump,
    close: () => abort.abort(),
  };
}
