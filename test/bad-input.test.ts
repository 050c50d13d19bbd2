// Bad input corpus: hostile args, names, keys, options and handler results each get a clear envelope, and the dispatcher keeps working.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  concurrencyLimit,
  createBudget,
  createDispatcher,
  defaultStack,
  DispatchError,
  idempotency,
  isDispatchError,
  retry,
  schemaValidation,
  timeout,
  ToolRegistry,
  TransientError,
  type Dispatcher,
  type DispatchErrorKind,
  type DispatchOptions,
  type Outcome,
  type ToolHandler,
} from '../index.js';

interface World {
  dispatcher: Dispatcher;
  /** Handler entries per tool. */
  calls: Record<string, number>;
  /** What `odd.result` does on its next call. */
  odd: ToolHandler<Record<string, unknown>>;
  /** The args the last handler received. */
  lastArgs: unknown;
  /** Scratch space for a case's side results. */
  note: unknown;
}

function makeWorld(): World {
  const world: World = {
    dispatcher: undefined as unknown as Dispatcher,
    calls: { 'search.web': 0, 'bag.any': 0, 'odd.result': 0 },
    odd: () => 'odd',
    lastArgs: undefined,
    note: undefined,
  };
  const count = (name: string, args: unknown) => {
    world.calls[name] = (world.calls[name] ?? 0) + 1;
    world.lastArgs = args;
  };
  const registry = new ToolRegistry()
    .register({
      name: 'search.web',
      inputSchema: z.object({ query: z.string() }),
      idempotent: true,
      handler: (args) => {
        count('search.web', args);
        return `result:${args.query.length}`;
      },
    })
    .register({
      name: 'bag.any',
      inputSchema: z.record(z.string(), z.unknown()),
      handler: (args) => {
        count('bag.any', args);
        return Object.keys(args).length;
      },
    })
    .register({
      name: 'odd.result',
      inputSchema: z.looseObject({}),
      idempotent: true,
      handler: (args, ctx) => {
        count('odd.result', args);
        return world.odd(args, ctx);
      },
    });
  world.dispatcher = createDispatcher(defaultStack({ registry, retry: { random: () => 0 } }));
  return world;
}

/** Builds `{ a: { a: … } }` nested `levels` deep without recursion. */
function nested(levels: number): Record<string, unknown> {
  let node: Record<string, unknown> = { leaf: true };
  for (let i = 1; i < levels; i++) node = { a: node };
  return node;
}

function cyclic(): Record<string, unknown> {
  const node: Record<string, unknown> = { query: 'loop' };
  node['self'] = node;
  return node;
}

function wide(keys: number): Record<string, number> {
  const record: Record<string, number> = {};
  for (let i = 0; i < keys; i++) record[`k${i}`] = i;
  return record;
}

/** A value on which every proxy trap throws, down to `instanceof` and `typeof`-free reads. */
const hostileProxy = new Proxy(
  {},
  {
    get() {
      throw new Error('trap: get');
    },
    getPrototypeOf() {
      throw new Error('trap: getPrototypeOf');
    },
    ownKeys() {
      throw new Error('trap: ownKeys');
    },
    has() {
      throw new Error('trap: has');
    },
    getOwnPropertyDescriptor() {
      throw new Error('trap: getOwnPropertyDescriptor');
    },
  },
);

interface Case {
  name: string;
  run: (world: World) => Promise<Outcome>;
  /** The outcome kind, or 'ok'. */
  expected: 'ok' | DispatchErrorKind;
  /** Fake time to let pass before the outcome must be there. */
  advanceMs?: number;
  /** Whether a handler may run (default: only for 'ok' and handler-made failures). */
  handlerRuns?: boolean;
  verify?: (outcome: Outcome, world: World) => void;
}

const search = (args: unknown, options?: DispatchOptions) => (world: World) =>
  world.dispatcher.dispatch('search.web', args, options);
