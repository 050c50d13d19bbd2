import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  budgetGuard,
  createDispatcher,
  DispatchError,
  errorMapping,
  idempotency,
  isDispatchError,
  retry,
  schemaValidation,
  timeout,
  ToolRegistry,
  toolLookup,
  TransientError,
  type DispatchEvent,
  type Middleware,
  type Outcome,
} from '../../index.js';
import {
  circuitBreaker,
  isCircuitFailure,
  type CircuitBreakerOptions,
  type CircuitState,
} from '../../middleware/circuit-breaker/index.js';
import { memoryCircuitStore } from '../../middleware/circuit-breaker/memory-store.js';
import { flush, gate, type Gate } from '../helpers/gate.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

type Behaviour = 'ok' | 'transient' | 'internal' | 'hang' | 'gated';
type Placement = 'outside retry' | 'inside retry';

interface HarnessOptions {
  breaker?: Omit<CircuitBreakerOptions, 'clock'>;
  placement?: Placement;
  maxAttempts?: number;
  /** Builds the whole stack instead; gets the breaker and the registry. */
  stack?: (breaker: Middleware, registry: ToolRegistry) => Middleware[];
  /** Use the real clock (faked by vi.useFakeTimers) instead of a hand-driven one. */
  systemClock?: boolean;
}

const querySchema = z.object({ query: z.string() });

/** A dispatcher with a breaker on a hand-driven clock and tools whose behaviour a test sets. */
function harness(options: HarnessOptions = {}) {
  let now = 1_000_000;
  const clock = { now: () => now };
  const behaviour: Record<string, Behaviour> = {};
  // Behaviours used up one per attempt before `behaviour` applies.
  const queued: Record<string, Behaviour[]> = {};
  const handlerRuns: Record<string, number> = {};
  const gates: Array<Gate<unknown>> = [];
  const handle = (name: string) => (): unknown => {
    handlerRuns[name] = (handlerRuns[name] ?? 0) + 1;
    switch (queued[name]?.shift() ?? behaviour[name] ?? 'ok') {
      case 'ok':
        return `${name}:ok`;
      case 'transient':
        throw new TransientError(`${name} is busy`);
      case 'internal':
        throw new Error(`${name} broke`);
      case 'hang':
        return new Promise(() => {});
      case 'gated': {
        const held = gate<unknown>();
        gates.push(held);
        return held.promise;
      }
    }
  };
  const registry = new ToolRegistry();
  for (const name of ['search.web', 'db.read', 'db.write']) {
    registry.register({
      name,
      inputSchema: querySchema,
      idempotent: true,
      timeoutMs: 50,
      handler: handle(name),
    });
  }
  const breaker = circuitBreaker({
    ...options.breaker,
    ...(options.systemClock === true ? {} : { clock }),
  });
  const retryLayer = retry({ random: () => 0, baseDelayMs: 0, maxAttempts: options.maxAttempts ?? 1 });
  const stack =
    options.stack?.(breaker, registry) ??
    (options.placement === 'inside retry'
      ? [errorMapping(), toolLookup(registry), retryLayer, breaker, timeout()]
      : [errorMapping(), toolLookup(registry), breaker, retryLayer, timeout()]);
  const events: DispatchEvent[] = [];
  const dispatcher = createDispatcher(stack, { onEvent: (event) => events.push(event) });
  const call = (name = 'search.web', query = 'q', signal?: AbortSignal): Promise<Outcome> =>
    dispatcher.dispatch(name, { query }, signal === undefined ? {} : { signal });
  const circuitEvents = () =>
    events
      .filter((event) => event.type.startsWith('circuit.'))
      .map(({ type, tool, key, failures, cooldownMs }) => ({
        type,
        tool,
        key,
        ...(failures === undefined ? {} : { failures }),
        ...(cooldownMs === undefined ? {} : { cooldownMs }),
      }));
  return {
    breaker,
    dispatcher,
    behaviour,
    queued,
    handlerRuns,
    gates,
    call,
    events,
    circuitEvents,
    advance: (ms: number) => {
      now += ms;
    },
    now: () => now,
  };
}

