import { afterEach, describe, expect, it, vi } from 'vitest';
import { harnessStep, toolAnswer, toToolMessage, type HarnessStep } from '../src/harness.js';
import { DispatchError, type Outcome } from '../index.js';

const success = (result: unknown, attempts = 1): Outcome => ({ ok: true, result, attempts });
const failure = (kind: string, attempts: number, message = `${kind} happened`, retryAfterMs?: number) =>
  new DispatchError(kind, message, {
    attempts,
    cause: new Error('hidden cause'),
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });

describe('harnessStep', () => {
  const table: Array<[string, Outcome, HarnessStep]> = [
    ['success', success('ok'), { hook: 'none', replan: false }],
    ['served from the idempotency cache', success('ok', 0), { hook: 'none', replan: false }],
    ['schema', failure('schema', 0), { hook: 'on_error', replan: true }],
    ['not_found', failure('not_found', 0), { hook: 'on_error', replan: true }],
    ['idempotency_conflict', failure('idempotency_conflict', 0), { hook: 'on_error', replan: true }],
    ['timeout, retries exhausted', failure('timeout', 3), { hook: 'on_error', replan: true }],
    ['timeout, attempts left', failure('timeout', 1), { hook: 'on_error', replan: false }],
    ['transient, retries exhausted', failure('transient', 3), { hook: 'on_error', replan: true }],
    ['transient, more attempts than max', failure('transient', 5), { hook: 'on_error', replan: true }],
    ['transient, not retried', failure('transient', 1), { hook: 'on_error', replan: false }],
    ['internal', failure('internal', 1), { hook: 'on_error', replan: true }],
    ['circuit_open', failure('circuit_open', 0, 'open', 5_000), { hook: 'on_error', replan: true }],
    [
      'budget_exceeded before any attempt',
      failure('budget_exceeded', 0),
      { hook: 'on_budget_exceeded', replan: false },
    ],
    [
      'budget_exceeded mid-retry',
      failure('budget_exceeded', 2),
      { hook: 'on_budget_exceeded', replan: false },
    ],
    ['cancelled', failure('cancelled', 1), { hook: 'none', replan: false }],
    ['an unknown kind', failure('rate_limited', 1), { hook: 'on_error', replan: true }],
  ];

  it.each(table)('decides %s', (_name, outcome, expected) => {
    expect(harnessStep(outcome)).toEqual(expected);
  });

  it('replans after the one attempt a non-idempotent tool gets, given maxAttempts 1', () => {
    expect(harnessStep(failure('timeout', 1), { maxAttempts: 1 })).toEqual({
      hook: 'on_error',
      replan: true,
    });
  });

  it('compares transient attempts with the given maxAttempts', () => {
    expect(harnessStep(failure('transient', 3), { maxAttempts: 5 })).toEqual({
      hook: 'on_error',
      replan: false,
    });
    expect(harnessStep(failure('transient', 1), { maxAttempts: 1 })).toEqual({
      hook: 'on_error',
      replan: true,
    });
  });

  it('rejects a malformed maxAttempts or outcome with a TypeError', () => {
    for (const maxAttempts of [0, -1, 1.5, Number.NaN, Infinity, '3']) {
      expect(() => harnessStep(success('ok'), { maxAttempts: maxAttempts as number })).toThrow(
        new TypeError(`maxAttempts must be an integer >= 1, got ${String(maxAttempts)}`),
      );
    }
    expect(() => harnessStep(undefined as unknown as Outcome)).toThrow(TypeError);
    expect(() => harnessStep(success('ok'), null as unknown as object)).toThrow(TypeError);
  });
});

