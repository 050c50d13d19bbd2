// The default stack as one onion: how its calls end, bare and behind a layer of the caller's own.

import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  circuitBreaker,
  createDispatcher,
  defaultStack,
  ToolRegistry,
  TransientError,
  type DefaultStackOptions,
  type DispatchEvent,
  type Middleware,
  type Outcome,
  type ToolHandler,
} from '../index.js';
import { flush, gate } from './helpers/gate.js';
import { buildStack, calcSchema, type CalcArgs, type StackFormOptions } from './helpers/stack-forms.js';

const schema = calcSchema;
type Args = CalcArgs;

interface Run {
  outcome: unknown;
  events: string[];
}

// The same scenario through the default stack, bare and behind a pass-through layer.
function both(
  handler: ToolHandler<Args>,
  stack: Omit<DefaultStackOptions, 'registry'> = {},
  tool: Pick<StackFormOptions, 'idempotent' | 'timeoutMs' | 'inputSchema'> = {},
) {
  return {
    bare: buildStack(handler, { stack, ...tool }),
    behind: buildStack(handler, { behindLayer: true, stack, ...tool }),
  };
}

async function settle(pending: Promise<Outcome>, events: DispatchEvent[]): Promise<Run> {
  await vi.runAllTimersAsync();
  const outcome = await pending;
  return { outcome: { ...outcome }, events: events.map((event) => event.type) };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('the default stack', () => {
  it.each<[string, ToolHandler<Args>]>([
    ['an async success', async ({ n }) => n * 2],
    ['a sync success', ({ n }) => n * 2],
    [
      'a sync throw',
      () => {
        throw new Error('broken');
      },
    ],
    [
      'a transient failure then a success',
      (({ n }, ctx) => {
        if (ctx.attempt === 1) throw new TransientError('busy');
        return n;
      }) as ToolHandler<Args>,
    ],
    [
      'transient failures until attempts run out',
      async () => {
        throw new TransientError('busy');
      },
    ],
    [
      'a thenable',
      ({ n }) => ({ then: (resolve: (value: number) => void) => resolve(n) }) as unknown as number,
    ],
  ])('ends %s the same, bare or behind a layer of the caller', async (_label, handler) => {
    vi.useFakeTimers();
    const { bare, behind } = both(handler);
    const a = await settle(bare.dispatcher.dispatch('calc', { n: 2 }), bare.events);
    const b = await settle(behind.dispatcher.dispatch('calc', { n: 2 }), behind.events);
    expect(a).toEqual(b);
  });

  it('ends not_found, schema and budget failures without an attempt, bare or behind a layer', async () => {
    const { bare, behind } = both(({ n }) => n);
    for (const [name, args, options] of [
      ['nope', { n: 1 }, {}],
      ['calc', { n: 'one' }, {}],
      ['calc', { n: 1 }, { budget: 0 }],
    ] as const) {
      const a = await bare.dispatcher.dispatch(name, args, options);
      const b = await behind.dispatcher.dispatch(name, args, options);
      expect(a).toEqual(b);
      expect(a).toMatchObject({ ok: false, attempts: 0 });
    }
  });

  it('times out a first attempt and retries an idempotent tool', async () => {
    vi.useFakeTimers();
    const handler: ToolHandler<Args> = (_args, ctx) =>
      ctx.attempt === 1 ? new Promise<number>(() => {}) : Promise.resolve(7);
    const { bare, behind } = both(handler, {}, { idempotent: true, timeoutMs: 50 });
    const a = await settle(bare.dispatcher.dispatch('calc', { n: 1 }), bare.events);
    const b = await settle(behind.dispatcher.dispatch('calc', { n: 1 }), behind.events);
    expect(a).toEqual(b);
    expect(a.outcome).toEqual({ ok: true, result: 7, attempts: 2 });
    expect(a.events).toEqual([
      'dispatch.attempt',
      'dispatch.timeout',
      'dispatch.attempt_failed',
      'dispatch.retry',
      'dispatch.attempt',
      'dispatch.success',
    ]);
  });

  it('aborts the first attempt on time with its own clock when the dispatcher has another', async () => {
    vi.useFakeTimers();
    const registry = new ToolRegistry().register({
      name: 'calc',
      inputSchema: schema,
      timeoutMs: 100,
      handler: (_args, ctx) =>
        new Promise<number>((_resolve, reject) =>
          ctx.signal.addEventListener('abort', () => reject(new Error('aborted'))),
        ),
    });
    // A dispatcher clock stuck at 0 must not move the deadline: it is read on the layer's clock.
    const dispatcher = createDispatcher(defaultStack({ registry }), { now: () => 0 });
    let outcome: Outcome | undefined;
    void dispatcher.dispatch('calc', { n: 1 }).then((value) => (outcome = value));
    await vi.advanceTimersByTimeAsync(99);
    expect(outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(outcome).toMatchObject({ ok: false, kind: 'timeout', attempts: 1 });
  });

  it('runs a call with an idempotency key, a queued call and an async validator', async () => {
    const held = gate<number>();
    const asyncSchema = schema.refine(async () => true);
    const { bare } = both(() => held.promise, { concurrency: { max: 1 } }, { inputSchema: asyncSchema });
    const first = bare.dispatcher.dispatch('calc', { n: 1 }, { idempotencyKey: 'k' });
    const joined = bare.dispatcher.dispatch('calc', { n: 1 }, { idempotencyKey: 'k' });
    const queued = bare.dispatcher.dispatch('calc', { n: 2 });
    await flush();
    expect(bare.events.map((event) => event.type)).toContain('concurrency.queued');
    held.open(5);
    expect(await first).toEqual({ ok: true, result: 5, attempts: 1 });
    expect(await joined).toEqual({ ok: true, result: 5, attempts: 0 });
    expect(await queued).toEqual({ ok: true, result: 5, attempts: 1 });
    expect(bare.load()).toEqual({ running: 0, queued: 0 });
  });

  it('answers a caller abort at once, frees the slot and aborts the handler', async () => {
    const held = gate<number>();
    let handlerSignal: AbortSignal | undefined;
    const { bare } = both((_args, ctx) => {
      handlerSignal = ctx.signal;
      return held.promise;
    });
    const controller = new AbortController();
    const pending = bare.dispatcher.dispatch('calc', { n: 1 }, { signal: controller.signal });
    controller.abort(new Error('user gave up'));
    expect(await pending).toMatchObject({ ok: false, kind: 'cancelled', attempts: 1 });
    await flush();
    expect(handlerSignal?.aborted).toBe(true);
    expect(bare.load()).toEqual({ running: 0, queued: 0 });
    held.open(1);
  });

  it('runs a layer spliced in among its layers', async () => {
    const seen: string[] = [];
    const registry = new ToolRegistry().register({
      name: 'calc',
      inputSchema: schema,
      handler: ({ n }) => n,
    });
    const layers = defaultStack({ registry });
    const watch: Middleware = async (ctx, next) => {
      seen.push(ctx.toolName);
      await next();
    };
    const withLayer = createDispatcher([...layers.slice(0, 7), watch, ...layers.slice(7)]);
    expect(await withLayer.dispatch('calc', { n: 3 })).toEqual({ ok: true, result: 3, attempts: 1 });
    expect(seen).toEqual(['calc']);
  });
});

describe('gatherBounded without a promise per call', () => {
  it('runs a long batch of synchronous handlers without growing the stack', async () => {
    const registry = new ToolRegistry().register({
      name: 'calc',
      inputSchema: schema,
      handler: ({ n }) => n,
    });
    const dispatcher = createDispatcher(defaultStack({ registry }));
    const calls = Array.from({ length: 50_000 }, (_, n) => ({ name: 'calc', args: { n } }));
    const outcomes = await dispatcher.gatherBounded(calls, { concurrency: 3 });
    expect(outcomes).toHaveLength(50_000);
    expect(outcomes.every((outcome, n) => outcome.ok && outcome.result === n)).toBe(true);
  });

  it('ends an entry whose fields cannot be read with an envelope, not a rejected batch', async () => {
    const registry = new ToolRegistry().register({
      name: 'calc',
      inputSchema: schema,
      handler: ({ n }) => n,
    });
    const dispatcher = createDispatcher(defaultStack({ registry }));
    const hostile = {
      get name(): string {
        throw new Error('no name for you');
      },
      args: { n: 1 },
    };
    const outcomes = await dispatcher.gatherBounded([hostile, { name: 'calc', args: { n: 2 } }]);
    expect(outcomes[0]).toMatchObject({ ok: false, kind: 'schema', attempts: 0 });
    expect(outcomes[0]?.ok === false && outcomes[0].message).toContain('no name for you');
    expect(outcomes[1]).toEqual({ ok: true, result: 2, attempts: 1 });
  });

  it('ends every call with an envelope when the injected clock throws', async () => {
    const registry = new ToolRegistry().register({
      name: 'calc',
      inputSchema: schema,
      handler: ({ n }) => n,
    });
    const dispatcher = createDispatcher(defaultStack({ registry }), {
      now: () => {
        throw new Error('clock broke');
      },
    });
    await expect(dispatcher.dispatch('calc', { n: 1 })).resolves.toMatchObject({
      ok: false,
      kind: 'internal',
    });
    const outcomes = await dispatcher.gatherBounded([{ name: 'calc', args: { n: 1 } }]);
    expect(outcomes[0]).toMatchObject({ ok: false, kind: 'internal' });
  });

  it('keeps at most `concurrency` calls running, in input order', async () => {
    const gates = Array.from({ length: 6 }, () => gate<number>());
    let running = 0;
    let most = 0;
    const registry = new ToolRegistry().register({
      name: 'calc',
      inputSchema: schema,
      handler: async ({ n }) => {
        running += 1;
        most = Math.max(most, running);
        const value = await (gates[n] as (typeof gates)[number]).promise;
        running -= 1;
        return value;
      },
    });
    const dispatcher = createDispatcher(defaultStack({ registry }));
    const pending = dispatcher.gatherBounded(
      gates.map((_, n) => ({ name: 'calc', args: { n } })),
      { concurrency: 2 },
    );
    for (const [n, held] of [...gates.entries()].reverse()) {
      await flush();
      held.open(n * 10);
    }
    const outcomes = await pending;
    expect(outcomes.map((outcome) => outcome.ok && outcome.result)).toEqual([0, 10, 20, 30, 40, 50]);
    expect(most).toBe(2);
  });
});

describe('hostile handler results in the default stack', () => {
  it('frees the slot when the returned promise cannot even be read', async () => {
    const hostile = Promise.resolve(1);
    Object.defineProperty(hostile, 'constructor', {
      get() {
        throw new Error('no constructor for you');
      },
    });
    const { bare } = both(() => hostile as unknown as number);
    expect(await bare.dispatcher.dispatch('calc', { n: 1 })).toMatchObject({
      ok: false,
      kind: 'internal',
      attempts: 1,
    });
    expect(bare.load()).toEqual({ running: 0, queued: 0 });
  });
});

describe("a handler's context", () => {
  it('shows only what ToolContext promises, nothing of the dispatch or of other calls', async () => {
    const { inspect } = await import('node:util');
    const seen: string[] = [];
    const registry = new ToolRegistry().register({
      name: 'calc',
      inputSchema: schema,
      handler: async ({ n }, ctx) => {
        seen.push(`${Object.keys(ctx).join(',')} ${inspect(ctx, { depth: 5 })}`);
        await new Promise((resolve) => setImmediate(resolve));
        return n;
      },
    });
    const dispatcher = createDispatcher(defaultStack({ registry }));
    await dispatcher.gatherBounded([
      { name: 'calc', args: { n: 1 } },
      { name: 'calc', args: { n: 222_333 } },
    ]);
    expect(seen).toHaveLength(2);
    for (const shown of seen) {
      expect(shown.startsWith('attempt,idempotencyKey,callId,deadline,progress,signal ')).toBe(true);
      expect(shown).not.toContain('222333');
      expect(shown).not.toContain('CallContext');
    }
  });
});

describe("a middleware's context", () => {
  it('inspects as the dispatch, without the bookkeeping fields', async () => {
    const { inspect } = await import('node:util');
    let shown = '';
    const registry = new ToolRegistry().register({
      name: 'calc',
      inputSchema: schema,
      handler: ({ n }) => n,
    });
    const look: Middleware = async (ctx, next) => {
      await next();
      shown = inspect(ctx);
    };
    await createDispatcher([look, ...defaultStack({ registry })]).dispatch('calc', { n: 4 });
    expect(shown).toContain("toolName: 'calc'");
    expect(shown).toContain('result: 4');
    expect(shown).not.toMatch(/attemptAbort|baseSignal|innermostLayer/);
  });
});

describe('a clock that breaks after the call started', () => {
  it('still answers the call, with a NaN duration in its event', async () => {
    let reads = 0;
    const events: DispatchEvent[] = [];
    const registry = new ToolRegistry().register({
      name: 'calc',
      inputSchema: schema,
      handler: async ({ n }) => n,
    });
    const dispatcher = createDispatcher(defaultStack({ registry }), {
      onEvent: (event) => events.push(event),
      now: () => {
        reads += 1;
        if (reads > 1) throw new Error('clock broke');
        return 0;
      },
    });
    expect(await dispatcher.dispatch('calc', { n: 5 })).toEqual({ ok: true, result: 5, attempts: 1 });
    expect(events.at(-1)).toMatchObject({ type: 'dispatch.success', durationMs: Number.NaN });
  });
});

describe('a handler that returns a hostile proxy', () => {
  it('ends with an envelope and frees the slot, bare or behind a layer', async () => {
    const hostile = new Proxy(
      {},
      {
        getPrototypeOf() {
          throw new Error('no prototype for you');
        },
        get() {
          throw new Error('no properties for you');
        },
      },
    );
    const { bare, behind } = both(() => hostile as unknown as number);
    for (const form of [bare, behind]) {
      expect(await form.dispatcher.dispatch('calc', { n: 1 })).toMatchObject({
        ok: false,
        kind: 'internal',
        attempts: 1,
      });
      expect(form.load()).toEqual({ running: 0, queued: 0 });
    }
  });
});

describe('the default stack behind a layer of the caller', () => {
  it('rejects an outer layer that calls next() again while the first call runs, as compose does', async () => {
    const registry = new ToolRegistry().register({
      name: 'calc',
      inputSchema: schema,
      handler: async ({ n }) => n,
    });
    const seen: unknown[] = [];
    const twice: Middleware = async (_ctx, next) => {
      const first = next();
      await next().catch((error: unknown) => seen.push((error as Error).message));
      await first;
    };
    const dispatcher = createDispatcher([twice, ...defaultStack({ registry })]);
    await expect(dispatcher.dispatch('calc', { n: 3 })).resolves.toEqual({
      ok: true,
      result: 3,
      attempts: 1,
    });
    expect(seen).toEqual(['next() called multiple times']);
  });

  it("counts the first deadline from the attempt's start when an outer layer defers next()", async () => {
    vi.useFakeTimers();
    const registry = new ToolRegistry().register({
      name: 'calc',
      inputSchema: schema,
      timeoutMs: 50,
      handler: () => new Promise<number>(() => {}),
    });
    const later: Middleware = async (_ctx, next) => {
      await new Promise((resolve) => setTimeout(resolve, 100));
      await next();
    };
    const direct: Middleware = (_ctx, next) => next();
    const deferred = createDispatcher([later, ...defaultStack({ registry })]);
    const synchronous = createDispatcher([direct, ...defaultStack({ registry })]);
    let deferredOutcome: Outcome | undefined;
    let synchronousOutcome: Outcome | undefined;
    void deferred.dispatch('calc', { n: 1 }).then((value) => (deferredOutcome = value));
    void synchronous.dispatch('calc', { n: 1 }).then((value) => (synchronousOutcome = value));
    await vi.advanceTimersByTimeAsync(50);
    expect(synchronousOutcome).toMatchObject({ ok: false, kind: 'timeout', attempts: 1 });
    await vi.advanceTimersByTimeAsync(99);
    expect(deferredOutcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(deferredOutcome).toMatchObject({ ok: false, kind: 'timeout', attempts: 1 });
  });

  it('lets an outer layer run the stack again once it has settled', async () => {
    let runs = 0;
    const registry = new ToolRegistry().register({
      name: 'calc',
      inputSchema: schema,
      handler: ({ n }) => n + ++runs,
    });
    const again: Middleware = async (_ctx, next) => {
      await next();
      await next();
    };
    const outer: Middleware = (_ctx, next) => next();
    const dispatcher = createDispatcher([outer, again, ...defaultStack({ registry })]);
    await expect(dispatcher.dispatch('calc', { n: 1 })).resolves.toMatchObject({ ok: true, result: 3 });
    expect(runs).toBe(2);
  });
});

describe('a breaker given to defaultStack', () => {
  // The MCP proxy's shape before the option: a breaker spliced in before the concurrency limit.
  function spliced(registry: ToolRegistry, breaker: Middleware): Middleware[] {
    const stack = defaultStack({ registry, retry: { random: () => 0, baseDelayMs: 10 } });
    stack.splice(5, 0, breaker);
    return stack;
  }

  it('sits between idempotency and the concurrency limit', () => {
    const registry = new ToolRegistry();
    const breaker = circuitBreaker();
    const stack = defaultStack({ registry, breaker });
    expect(stack.map((layer) => layer.name)).toEqual([
      'errorMapping',
      'toolLookup',
      'schemaValidation',
      'budgetGuard',
      'idempotency',
      'circuitBreaker',
      'concurrencyLimit',
      'retry',
      'timeout',
    ]);
    expect(spliced(registry, circuitBreaker()).map((layer) => layer.name)).toEqual(
      stack.map((layer) => layer.name),
    );
    expect(() => defaultStack({ registry, breaker: 'no' as unknown as Middleware })).toThrow(TypeError);
  });

  it('opens, refuses and closes as a breaker spliced in by hand does', async () => {
    vi.useFakeTimers();
    const runs: Run[][] = [];
    for (const form of ['option', 'spliced'] as const) {
      let failing = true;
      const registry = new ToolRegistry().register({
        name: 'calc',
        inputSchema: schema,
        handler: async ({ n }) => {
          if (failing) throw new TransientError('down');
          return n;
        },
      });
      const breaker = circuitBreaker({ failureThreshold: 2, cooldownMs: 1_000 });
      const events: DispatchEvent[] = [];
      const layers =
        form === 'option'
          ? defaultStack({ registry, breaker, retry: { random: () => 0, baseDelayMs: 10 } })
          : spliced(registry, breaker);
      const dispatcher = createDispatcher(layers, { onEvent: (event) => void events.push(event) });
      const seen: Run[] = [];
      for (const step of ['fail', 'refused', 'wait', 'probe', 'closed'] as const) {
        if (step === 'wait') {
          await vi.advanceTimersByTimeAsync(1_000);
          failing = false;
          continue;
        }
        events.length = 0;
        seen.push(await settle(dispatcher.dispatch('calc', { n: 3 }), events));
      }
      runs.push(seen);
    }
    const [option, byHand] = runs as [Run[], Run[]];
    expect(option).toEqual(byHand);
    expect(option.map((run) => (run.outcome as Outcome).ok)).toEqual([false, false, true, true]);
    expect(option[1]?.outcome).toMatchObject({ kind: 'circuit_open' });
    expect(option[2]?.events).toContain('circuit.close');
  });
});