function kindOf(outcome: Outcome): string {
  return outcome.ok ? 'ok' : outcome.kind;
}

function failure(outcome: Outcome): DispatchError {
  if (outcome.ok) throw new Error(`expected a failure, got ${JSON.stringify(outcome)}`);
  return outcome;
}

describe('circuitBreaker: the state machine', () => {
  // threshold 2, window 1 000 ms, cooldown 5 000 ms, no retry: one attempt per call.
  const steps: Array<{
    step: string;
    wait: number;
    handler: Behaviour;
    outcome: string;
    runsHandler: boolean;
    after: CircuitState;
  }> = [
    {
      step: 'a first failure starts a streak',
      wait: 0,
      handler: 'transient',
      outcome: 'transient',
      runsHandler: true,
      after: 'closed',
    },
    {
      step: 'a success resets the streak',
      wait: 0,
      handler: 'ok',
      outcome: 'ok',
      runsHandler: true,
      after: 'closed',
    },
    {
      step: 'so the next failure is the first again',
      wait: 0,
      handler: 'internal',
      outcome: 'internal',
      runsHandler: true,
      after: 'closed',
    },
    {
      step: 'a failure 1 001 ms later starts a new streak',
      wait: 1_001,
      handler: 'transient',
      outcome: 'transient',
      runsHandler: true,
      after: 'closed',
    },
    {
      step: 'a failure 1 000 ms later opens it (closed → open)',
      wait: 1_000,
      handler: 'transient',
      outcome: 'transient',
      runsHandler: true,
      after: 'open',
    },
    {
      step: 'an open circuit fails fast',
      wait: 4_999,
      handler: 'ok',
      outcome: 'circuit_open',
      runsHandler: false,
      after: 'open',
    },
    {
      step: 'after the cooldown a probe runs and its failure reopens it (half_open → open)',
      wait: 1,
      handler: 'transient',
      outcome: 'transient',
      runsHandler: true,
      after: 'open',
    },
    {
      step: 'the new cooldown fails fast again',
      wait: 4_999,
      handler: 'ok',
      outcome: 'circuit_open',
      runsHandler: false,
      after: 'open',
    },
    {
      step: 'a probe success closes it (half_open → closed)',
      wait: 1,
      handler: 'ok',
      outcome: 'ok',
      runsHandler: true,
      after: 'closed',
    },
    {
      step: 'a closed circuit starts from zero',
      wait: 0,
      handler: 'transient',
      outcome: 'transient',
      runsHandler: true,
      after: 'closed',
    },
  ];

  it('walks every transition in order', async () => {
    const h = harness({ breaker: { failureThreshold: 2, windowMs: 1_000, cooldownMs: 5_000 } });
    for (const { step, wait, handler, outcome, runsHandler, after } of steps) {
      h.advance(wait);
      h.behaviour['search.web'] = handler;
      const runsBefore = h.handlerRuns['search.web'] ?? 0;
      const result = await h.call();
      expect({ step, outcome: kindOf(result) }).toEqual({ step, outcome });
      expect({ step, ran: (h.handlerRuns['search.web'] ?? 0) > runsBefore }).toEqual({
        step,
        ran: runsHandler,
      });
      expect({ step, state: h.breaker.state('search.web') }).toEqual({ step, state: after });
    }
  });

  it('fails fast with a circuit_open envelope: code -32603, 0 attempts and the cooldown left', async () => {
    const h = harness({ breaker: { failureThreshold: 1, cooldownMs: 5_000 } });
    h.behaviour['search.web'] = 'transient';
    await h.call();
    h.advance(1_200);
    const rejected = failure(await h.call());
    expect(rejected).toBeInstanceOf(DispatchError);
    expect(rejected).toMatchObject({
      kind: 'circuit_open',
      jsonrpcCode: -32603,
      attempts: 0,
      retryAfterMs: 3_800,
    });
    expect(rejected.toJsonRpcError()).toEqual({
      code: -32603,
      message: expect.stringContaining('"search.web" is open') as string,
      data: { kind: 'circuit_open', attempts: 0, retryAfterMs: 3_800 },
    });
    expect(h.handlerRuns['search.web']).toBe(1);
  });

  it('reports half_open once the cooldown has elapsed, before any call notices', async () => {
    const h = harness({ breaker: { failureThreshold: 1, cooldownMs: 5_000 } });
    h.behaviour['search.web'] = 'internal';
    await h.call();
    h.advance(4_999);
    expect(h.breaker.state('search.web')).toBe('open');
    h.advance(1);
    expect(h.breaker.state('search.web')).toBe('half_open');
  });

  it('counts timeouts as failures', async () => {
    const h = harness({ breaker: { failureThreshold: 2 } });
    h.behaviour['search.web'] = 'hang';
    const first = h.call();
    await vi.advanceTimersByTimeAsync(50);
    const second = h.call();
    await vi.advanceTimersByTimeAsync(50);
    expect([kindOf(await first), kindOf(await second)]).toEqual(['timeout', 'timeout']);
    expect(h.breaker.state('search.web')).toBe('open');
  });

  it('ignores a late failure of a call that started before the circuit opened', async () => {
    const h = harness({ breaker: { failureThreshold: 1, cooldownMs: 5_000 } });
    h.behaviour['search.web'] = 'gated';
    const slow = h.call();
    await flush();
    h.behaviour['search.web'] = 'transient';
    await h.call();
    const openedAt = h.now();
    h.advance(1_000);
    h.gates[0]?.fail(new TransientError('late'));
    expect(kindOf(await slow)).toBe('transient');
    expect(h.breaker.snapshot()['search.web']).toMatchObject({ state: 'open', openedAt });
  });
});