const odd = (handler: ToolHandler<Record<string, unknown>>, options?: DispatchOptions) => (world: World) => {
  world.odd = handler;
  return world.dispatcher.dispatch('odd.result', {}, options);
};
const badOptions = (options: unknown) => (world: World) =>
  world.dispatcher.dispatch('search.web', { query: 'x' }, options as DispatchOptions);

const cases: Case[] = [
  // Args that are not JSON objects.
  { name: 'args null', run: search(null), expected: 'schema' },
  { name: 'args undefined', run: search(undefined), expected: 'schema' },
  { name: 'args an array', run: search([{ query: 'x' }]), expected: 'schema' },
  { name: 'args a string', run: search('{"query":"x"}'), expected: 'schema' },
  { name: 'args a number', run: search(42), expected: 'schema' },
  { name: 'args a boolean', run: search(true), expected: 'schema' },
  { name: 'args a function', run: search(() => ({ query: 'x' })), expected: 'schema' },
  // Huge, deep and cyclic args.
  {
    name: 'a 1 MB string arg',
    run: search({ query: 'x'.repeat(1 << 20) }, { idempotencyKey: 'huge-string' }),
    expected: 'ok',
    verify: (outcome) => expect(outcome.ok && outcome.result).toBe(`result:${1 << 20}`),
  },
  {
    name: 'an object of 100 000 keys',
    run: (world) => world.dispatcher.dispatch('bag.any', wide(100_000), { idempotencyKey: 'wide' }),
    expected: 'ok',
    verify: (outcome) => expect(outcome.ok && outcome.result).toBe(100_000),
  },
  {
    name: 'args nested 10 000 levels deep',
    run: search({ query: 'x', deep: nested(10_000) }, { idempotencyKey: 'deep' }),
    expected: 'schema',
    verify: (outcome) => expect(!outcome.ok && outcome.message).toMatch(/deeper than/),
  },
  {
    name: 'a bare array nested 10 000 levels deep',
    run: (world) => {
      let node: unknown[] = [];
      for (let i = 0; i < 10_000; i++) node = [node];
      return world.dispatcher.dispatch('bag.any', { list: node });
    },
    expected: 'schema',
  },
  {
    name: 'cyclic args',
    run: search(cyclic(), { idempotencyKey: 'cyclic' }),
    expected: 'schema',
    verify: (outcome) => expect(!outcome.ok && outcome.message).toMatch(/cycle/),
  },
  {
    name: 'an array that contains itself',
    run: (world) => {
      const list: unknown[] = [1];
      list.push(list);
      return world.dispatcher.dispatch('bag.any', { list });
    },
    expected: 'schema',
  },
  {
    name: 'args with a getter that throws',
    run: search({
      query: 'x',
      get trap(): string {
        throw new Error('getter exploded');
      },
    }),
    expected: 'schema',
  },
  // Prototype pollution attempts.
  {
    name: 'JSON.parse __proto__ args to a record schema',
    run: (world) =>
      world.dispatcher.dispatch('bag.any', JSON.parse('{"__proto__":{"polluted":1},"a":1}'), {
        idempotencyKey: 'proto-json',
      }),
    expected: 'ok',
    verify: (_outcome, world) => {
      const args = world.lastArgs as Record<string, unknown>;
      expect(Object.getPrototypeOf(args)).toBe(Object.prototype);
      expect(args['polluted']).toBeUndefined();
    },
  },
  {
    name: 'JSON.parse __proto__ args to a strict schema',
    run: search(JSON.parse('{"query":"x","__proto__":{"polluted":1}}')),
    expected: 'ok',
    verify: (_outcome, world) =>
      expect((world.lastArgs as Record<string, unknown>)['polluted']).toBeUndefined(),
  },
  {
    name: 'constructor.prototype args',
    run: (world) =>
      world.dispatcher.dispatch('bag.any', {
        constructor: { prototype: { polluted: 1 } },
        prototype: { polluted: 1 },
      }),
    expected: 'ok',
  },
  {
    name: 'JSON.parse __proto__ args to a loose schema',
    run: (world) => world.dispatcher.dispatch('odd.result', JSON.parse('{"__proto__":{"polluted":1}}')),
    expected: 'ok',
    verify: (_outcome, world) =>
      expect((world.lastArgs as Record<string, unknown>)['polluted']).toBeUndefined(),
  },
  // Tool names that live on Object.prototype, and names that are not strings.
  ...['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf', ''].map(
    (name): Case => ({
      name: `tool name ${JSON.stringify(name)}`,
      run: (world) => world.dispatcher.dispatch(name, { query: 'x' }),
      expected: 'not_found',
      verify: (outcome) => expect(!outcome.ok && outcome.jsonrpcCode).toBe(-32601),
    }),
  ),
  {
    name: 'a tool name 100 000 characters long',
    run: (world) => world.dispatcher.dispatch('a'.repeat(100_000), {}),
    expected: 'not_found',
  },
  ...[42, null, undefined, Symbol('tool'), { name: 'search.web' }].map(
    (name): Case => ({
      name: `tool name ${typeof name === 'symbol' ? 'a symbol' : (JSON.stringify(name) ?? 'undefined')}`,
      run: (world) => world.dispatcher.dispatch(name as unknown as string, { query: 'x' }),
      expected: 'not_found',
    }),
  ),
  // Idempotency keys.
  {
    name: 'an empty idempotency key',
    run: search({ query: 'x' }, { idempotencyKey: '' }),
    expected: 'schema',
  },
  {
    name: 'an idempotency key 100 000 characters long',
    run: search({ query: 'x' }, { idempotencyKey: 'k'.repeat(100_000) }),
    expected: 'schema',
  },
  {
    name: 'an idempotency key that is not a string',
    run: badOptions({ idempotencyKey: 42 }),
    expected: 'schema',
  },
  ...['__proto__', 'constructor', 'toString'].map(
    (key): Case => ({
      name: `idempotency key ${JSON.stringify(key)} caches like any other`,
      run: async (world) => {
        const first = await world.dispatcher.dispatch('search.web', { query: key }, { idempotencyKey: key });
        expect(first).toMatchObject({ ok: true, attempts: 1 });
        return world.dispatcher.dispatch('search.web', { query: key }, { idempotencyKey: key });
      },
      expected: 'ok',
      verify: (outcome, world) => {
        expect(outcome.attempts).toBe(0);
        expect(world.calls['search.web']).toBe(1);
      },
    }),
  ),
  {
    name: 'the same key for another tool',
    run: async (world) => {
      await world.dispatcher.dispatch('search.web', { query: 'x' }, { idempotencyKey: 'shared' });
      return world.dispatcher.dispatch('bag.any', { query: 'x' }, { idempotencyKey: 'shared' });
    },
    expected: 'idempotency_conflict',
    verify: (outcome, world) => {
      expect(!outcome.ok && outcome.jsonrpcCode).toBe(-32602);
      expect(world.calls['bag.any']).toBe(0);
    },
  },
  {
    name: 'the same key for other args',
    run: async (world) => {
      await world.dispatcher.dispatch('search.web', { query: 'x' }, { idempotencyKey: 'shared' });
      return world.dispatcher.dispatch('search.web', { query: 'y' }, { idempotencyKey: 'shared' });
    },
    expected: 'idempotency_conflict',
    verify: (outcome, world) => {
      expect(!outcome.ok && outcome.jsonrpcCode).toBe(-32602);
      expect(outcome.ok || outcome.toJsonRpcError().code).toBe(-32602);
      expect(world.calls['search.web']).toBe(1);
    },
  },
  {
    name: 'the same key for other args while the first call is in flight',
    run: (world) => {
      world.odd = () => new Promise((resolve) => setTimeout(() => resolve('slow'), 50));
      void world.dispatcher
        .dispatch('odd.result', { n: 1 }, { idempotencyKey: 'busy' })
        .then((first) => (world.note = first));
      return world.dispatcher.dispatch('odd.result', { n: 2 }, { idempotencyKey: 'busy' });
    },
    advanceMs: 50,
    expected: 'idempotency_conflict',
    handlerRuns: true,
    verify: (_outcome, world) => {
      expect(world.note).toMatchObject({ ok: true, result: 'slow', attempts: 1 });
      expect(world.calls['odd.result']).toBe(1);
    },
  },
  // Per-call timeouts.
  ...[0, -1, -Infinity, NaN, '100', null].map(
    (timeoutMs): Case => ({
      name: `timeoutMs ${String(timeoutMs)}${typeof timeoutMs === 'string' ? ' (a string)' : ''}`,
      run: badOptions({ timeoutMs }),
      expected: 'schema',
      verify: (outcome) => expect(!outcome.ok && outcome.message).toMatch(/timeoutMs/),
    }),
  ),
  {
    name: 'timeoutMs Infinity never times out',
    run: odd(() => new Promise((resolve) => setTimeout(() => resolve('after an hour'), 3_600_000)), {
      timeoutMs: Infinity,
    }),
    advanceMs: 3_600_000,
    expected: 'ok',
    verify: (outcome) => expect(outcome.ok && outcome.result).toBe('after an hour'),
  },
  {
    // Timers clamp delays above 2^31 - 1 ms to 1 ms, so a long timeout must not reach setTimeout as is.
    name: 'timeoutMs above 2^31 - 1 ms (about 25 days) does not fire at once',
    run: odd(() => new Promise((resolve) => setTimeout(() => resolve('after a second'), 1_000)), {
      timeoutMs: 2 ** 31,
    }),
    advanceMs: 1_000,
    expected: 'ok',
  },
  // Other call options.
  { name: 'options null', run: badOptions(null), expected: 'schema' },
  { name: 'options a string', run: badOptions('fast please'), expected: 'schema' },
  { name: 'budget NaN', run: badOptions({ budget: NaN }), expected: 'schema' },
  {
    name: 'budget an object that is not a budget',
    run: badOptions({ budget: { remaining: 3 } }),
    expected: 'schema',
  },
  { name: 'budget -1', run: badOptions({ budget: -1 }), expected: 'budget_exceeded' },
  { name: 'budget Infinity', run: badOptions({ budget: Infinity }), expected: 'ok' },
  {
    name: 'a spent shared budget',
    run: badOptions({ budget: createBudget(0) }),
    expected: 'budget_exceeded',
  },
  { name: 'signal not an AbortSignal', run: badOptions({ signal: { aborted: true } }), expected: 'schema' },
  { name: 'an empty callId', run: badOptions({ callId: '' }), expected: 'schema' },
  {
    name: 'options with a getter that throws',
    run: (world) => {
      const options = {
        get timeoutMs(): number {
          throw new Error('options getter exploded');
        },
      };
      // Must resolve to an envelope: a synchronous throw here escapes every caller's `.then`.
      try {
        return world.dispatcher.dispatch('search.web', { query: 'x' }, options);
      } catch (error) {
        return Promise.resolve(new DispatchError('dispatch() threw synchronously', String(error)));
      }
    },
    expected: 'schema',
  },
  // Handlers returning odd things.
  {
    name: 'a rejected custom thenable',
    run: odd(() => ({
      then: (_resolve: unknown, reject: (e: unknown) => void) => reject(new Error('thenable no')),
    })),
    expected: 'internal',
    handlerRuns: true,
    verify: (outcome) => expect(!outcome.ok && outcome.message).toBe('thenable no'),
  },
  {
    name: 'a thenable rejecting with a TransientError is retried',
    run: odd(() => ({
      then: (_resolve: unknown, reject: (e: unknown) => void) => reject(new TransientError('thenable busy')),
    })),
    advanceMs: 500,
    expected: 'transient',
    handlerRuns: true,
    verify: (outcome, world) => {
      expect(outcome.attempts).toBe(3);
      expect(world.calls['odd.result']).toBe(3);
    },
  },
  {
    name: 'a thenable whose then throws',
    run: odd(() => ({
      then() {
        throw new Error('then threw');
      },
    })),
    expected: 'internal',
    handlerRuns: true,
  },
  {
    name: 'a result with a throwing then getter',
    run: odd(() =>
      Object.defineProperty({}, 'then', {
        get() {
          throw new Error('then getter threw');
        },
      }),
    ),
    expected: 'internal',
    handlerRuns: true,
    verify: (outcome) => expect(!outcome.ok && outcome.message).toBe('then getter threw'),
  },
  {
    name: 'a thenable that never settles times out',
    run: odd(() => ({ then() {} }), { timeoutMs: 1_000 }),
    advanceMs: 1_000 + 150 + 1_000 + 600 + 1_000,
    expected: 'timeout',
    handlerRuns: true,
  },
  ...(
    [
      ['a BigInt', () => 10n],
      ['a function', () => () => 'fn'],
      ['a symbol', () => Symbol('result')],
      ['a cyclic object', cyclic],
      ['undefined', () => undefined],
      ['a promise of a BigInt', () => Promise.resolve(2n ** 70n)],
      ['an object with a then that is not a function', () => ({ then: 42 })],
    ] as Array<[string, () => unknown]>
  ).map(
    ([label, make]): Case => ({
      name: `a handler returning ${label} succeeds`,
      run: (world) => {
        world.odd = make;
        return world.dispatcher.dispatch('odd.result', {}, { idempotencyKey: `odd-${label}` });
      },
      expected: 'ok',
    }),
  ),
  // Handlers throwing odd things.
  ...(
    [
      ['null', null],
      ['undefined', undefined],
      ['a number', 42],
      ['a symbol', Symbol('thrown')],
      ['a BigInt', 7n],
      [
        'an object with a throwing toJSON',
        {
          toJSON: () => {
            throw new Error('no json');
          },
        },
      ],
      ['a cyclic object', cyclic()],
      ['a proxy whose every trap throws', hostileProxy],
    ] as Array<[string, unknown]>
  ).flatMap(([label, value]): Case[] => [
    {
      name: `a handler throwing ${label} synchronously`,
      run: odd(() => {
        throw value;
      }),
      expected: 'internal',
      handlerRuns: true,
    },
    {
      name: `a handler rejecting with ${label}`,
      run: odd(() => Promise.reject(value)),
      expected: 'internal',
      handlerRuns: true,
    },
  ]),
  {
    name: 'a handler throwing its own timeout envelope',
    run: odd(() => {
      throw new DispatchError('timeout', 'upstream timed out');
    }),
    expected: 'internal',
    handlerRuns: true,
  },
];