describe('toToolMessage', () => {
  describe('for a success', () => {
    it('renders a string as it is', () => {
      expect(toToolMessage(success('plain "text"\nline two'))).toBe('plain "text"\nline two');
    });

    it('renders an object as compact JSON', () => {
      expect(toToolMessage(success({ hits: [{ title: 'a', score: 1.5 }], next: null }))).toBe(
        '{"hits":[{"title":"a","score":1.5}],"next":null}',
      );
    });

    it('renders bigints as decimal strings', () => {
      expect(toToolMessage(success(12345678901234567890n))).toBe('"12345678901234567890"');
      expect(toToolMessage(success({ id: 1n }))).toBe('{"id":"1"}');
    });

    it('marks cycles instead of throwing, and keeps shared references that are not cycles', () => {
      const node: Record<string, unknown> = { name: 'root' };
      node.self = node;
      const shared = { v: 1 };
      expect(toToolMessage(success(node))).toBe('{"name":"root","self":"[Circular]"}');
      expect(toToolMessage(success([shared, shared]))).toBe('[{"v":1},{"v":1}]');
    });

    it('renders undefined, functions and symbols as no result, and leaves them out of objects', () => {
      expect(toToolMessage(success(undefined))).toBe('(no result)');
      expect(toToolMessage(success(() => 1))).toBe('(no result)');
      expect(toToolMessage(success(Symbol('s')))).toBe('(no result)');
      expect(toToolMessage(success({ a: undefined, f: () => 1, b: 2, list: [undefined, () => 1] }))).toBe(
        '{"b":2,"list":[null,null]}',
      );
    });

    it('renders maps, sets, dates, errors and non-finite numbers without a stack', () => {
      const result = {
        map: new Map([['k', 1]]),
        set: new Set([1, 2]),
        when: new Date(0),
        error: new Error('inner\n    at frame (file.ts:1:1)'),
        nan: Number.NaN,
      };
      expect(toToolMessage(success(result))).toBe(
        '{"map":[["k",1]],"set":[1,2],"when":"1970-01-01T00:00:00.000Z",' +
          '"error":{"name":"Error","message":"inner"},"nan":"NaN"}',
      );
    });

    it('survives throwing getters, throwing toJSON and hostile proxies', () => {
      const getter = {
        ok: 1,
        get bad(): never {
          throw new Error('getter');
        },
      };
      const badToJson = {
        toJSON: () => {
          throw new Error('toJSON');
        },
      };
      const proxy = new Proxy(
        {},
        {
          ownKeys: () => {
            throw new Error('trap');
          },
        },
      );
      expect(toToolMessage(success(getter))).toBe('{"ok":1,"bad":"[Unreadable: getter]"}');
      expect(toToolMessage(success({ nested: badToJson }))).toBe('{"nested":"[Unreadable: toJSON]"}');
      // Nothing of it can be read: the tool ran, but the model is told its result is lost.
      expect(toToolMessage(success(proxy))).toBe(
        'error (internal, after 1 attempt): The tool ran, but its result cannot be rendered for the model: trap' +
          ' Hint: The tool failed; do not repeat the same call unchanged.',
      );
    });

    it('truncates a long result with a marker, within maxLength', () => {
      const message = toToolMessage(success('x'.repeat(5_000)));
      expect(message).toHaveLength(2_000);
      expect(message.endsWith('… [truncated]')).toBe(true);
      expect(toToolMessage(success('x'.repeat(50)), { maxLength: 20 })).toBe(`${'x'.repeat(7)}… [truncated]`);
      expect(toToolMessage(success('x'.repeat(50)), { maxLength: 5 })).toBe('xxxxx');
      expect(toToolMessage(success('x'.repeat(5_000)), { maxLength: Infinity })).toHaveLength(5_000);
    });

    it('never cuts a surrogate pair in half', () => {
      const message = toToolMessage(success(`${'x'.repeat(6)}${'😀'.repeat(8)}`), { maxLength: 20 });
      expect(message).toBe(`${'x'.repeat(6)}… [truncated]`);
    });
  });

  describe('for a failure', () => {
    const cases: Array<[string, DispatchError, string]> = [
      [
        'schema',
        failure('schema', 0, 'Invalid args for "search.web": query: expected string'),
        'error (schema): Invalid args for "search.web": query: expected string Hint: Fix the arguments',
      ],
      [
        'not_found',
        failure('not_found', 0, 'No tool named "search.wbe"'),
        'error (not_found): No tool named "search.wbe" Hint: Use one of the listed tools.',
      ],
      [
        'timeout',
        failure('timeout', 1, '"search.web" timed out after 5000 ms (attempt 1)'),
        'error (timeout, after 1 attempt): "search.web" timed out after 5000 ms (attempt 1) Hint: The tool did not answer in time',
      ],
      [
        'transient',
        failure('transient', 3, 'backend busy', 500),
        'error (transient, after 3 attempts): backend busy Hint: The failure may be temporary; try again after 500 ms',
      ],
      [
        'internal',
        failure('internal', 1, 'boom'),
        'error (internal, after 1 attempt): boom Hint: The tool failed; do not repeat the same call unchanged.',
      ],
      [
        'budget_exceeded',
        failure('budget_exceeded', 2, 'The tool-call budget is spent'),
        'error (budget_exceeded, after 2 attempts): The tool-call budget is spent Hint: The tool-call budget is spent; stop calling tools',
      ],
      [
        'circuit_open',
        failure('circuit_open', 0, 'The circuit for "search.web" is open', 4_000.2),
        'error (circuit_open): The circuit for "search.web" is open Hint: The tool is unavailable for now; retry after 4001 ms or use another tool.',
      ],
      [
        'circuit_open without retryAfterMs',
        failure('circuit_open', 0, 'open'),
        'error (circuit_open): open Hint: The tool is unavailable for now; retry later or use another tool.',
      ],
      [
        'cancelled',
        failure('cancelled', 1, 'The call was cancelled by the caller'),
        'error (cancelled, after 1 attempt): The call was cancelled by the caller Hint: The call was cancelled; do not retry it.',
      ],
      [
        'idempotency_conflict',
        failure('idempotency_conflict', 0, 'Idempotency key "k" was already used'),
        'error (idempotency_conflict): Idempotency key "k" was already used Hint: That idempotency key belongs to a different call',
      ],
      [
        'an unknown kind with retryAfterMs',
        failure('rate_limited', 0, 'slow down', 1_000),
        'error (rate_limited): slow down Hint: Retry after 1000 ms or use another tool.',
      ],
      ['an unknown kind', failure('quota', 1, 'no quota'), 'error (quota, after 1 attempt): no quota'],
    ];

    it.each(cases)('renders %s with its hint', (_name, outcome, expected) => {
      const message = toToolMessage(outcome);
      expect(message.startsWith(expected)).toBe(true);
      expect(message).not.toContain('hidden cause');
    });

    it('ends an unknown kind without a hint', () => {
      expect(toToolMessage(failure('quota', 1, 'no quota'))).toBe('error (quota, after 1 attempt): no quota');
    });

    it('never includes stack lines, even when the message carries them', () => {
      const error = new Error('boom');
      const outcome = failure('internal', 1, `boom\n${String(error.stack)}\n    at handler (tool.ts:3:9)`);
      const message = toToolMessage(outcome);
      expect(message).not.toMatch(/^\s*at /m);
      expect(message).not.toMatch(/\bat handler\b|\.ts:\d+/);
      expect(message).not.toContain('\n');
      expect(message.startsWith('error (internal, after 1 attempt): boom Error: boom Hint:')).toBe(true);
    });

    it('falls back to the kind when the message is empty', () => {
      expect(toToolMessage(failure('quota', 0, ''))).toBe('error (quota): quota');
    });

    it('truncates a long message but keeps the hint whole', () => {
      const message = toToolMessage(failure('schema', 0, 'y'.repeat(5_000)), { maxLength: 300 });
      expect(message).toHaveLength(300);
      expect(message.startsWith('error (schema): yyy')).toBe(true);
      expect(message).toMatch(
        /y… \[truncated\] Hint: Fix the arguments to match the tool's input schema, then call it again\.$/,
      );
    });

    it('truncates everything when maxLength leaves no room for the hint', () => {
      const message = toToolMessage(failure('schema', 0, 'y'.repeat(500)), { maxLength: 60 });
      expect(message).toHaveLength(60);
      expect(message.endsWith('… [truncated]')).toBe(true);
    });
  });

  it('rejects a malformed maxLength or outcome with a TypeError', () => {
    for (const maxLength of [0, -1, 2.5, Number.NaN, '10']) {
      expect(() => toToolMessage(success('x'), { maxLength: maxLength as number })).toThrow(
        /maxLength must be an integer >= 1/,
      );
    }
    expect(() => toToolMessage(null as unknown as Outcome)).toThrow(TypeError);
  });
});