describe('circuitBreaker: half-open probes', () => {
  async function openThenCool(h: ReturnType<typeof harness>) {
    h.behaviour['search.web'] = 'transient';
    await h.call();
    h.advance(5_000);
    h.behaviour['search.web'] = 'gated';
  }

  it('runs one probe and turns a concurrent call away with circuit_open', async () => {
    const h = harness({ breaker: { failureThreshold: 1, cooldownMs: 5_000, halfOpenMaxCalls: 1 } });
    await openThenCool(h);
    const probe = h.call();
    const turnedAway = failure(await h.call());
    expect(turnedAway).toMatchObject({ kind: 'circuit_open', jsonrpcCode: -32603, attempts: 0 });
    expect(turnedAway.retryAfterMs).toBeUndefined();
    expect(h.handlerRuns['search.web']).toBe(2);
    expect(h.breaker.snapshot()['search.web']).toMatchObject({ state: 'half_open', probes: 1 });

    h.gates[0]?.open('fine');
    expect(await probe).toEqual({ ok: true, result: 'fine', attempts: 1 });
    expect(h.breaker.state('search.web')).toBe('closed');
    h.behaviour['search.web'] = 'ok';
    expect(kindOf(await h.call())).toBe('ok');
  });

  it('runs up to halfOpenMaxCalls probes at once', async () => {
    const h = harness({ breaker: { failureThreshold: 1, cooldownMs: 5_000, halfOpenMaxCalls: 2 } });
    await openThenCool(h);
    const probes = [h.call(), h.call()];
    expect(kindOf(await h.call())).toBe('circuit_open');
    expect(h.handlerRuns['search.web']).toBe(3);
    for (const held of h.gates) held.open('fine');
    expect((await Promise.all(probes)).map(kindOf)).toEqual(['ok', 'ok']);
    expect(h.breaker.state('search.web')).toBe('closed');
  });

  it('frees the probe slot when a probe ends with a caller error, and stays half-open', async () => {
    const h = harness({ breaker: { failureThreshold: 1, cooldownMs: 5_000 } });
    await openThenCool(h);
    const controller = new AbortController();
    const probe = h.call('search.web', 'q', controller.signal);
    await flush();
    controller.abort(new Error('user left'));
    expect(kindOf(await probe)).toBe('cancelled');
    // The caller is answered at the abort; the layers unwind a few microtasks later.
    await flush();
    expect(h.breaker.snapshot()['search.web']).toMatchObject({ state: 'half_open', probes: 0 });
    h.behaviour['search.web'] = 'ok';
    expect(kindOf(await h.call())).toBe('ok');
    expect(h.breaker.state('search.web')).toBe('closed');
  });

  it.each([
    ['without a store', () => ({})],
    ['on a store', () => ({ store: memoryCircuitStore() })],
  ])(
    'emits circuit.half_open once per half-open period, though a cancelled probe hands its slot on (%s)',
    async (_name, store) => {
      const h = harness({
        breaker: { failureThreshold: 1, cooldownMs: 5_000, ...store() },
        systemClock: true,
      });
      h.behaviour['search.web'] = 'transient';
      await h.call();
      vi.setSystemTime(Date.now() + 5_000);
      h.behaviour['search.web'] = 'gated';
      const controller = new AbortController();
      const probe = h.call('search.web', 'q', controller.signal);
      await flush();
      controller.abort();
      expect(kindOf(await probe)).toBe('cancelled');
      await flush();
      h.behaviour['search.web'] = 'ok';
      expect(kindOf(await h.call())).toBe('ok');
      expect(h.circuitEvents().map((event) => event.type)).toEqual([
        'circuit.open',
        'circuit.half_open',
        'circuit.close',
      ]);
    },
  );

  it('does not let a probe of an earlier half-open period decide for the next one', async () => {
    const h = harness({ breaker: { failureThreshold: 1, cooldownMs: 5_000 }, maxAttempts: 2 });
    await openThenCool(h);
    // The probe's first attempt fails, which reopens the circuit; its retry hangs on a gate.
    const probe = h.call();
    await flush();
    h.gates[0]?.fail(new TransientError('still down'));
    await flush();
    expect(h.breaker.state('search.web')).toBe('open');
    h.advance(5_000);
    const nextProbe = h.call();
    await flush();
    expect(h.breaker.snapshot()['search.web']).toMatchObject({ state: 'half_open', probes: 1 });
    h.gates[1]?.open('old probe');
    expect(kindOf(await probe)).toBe('ok');
    expect(h.breaker.snapshot()['search.web']).toMatchObject({ state: 'half_open', probes: 1 });
    h.gates[2]?.open('new probe');
    expect(kindOf(await nextProbe)).toBe('ok');
    expect(h.breaker.state('search.web')).toBe('closed');
  });
});