let world: World;
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => {
  unhandled.push(reason);
};
const prototypeNames = Object.getOwnPropertyNames(Object.prototype).sort();

beforeEach(() => {
  vi.useFakeTimers();
  world = makeWorld();
  unhandled.length = 0;
  process.on('unhandledRejection', onUnhandled);
});

afterEach(() => {
  process.off('unhandledRejection', onUnhandled);
  vi.useRealTimers();
});

describe('bad input', () => {
  it.each(cases)('$name: gives $expected and the dispatcher keeps working', async (testCase) => {
    const pending = testCase.run(world);
    let outcome: Outcome | undefined;
    let rejection: unknown;
    pending.then(
      (value) => {
        outcome = value;
      },
      (error: unknown) => {
        rejection = error;
      },
    );
    await vi.advanceTimersByTimeAsync(testCase.advanceMs ?? 0);
    expect(rejection).toBeUndefined();
    expect(outcome, 'the dispatch has not settled').toBeDefined();
    const settled = outcome as Outcome;
    expect(settled.ok ? 'ok' : settled.kind).toBe(testCase.expected);
    if (!settled.ok) {
      expect(isDispatchError(settled)).toBe(true);
      const wire = settled.toJsonRpcError();
      expect(wire.data.kind).toBe(settled.kind);
      expect(typeof wire.message).toBe('string');
      expect(wire.message).not.toMatch(/\n\s+at /);
      expect(() => JSON.stringify(settled)).not.toThrow();
      if (!(testCase.handlerRuns ?? false)) {
        expect(settled.attempts).toBe(0);
        expect(world.calls['odd.result']).toBe(0);
      }
    }
    testCase.verify?.(settled, world);

    // Nothing leaked onto shared prototypes, and the next good call works.
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeNames);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect((Object.prototype as Record<string, unknown>)['polluted']).toBeUndefined();
    const good = await world.dispatcher.dispatch('search.web', { query: 'good' });
    expect(good).toMatchObject({ ok: true, result: 'result:4', attempts: 1 });
    await vi.advanceTimersByTimeAsync(0);
    expect(unhandled).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('bad options at construction', () => {
  const optionCases: Array<[string, () => unknown, RegExp]> = [
    ['retry maxAttempts 0', () => retry({ maxAttempts: 0 }), /maxAttempts/],
    ['retry maxAttempts 1.5', () => retry({ maxAttempts: 1.5 }), /maxAttempts/],
    ['retry maxAttempts -1', () => retry({ maxAttempts: -1 }), /maxAttempts/],
    ['retry maxAttempts NaN', () => retry({ maxAttempts: NaN }), /maxAttempts/],
    ['retry maxAttempts Infinity', () => retry({ maxAttempts: Infinity }), /maxAttempts/],
    ['retry maxAttempts "3"', () => retry({ maxAttempts: '3' as unknown as number }), /maxAttempts/],
    ['retry baseDelayMs -1', () => retry({ baseDelayMs: -1 }), /baseDelayMs/],
    ['retry random not a function', () => retry({ random: 0.5 as unknown as () => number }), /random/],
    [
      'defaultStack retry maxAttempts 0',
      () => defaultStack({ registry: new ToolRegistry(), retry: { maxAttempts: 0 } }),
      /maxAttempts/,
    ],
    ['timeout defaultMs 0', () => timeout({ defaultMs: 0 }), /defaultMs/],
    ['timeout defaultMs NaN', () => timeout({ defaultMs: NaN }), /defaultMs/],
    ['concurrencyLimit max 0', () => concurrencyLimit({ max: 0 }), /max/],
    ['concurrencyLimit max 2.5', () => concurrencyLimit({ max: 2.5 }), /max/],
    ['idempotency ttlMs 0', () => idempotency({ ttlMs: 0 }), /ttlMs/],
    ['idempotency maxEntries 0', () => idempotency({ maxEntries: 0 }), /maxEntries/],
    ['schemaValidation maxDepth 0', () => schemaValidation({ maxDepth: 0 }), /maxDepth/],
    ['createBudget(-1)', () => createBudget(-1), /toolCalls/],
    ['createBudget(NaN)', () => createBudget(NaN), /toolCalls/],
    [
      'a TransientError with retryAfterMs -1',
      () => new TransientError('x', { retryAfterMs: -1 }),
      /retryAfterMs/,
    ],
    [
      'defaultStack(null)',
      () => defaultStack(null as unknown as Parameters<typeof defaultStack>[0]),
      /registry/,
    ],
  ];

  it.each(optionCases)('%s throws a TypeError naming the option', (_name, make, option) => {
    expect(make).toThrow(TypeError);
    expect(make).toThrow(option);
  });

  it('accepts maxAttempts 1 (no retry)', async () => {
    const registry = new ToolRegistry().register({
      name: 'flaky.op',
      inputSchema: z.object({}),
      handler: () => {
        throw new TransientError('busy');
      },
    });
    const dispatcher = createDispatcher(defaultStack({ registry, retry: { maxAttempts: 1 } }));
    expect(await dispatcher.dispatch('flaky.op', {})).toMatchObject({ kind: 'transient', attempts: 1 });
  });
});
