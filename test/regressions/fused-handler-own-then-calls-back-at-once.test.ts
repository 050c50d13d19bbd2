// Found in review: a handler promise whose own `then` calls back at once was reported twice.


import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createDispatcher,
  defaultStack,
  ToolRegistry,
  type DefaultStackOptions,
  type DispatchEvent,
  type Middleware,
  type Outcome,
  type ToolHandler,
} from '../../src/index.js';
import { flush, gate } from '../helpers/gate.js';

const schema = z.object({ n: z.number() });
type Args = z.infer<typeof schema>;

function build(
  handler: ToolHandler<Args>,
  { onion = false, stack = {}, timeoutMs }: { onion?: boolean; stack?: Omit<DefaultStackOptions, 'registry'>; timeoutMs?: number } = {},
) {
  const registry = new ToolRegistry().register({
    name: 'calc',
    inputSchema: schema,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    handler,
  });
  const events: DispatchEvent[] = [];
  const listeners: Array<(event: DispatchEvent) => void> = [];
  const layers = defaultStack({ registry, retry: { random: () => 0, baseDelayMs: 10 }, ...stack });
  const passThrough: Middleware = (_ctx, next) => next();
  const dispatcher = createDispatcher(onion ? [passThrough, ...layers] : layers, {
    onEvent: (event) => {
      events.push(event);
      for (const listener of listeners) listener(event);
    },
  });
  const load = () => (layers[5] as Middleware & { load(): { running: number; queued: number } }).load();
  return { dispatcher, events, listeners, load };
}

// A native promise whose own `then` is replaced: Promise.resolve() returns such a promise as it
// is (its constructor is Promise), so the fused stack calls this `then` itself.
function withOwnThen<T>(promise: Promise<T>, then: (...args: never[]) => unknown): Promise<T> {
  Object.defineProperty(promise, 'then', { value: then, configurable: true });
  return promise;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('a handler promise with a `then` of its own that calls back at once', () => {
  // The fused stack attached its callbacks with the promise's own `then`, which called back
  // before returning; the check for an attempt interrupted while starting then took the ended
  // attempt for an interrupted one, so the call was reported twice and its slot released twice.
  // The built-in `then` always calls back later.
  it('releases its concurrency slot once: running never goes below 0', async () => {
    const { dispatcher, load } = build(
      ({ n }) => {
        const promise = Promise.resolve(n);
        return withOwnThen(promise, ((onFulfilled: (value: number) => void) => {
          onFulfilled(n);
          return promise;
        }) as never);
      },
      { stack: { concurrency: { max: 1 } } },
    );
    expect(await dispatcher.dispatch('calc', { n: 1 })).toEqual({ ok: true, result: 1, attempts: 1 });
    await flush();
    // Onion: { running: 0, queued: 0 }. Fused: { running: -1, queued: 0 }.
    expect(load()).toEqual({ running: 0, queued: 0 });
  });

  it('still keeps concurrency { max: 1 } afterwards: the next two calls do not run at once', async () => {
    const held = gate<number>();
    const { dispatcher, load } = build(
      ({ n }) => {
        if (n !== 0) return held.promise.then((value) => value + n);
        const promise = Promise.resolve(0);
        return withOwnThen(promise, ((onFulfilled: (value: number) => void) => {
          onFulfilled(0);
          return promise;
        }) as never);
      },
      { stack: { concurrency: { max: 1 } } },
    );
    await dispatcher.dispatch('calc', { n: 0 });
    await flush();
    const a = dispatcher.dispatch('calc', { n: 1 });
    const b = dispatcher.dispatch('calc', { n: 2 });
    await flush();
    // SPEC §3.5: at most `max` handlers at once, the others queue. Fused: both run.
    expect(load()).toEqual({ running: 1, queued: 1 });
    held.open(10);
    expect(await a).toEqual({ ok: true, result: 11, attempts: 1 });
    expect(await b).toEqual({ ok: true, result: 12, attempts: 1 });
  });

  // The duplicate report reaches gatherBounded's worker after it has moved on to its next
  // entry: src/gather.ts writes it into that entry's slot and counts the worker as finished, so
  // the batch resolves while a call is still running. SPEC §5: outcomes in input order, one per call.
  it('does not make gatherBounded resolve before every call of the batch has ended', async () => {
    const held = gate<number>();
    const { dispatcher } = build(({ n }) => {
      if (n === 1) return held.promise;
      const promise = Promise.resolve(n);
      return withOwnThen(promise, ((onFulfilled: (value: number) => void) => {
        onFulfilled(n);
        return promise;
      }) as never);
    });
    let outcomes: Outcome[] | undefined;
    void dispatcher
      .gatherBounded(
        [
          { name: 'calc', args: { n: 0 } },
          { name: 'calc', args: { n: 1 } },
        ],
        { concurrency: 1 },
      )
      .then((value) => (outcomes = value));
    await flush();
    // Onion: still pending, call 1's handler has not answered. Fused: resolved, with call 0's
    // outcome written into slot 1.
    expect(outcomes).toBeUndefined();
    held.open(11);
    await flush();
    expect(outcomes).toEqual([
      { ok: true, result: 0, attempts: 1 },
      { ok: true, result: 11, attempts: 1 },
    ]);
  });
});