describe('circuitBreaker: what counts', () => {
  it.each(['schema', 'not_found', 'budget_exceeded', 'cancelled', 'idempotency_conflict', 'circuit_open'])(
    'never counts %s, even after an attempt ran',
    async (kind) => {
      const throwAfterAttempt: Middleware = async (ctx, next) => {
        await next();
        throw new DispatchError(kind, 'caller error', { attempts: ctx.attempt });
      };
      const h = harness({
        breaker: { failureThreshold: 1 },
        stack: (breaker, registry) => [errorMapping(), toolLookup(registry), breaker, throwAfterAttempt],
      });
      for (let i = 0; i < 5; i++) expect(kindOf(await h.call())).toBe(kind);
      expect(h.breaker.state('search.web')).toBe('closed');
      expect(h.breaker.snapshot()).toEqual({});
    },
  );

  it.each(['timeout', 'transient', 'internal'])('counts %s', async (kind) => {
    const throwAfterAttempt: Middleware = async (ctx, next) => {
      await next();
      throw new DispatchError(kind, 'backend error', { attempts: ctx.attempt });
    };
    const h = harness({
      breaker: { failureThreshold: 1 },
      stack: (breaker, registry) => [errorMapping(), toolLookup(registry), breaker, throwAfterAttempt],
    });
    await h.call();
    expect(h.breaker.state('search.web')).toBe('open');
  });

  it('is never tripped by unknown tools, bad args, spent budgets or cancelled calls', async () => {
    const h = harness({
      breaker: { failureThreshold: 1 },
      stack: (breaker, registry) => [
        errorMapping(),
        breaker,
        toolLookup(registry),
        schemaValidation(),
        budgetGuard(),
        retry({ random: () => 0, baseDelayMs: 0 }),
        timeout(),
      ],
    });
    for (let i = 0; i < 3; i++) {
      expect(kindOf(await h.call('no.such_tool'))).toBe('not_found');
      expect(kindOf(await h.dispatcher.dispatch('search.web', { query: 42 }))).toBe('schema');
      expect(kindOf(await h.dispatcher.dispatch('search.web', { query: 'q' }, { budget: 0 }))).toBe(
        'budget_exceeded',
      );
      h.behaviour['search.web'] = 'gated';
      const controller = new AbortController();
      const cancelledCall = h.call('search.web', 'q', controller.signal);
      await flush();
      controller.abort();
      expect(kindOf(await cancelledCall)).toBe('cancelled');
    }
    expect(h.handlerRuns['search.web']).toBe(3);
    expect(h.breaker.state('search.web')).toBe('closed');
    expect(h.breaker.state('no.such_tool')).toBe('closed');
    expect(h.breaker.snapshot()).toEqual({});
  });

  it('asks isFailure, with a real DispatchError, about every attempt', async () => {
    const seen: unknown[] = [];
    const h = harness({
      breaker: {
        failureThreshold: 3,
        isFailure: (error) => {
          seen.push(error);
          return error.kind === 'transient';
        },
      },
      maxAttempts: 3,
    });
    h.behaviour['search.web'] = 'internal';
    await h.call();
    expect(h.breaker.state('search.web')).toBe('closed');
    h.behaviour['search.web'] = 'transient';
    await h.call();
    expect(h.breaker.state('search.web')).toBe('open');
    expect(seen.every(isDispatchError)).toBe(true);
    expect(seen.map((error) => (error as DispatchError).kind)).toEqual([
      'internal',
      'transient',
      'transient',
      'transient',
    ]);
  });

  it('exports its default test as isCircuitFailure', () => {
    expect(isCircuitFailure(new DispatchError('timeout', ''))).toBe(true);
    expect(isCircuitFailure(new DispatchError('schema', ''))).toBe(false);
  });

  it('counts a failure shared by same-key idempotent calls once', async () => {
    const h = harness({
      breaker: { failureThreshold: 2 },
      stack: (breaker, registry) => [errorMapping(), toolLookup(registry), breaker, idempotency(), timeout()],
    });
    h.behaviour['search.web'] = 'gated';
    const sameKey = { idempotencyKey: 'k1' };
    const leader = h.dispatcher.dispatch('search.web', { query: 'q' }, sameKey);
    const follower = h.dispatcher.dispatch('search.web', { query: 'q' }, sameKey);
    await flush();
    h.gates[0]?.fail(new TransientError('down'));
    expect([kindOf(await leader), kindOf(await follower)]).toEqual(['transient', 'transient']);
    expect(h.handlerRuns['search.web']).toBe(1);
    expect(h.breaker.snapshot()['search.web']).toEqual({ state: 'closed', failures: 1 });
  });
});