describe('toolAnswer', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  const hidden = () =>
    new Proxy(
      {},
      {
        ownKeys: () => {
          throw new Error('keys withheld');
        },
      },
    );

  it('keeps a renderable outcome as it is, with its toToolMessage text', () => {
    const ok = success({ hits: [1] }, 2);
    expect(toolAnswer(ok)).toEqual({ outcome: ok, text: '{"hits":[1]}' });
    expect(toolAnswer(ok).outcome).toBe(ok);
    const failed = failure('timeout', 1, 'slow');
    expect(toolAnswer(failed, { maxLength: 40 })).toEqual({
      outcome: failed,
      text: toToolMessage(failed, { maxLength: 40 }),
    });
  });

  it('makes a success whose result cannot be read an internal failure naming the tool', () => {
    const { outcome, text } = toolAnswer(success(hidden(), 2), { displayName: 'vault__read' });
    expect(outcome).toMatchObject({ ok: false, kind: 'internal', attempts: 2, jsonrpcCode: -32603 });
    expect(outcome.ok ? undefined : (outcome.cause as Error).message).toBe('keys withheld');
    expect(text).toBe(
      'error (internal, after 2 attempts): "vault__read" ran, but its result cannot be rendered for the model:' +
        ' keys withheld Hint: The tool failed; do not repeat the same call unchanged.',
    );
  });

  it('makes a success whose JSON no string can hold an internal failure', () => {
    vi.spyOn(JSON, 'stringify').mockImplementationOnce(() => {
      throw new RangeError('Invalid string length');
    });
    const { outcome, text } = toolAnswer(success({ huge: true }), { displayName: 'dump' });
    expect(outcome).toMatchObject({ ok: false, kind: 'internal' });
    expect(text).toMatch(/^error \(internal, after 1 attempt\): "dump" ran, .*: Invalid string length/);
  });

  it('with serializable, swaps a result JSON.stringify cannot take for its JSON-safe copy', () => {
    const cyclic: Record<string, unknown> = { n: 1n };
    cyclic['self'] = cyclic;
    const { outcome, text } = toolAnswer(success(cyclic, 3), { serializable: true });
    expect(outcome).toEqual({ ok: true, result: { n: '1', self: '[Circular]' }, attempts: 3 });
    expect(text).toBe('{"n":"1","self":"[Circular]"}');
    const plain = success({ at: new Date(0) });
    expect(toolAnswer(plain, { serializable: true }).outcome).toBe(plain);
    const raw = success(cyclic);
    expect(toolAnswer(raw).outcome).toBe(raw);
  });

  it('rejects malformed options with a TypeError naming the option', () => {
    expect(() => toolAnswer(success('x'), { displayName: 3 as never })).toThrow(/displayName/);
    expect(() => toolAnswer(success('x'), { serializable: 'yes' as never })).toThrow(/serializable/);
    expect(() => toolAnswer(success('x'), { maxLength: 0 })).toThrow(/maxLength/);
    expect(() => toolAnswer(undefined as never)).toThrow(TypeError);
  });
});
