// Tools, a dispatcher with controllable time, and a manual clock, shared by the OpenAI and
// Anthropic toolkit tests.

import { z } from 'zod';
import {
  createDispatcher,
  defaultStack,
  ToolError,
  ToolRegistry,
  TransientError,
  type Clock,
  type DispatchEvent,
  type ToolContext,
} from '../../../index.js';
import { gate, type Gate } from '../../helpers/gate.js';

/** A clock whose timers run only when the test advances it. */
export class ManualClock implements Clock {
  #now = 1_000_000;
  #timers = new Map<number, { at: number; callback: () => void }>();
  #next = 0;
  now(): number {
    return this.#now;
  }
  setTimeout(callback: () => void, ms: number): unknown {
    const id = this.#next++;
    this.#timers.set(id, { at: this.#now + ms, callback });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.#timers.delete(handle as number);
  }
  /** Timers waiting. */
  get pending(): number {
    return this.#timers.size;
  }
  /** Moves time on by `ms`, running each timer that falls due, in order. */
  advance(ms: number): void {
    const until = this.#now + ms;
    for (;;) {
      const due = [...this.#timers.entries()]
        .filter(([, timer]) => timer.at <= until)
        .sort((a, b) => a[1].at - b[1].at)[0];
      if (due === undefined) break;
      this.#timers.delete(due[0]);
      this.#now = due[1].at;
      due[1].callback();
    }
    this.#now = until;
  }
}

/** Retries with no wait: the backoff timer fires a microtask later. */
export const immediateClock: Pick<Clock, 'setTimeout' | 'clearTimeout'> = {
  setTimeout: (callback) => {
    queueMicrotask(callback);
    return 0;
  },
  clearTimeout: () => {},
};

/** What the tools did, for assertions. */
export interface ToolLog {
  searches: Array<{ query: string; limit?: number | undefined }>;
  charges: Array<{ amount: number; key: string | undefined; callId: string }>;
  flakyAttempts: number;
  /** The gate a `slow.wait` call waits on (a fresh one per call). */
  slowGates: Array<Gate<string>>;
  /** The signals `slow.wait` calls saw. */
  slowSignals: AbortSignal[];
}

/**
 * A registry with the tools the loops call: `search.web` (idempotent), `pay.charge` (declines
 * over 100 with a ToolError), `flaky.fetch` (fails transiently once), `slow.wait` (waits on a
 * gate or its signal; not idempotent, so a timeout is final), `time.now` (no args), `db.crash` (throws an error with stack lines in its
 * message), and a dispatcher whose timeout runs on `clock`.
 */
export function toolsFixture() {
  const log: ToolLog = { searches: [], charges: [], flakyAttempts: 0, slowGates: [], slowSignals: [] };
  const registry = new ToolRegistry()
    .register({
      name: 'search.web',
      description: 'Search the web',
      inputSchema: z.object({ query: z.string(), limit: z.number().int().optional() }),
      idempotent: true,
      handler: ({ query, limit }) => {
        log.searches.push({ query, limit });
        return { hits: [`${query}-1`], limit: limit ?? null };
      },
    })
    .register({
      name: 'pay.charge',
      description: 'Charge a card',
      inputSchema: z.object({ amount: z.number() }),
      handler: ({ amount }, ctx: ToolContext) => {
        if (amount > 100) throw new ToolError(`The card was declined for ${amount}`);
        log.charges.push({ amount, key: ctx.idempotencyKey, callId: ctx.callId });
        return { charged: amount, n: log.charges.length };
      },
    })
    .register({
      name: 'flaky.fetch',
      description: 'Fails once, then works',
      inputSchema: z.object({ url: z.string() }),
      handler: ({ url }) => {
        log.flakyAttempts++;
        if (log.flakyAttempts === 1) throw new TransientError('connection reset');
        return `fetched ${url}`;
      },
    })
    .register({
      name: 'slow.wait',
      description: 'Waits until released',
      inputSchema: z.object({}),
      timeoutMs: 5_000,
      handler: (_args, ctx) => {
        const released = gate<string>();
        log.slowGates.push(released);
        log.slowSignals.push(ctx.signal);
        return new Promise<string>((resolve, reject) => {
          ctx.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
          void released.promise.then(resolve);
        });
      },
    })
    .register({
      name: 'time.now',
      description: 'The time',
      inputSchema: z.object({}),
      handler: () => '2026-01-01T00:00:00Z',
    })
    .register({
      name: 'db.crash',
      description: 'Always crashes',
      inputSchema: z.object({}),
      handler: () => {
        throw new Error('database exploded\n    at secret (/srv/db.js:1:1)');
      },
    });
  const clock = new ManualClock();
  const events: DispatchEvent[] = [];
  const dispatcher = createDispatcher(
    defaultStack({ registry, retry: { random: () => 0, clock: immediateClock }, timeout: { clock } }),
    { onEvent: (event) => events.push(event) },
  );
  return { registry, dispatcher, log, clock, events };
}