describe('circuitBreaker: counting each attempt, outside or inside retry', () => {
  const placements: Placement[] = ['outside retry', 'inside retry'];

  it.each(placements)(
    'opens after one dispatch of 3 failed attempts with threshold 3 (%s)',
    async (placement) => {
      const h = harness({ breaker: { failureThreshold: 3 }, placement, maxAttempts: 3 });
      h.behaviour['search.web'] = 'transient';
      expect(failure(await h.call())).toMatchObject({ kind: 'transient', attempts: 3 });
      expect(h.breaker.state('search.web')).toBe('open');
      expect(h.breaker.snapshot()['search.web']).toMatchObject({ state: 'open', failures: 3 });
    },
  );

  it.each(placements)(
    'stays closed after 3 failed attempts with threshold 4, counting each once (%s)',
    async (placement) => {
      const h = harness({ breaker: { failureThreshold: 4 }, placement, maxAttempts: 3 });
      h.behaviour['search.web'] = 'transient';
      await h.call();
      expect(h.breaker.snapshot()['search.web']).toEqual({ state: 'closed', failures: 3 });
    },
  );

  it.each(placements)('resets the streak when a retried call finally succeeds (%s)', async (placement) => {
    const h = harness({ breaker: { failureThreshold: 3 }, placement, maxAttempts: 3 });
    h.queued['search.web'] = ['transient', 'transient', 'ok'];
    expect(await h.call()).toMatchObject({ ok: true, attempts: 3 });
    expect(h.breaker.snapshot()).toEqual({});
    h.behaviour['search.web'] = 'transient';
    await h.call();
    expect(h.breaker.state('search.web')).toBe('open');
  });

  it('inside retry, an open circuit ends the retry loop with circuit_open', async () => {
    const h = harness({ breaker: { failureThreshold: 2 }, placement: 'inside retry', maxAttempts: 3 });
    h.behaviour['search.web'] = 'transient';
    expect(failure(await h.call())).toMatchObject({ kind: 'circuit_open', attempts: 2 });
    expect(h.handlerRuns['search.web']).toBe(2);
  });

  it('outside retry, the circuit opens mid-dispatch and the running dispatch continues', async () => {
    const h = harness({ breaker: { failureThreshold: 2 }, placement: 'outside retry', maxAttempts: 3 });
    h.behaviour['search.web'] = 'transient';
    expect(failure(await h.call())).toMatchObject({ kind: 'transient', attempts: 3 });
    expect(h.handlerRuns['search.web']).toBe(3);
    expect(h.breaker.state('search.web')).toBe('open');
    const types = h.events.map((event) => event.type);
    expect(types.indexOf('circuit.open')).toBeLessThan(types.lastIndexOf('dispatch.attempt'));
  });
});

