// The tools, clock and dispatcher the AI SDK suite drives through generateText and streamText.

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

/** One detail of an event, whatever its type. */
export function detail(event: DispatchEvent, key: string): unknown {
  return (event as unknown as Record<string, unknown>)[key];
}

/** A clock whose timers fire only when the test advances it. */
export interface ManualClock extends Clock {
  /** Moves time on by `ms` and runs every timer that came due, in order. */
  advance(ms: number): void;
}

/** Makes a manual clock starting at a fixed epoch time. */
export function manualClock(start = 1_700_000_000_000): ManualClock {
  let now = start;
  let seq = 0;
  const timers = new Map<number, { at: number; callback: () => void }>();
  return {
    now: () => now,
    setTimeout(callback, ms) {
      seq += 1;
      timers.set(seq, { at: now + ms, callback });
      return seq;
    },
    clearTimeout(handle) {
      timers.delete(handle as number);
    },
    advance(ms) {
      now += ms;
      for (;;) {
        const due = [...timers].filter(([, timer]) => timer.at <= now).sort((a, b) => a[1].at - b[1].at)[0];
        if (due === undefined) return;
        timers.delete(due[0]);
        due[1].callback();
      }
    },
  };
}

/** A registry of five tools, a default-stack dispatcher on a manual clock, and what they saw. */
export function fixture() {
  const clock = manualClock();
  const contexts: ToolContext[] = [];
  const charges: number[] = [];
  const started = new Map<string, Gate>();
  const release = new Map<string, Gate>();
  const startedGate = (callId: string) => {
    let entry = started.get(callId);
    if (entry === undefined) started.set(callId, (entry = gate()));
    return entry;
  };
  /** Holds the handler of `callId` until `open()` is called on the returned gate. */
  const hold = (callId: string): Gate => {
    const entry = gate();
    release.set(callId, entry);
    return entry;
  };
  const enter = async (ctx: ToolContext) => {
    contexts.push(ctx);
    startedGate(ctx.callId).open();
    await release.get(ctx.callId)?.promise;
  };

  const registry = new ToolRegistry()
    .register({
      name: 'search.web',
      description: 'Search the web',
      inputSchema: z.object({ query: z.string() }),
      idempotent: true,
      handler: async ({ query }, ctx) => {
        await enter(ctx);
        return { hits: [`${query}-1`, `${query}-2`] };
      },
    })
    .register({
      name: 'pay.charge',
      description: 'Charge a card',
      inputSchema: z.object({ amount: z.number() }),
      handler: async ({ amount }, ctx) => {
        await enter(ctx);
        if (amount > 100) throw new ToolError('card declined');
        charges.push(amount);
        return `charged ${amount}`;
      },
    })
    .register({
      name: 'flaky.fetch',
      description: 'Fails once, then works',
      inputSchema: z.object({}),
      handler: async (_args, ctx) => {
        await enter(ctx);
        if (ctx.attempt === 1) throw new TransientError('connection reset');
        return 'fetched';
      },
    })
    .register({
      name: 'slow.job',
      description: 'Never answers before its 50 ms timeout',
      inputSchema: z.object({}),
      timeoutMs: 50,
      handler: (_args, ctx) => {
        contexts.push(ctx);
        startedGate(ctx.callId).open();
        return new Promise<never>((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
        });
      },
    });

  const events: DispatchEvent[] = [];
  const eventGates = new Map<string, Gate>();
  const dispatcher = createDispatcher(
    defaultStack({ registry, retry: { random: () => 0, clock }, timeout: { clock } }),
    {
      now: clock.now,
      onEvent: (event) => {
        events.push(event);
        eventGates.get(event.type)?.open();
      },
    },
  );
  /** Resolves at the next event of `type`. */
  const nextEvent = (type: string): Promise<void> => {
    const entry = gate();
    eventGates.set(type, entry);
    return entry.promise;
  };
  /** Resolves once the handler of `callId` has started. */
  const whenStarted = (callId: string): Promise<void> => startedGate(callId).promise;
  const dispatched = () =>
    events.filter((event) => event.type === 'dispatch.attempt').map((event) => event.tool);
  const failures = () =>
    events
      .filter((event) => event.type === 'dispatch.failure')
      .map((event) => `${event.tool}:${String(detail(event, 'kind'))}`);

  return {
    registry,
    dispatcher,
    clock,
    contexts,
    charges,
    events,
    hold,
    whenStarted,
    nextEvent,
    dispatched,
    failures,
  };
}