describe('circuitBreaker: keys', () => {
  it('keeps one circuit per tool by default', async () => {
    const h = harness({ breaker: { failureThreshold: 1 } });
    h.behaviour['db.read'] = 'transient';
    await h.call('db.read');
    expect(h.breaker.state('db.read')).toBe('open');
    expect(kindOf(await h.call('db.write'))).toBe('ok');
    expect(kindOf(await h.call('db.read'))).toBe('circuit_open');
  });

  it('partitions by the key option, so tools on one backend share a circuit', async () => {
    const h = harness({
      breaker: {
        failureThreshold: 2,
        key: (ctx) => (ctx.tool?.name ?? ctx.toolName).split('.')[0] ?? '',
      },
    });
    h.behaviour['db.read'] = 'transient';
    h.behaviour['db.write'] = 'internal';
    await h.call('db.read');
    await h.call('db.write');
    expect(h.breaker.state('db')).toBe('open');
    expect(kindOf(await h.call('db.read'))).toBe('circuit_open');
    expect(kindOf(await h.call('search.web'))).toBe('ok');
    expect(h.breaker.state('search')).toBe('closed');
    expect(Object.keys(h.breaker.snapshot())).toEqual(['db']);
  });

  it('keeps a key such as "__proto__" as a plain snapshot key', async () => {
    const h = harness({ breaker: { failureThreshold: 1, key: () => '__proto__' } });
    h.behaviour['search.web'] = 'transient';
    await h.call();
    const snapshot = h.breaker.snapshot();
    expect(Object.getPrototypeOf(snapshot)).toBe(Object.prototype);
    expect(Object.hasOwn(snapshot, '__proto__')).toBe(true);
    expect(h.breaker.state('__proto__')).toBe('open');
  });
});

describe('circuitBreaker: state() and snapshot()', () => {
  it('describes each circuit and drops closed ones without failures', async () => {
    const h = harness({ breaker: { failureThreshold: 2, windowMs: 1_000, cooldownMs: 5_000 } });
    expect(h.breaker.state('never.seen')).toBe('closed');
    expect(h.breaker.snapshot()).toEqual({});

    h.behaviour['search.web'] = 'transient';
    await h.call();
    expect(h.breaker.snapshot()).toEqual({ 'search.web': { state: 'closed', failures: 1 } });
    h.advance(1_001);
    expect(h.breaker.snapshot()).toEqual({});

    await h.call();
    await h.call();
    const openedAt = h.now();
    h.advance(2_000);
    expect(h.breaker.snapshot()).toEqual({
      'search.web': { state: 'open', failures: 2, openedAt, retryAfterMs: 3_000 },
    });
    h.advance(3_000);
    expect(h.breaker.snapshot()).toEqual({
      'search.web': { state: 'half_open', failures: 2, openedAt, probes: 0 },
    });
    h.behaviour['search.web'] = 'ok';
    await h.call();
    expect(h.breaker.snapshot()).toEqual({});
  });
});

describe('circuitBreaker: events', () => {
  it('emits circuit.open, circuit.half_open and circuit.close from the calls that make them', async () => {
    const h = harness({ breaker: { failureThreshold: 2, cooldownMs: 5_000 } });
    h.behaviour['search.web'] = 'transient';
    await h.call();
    await h.call();
    await h.call();
    h.advance(5_000);
    await h.call();
    h.advance(5_000);
    h.behaviour['search.web'] = 'ok';
    await h.call();
    const tool = 'search.web';
    const key = tool;
    expect(h.circuitEvents()).toEqual([
      { type: 'circuit.open', tool, key, failures: 2, cooldownMs: 5_000 },
      { type: 'circuit.half_open', tool, key },
      { type: 'circuit.open', tool, key, failures: 1, cooldownMs: 5_000 },
      { type: 'circuit.half_open', tool, key },
      { type: 'circuit.close', tool, key },
    ]);
    // The second call's failure opened the circuit: the event carries that call's id.
    const callIds = [...new Set(h.events.map((event) => event.callId))];
    const opened = h.events.find((event) => event.type === 'circuit.open');
    expect(opened?.callId).toBe(callIds[1]);
  });
});

describe('circuitBreaker: options', () => {
  it.each([
    ['failureThreshold', { failureThreshold: 0 }],
    ['failureThreshold', { failureThreshold: 1.5 }],
    ['windowMs', { windowMs: 0 }],
    ['windowMs', { windowMs: Number.NaN }],
    ['cooldownMs', { cooldownMs: -1 }],
    ['cooldownMs', { cooldownMs: Infinity }],
    ['halfOpenMaxCalls', { halfOpenMaxCalls: 0 }],
    ['isFailure', { isFailure: 'timeout' }],
    ['key', { key: 'name' }],
    ['clock', { clock: {} }],
  ])('throws a TypeError naming %s', (name, options) => {
    expect(() => circuitBreaker(options as CircuitBreakerOptions)).toThrow(TypeError);
    expect(() => circuitBreaker(options as CircuitBreakerOptions)).toThrow(name);
  });

  it('rejects options that are not an object', () => {
    expect(() => circuitBreaker(5 as never)).toThrow(TypeError);
  });

  it('accepts no options, and an infinite window', () => {
    expect(circuitBreaker().state('search.web')).toBe('closed');
    expect(() => circuitBreaker({ windowMs: Infinity })).not.toThrow();
  });

  it('is a named middleware function', () => {
    expect(circuitBreaker().name).toBe('circuitBreaker');
  });
});

describe('circuitBreaker: time', () => {
  it('sets no timers: cooldowns are checked lazily against the clock', async () => {
    const h = harness({ breaker: { failureThreshold: 1, cooldownMs: 5_000 }, systemClock: true });
    h.behaviour['search.web'] = 'transient';
    await h.call();
    expect(h.breaker.state('search.web')).toBe('open');
    expect(vi.getTimerCount()).toBe(0);
    vi.setSystemTime(Date.now() + 5_000);
    expect(h.breaker.state('search.web')).toBe('half_open');
    h.behaviour['search.web'] = 'ok';
    expect(kindOf(await h.call())).toBe('ok');
    expect(h.breaker.state('search.web')).toBe('closed');
    expect(vi.getTimerCount()).toBe(0);
  });
});
