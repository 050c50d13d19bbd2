import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { logging, type LogLevel, type LogRecord } from '../../middleware/logging.js';
import {
  createDispatcher,
  defaultStack,
  errorMapping,
  retry,
  timeout,
  toolLookup,
  ToolRegistry,
  TransientError,
  type Middleware,
  type ToolHandler,
} from '../../index.js';
import { flush, gate } from '../helpers/gate.js';

interface Line {
  level: LogLevel;
  record: LogRecord;
}

function fakeLogger() {
  const lines: Line[] = [];
  const method = (level: LogLevel) => (record: LogRecord) => {
    lines.push({ level, record });
  };
  const logger = {
    debug: method('debug'),
    info: method('info'),
    warn: method('warn'),
    error: method('error'),
  };
  const summary = () => lines.map(({ level, record }) => `${level} ${record.event}`);
  return { logger, lines, summary };
}

function registryWith(
  handler: ToolHandler<{ query: string }>,
  tool: { idempotent?: boolean; timeoutMs?: number } = {},
) {
  return new ToolRegistry().register({
    name: 'search.web',
    inputSchema: z.object({ query: z.string() }),
    handler,
    ...tool,
  });
}

// Fake timers are installed first, so the dispatcher, retry, timeout and logging share one clock.
const now = () => Date.now();

function setup(
  handler: ToolHandler<{ query: string }>,
  options: {
    tool?: { idempotent?: boolean; timeoutMs?: number };
    logging?: Omit<Parameters<typeof logging>[0], 'logger'>;
    extra?: Middleware[];
    concurrency?: number;
  } = {},
) {
  const log = fakeLogger();
  const registry = registryWith(handler, options.tool);
  const dispatcher = createDispatcher(
    [
      logging({ logger: log.logger, now, ...options.logging }),
      ...(options.extra ?? []),
      ...defaultStack({
        registry,
        retry: { random: () => 0 },
        ...(options.concurrency === undefined ? {} : { concurrency: { max: options.concurrency } }),
      }),
    ],
    { now },
  );
  return { ...log, dispatcher };
}

const roundTrip = (value: unknown): unknown => JSON.parse(JSON.stringify(value)) as unknown;

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
});

afterEach(() => {
  vi.useRealTimers();
});

describe('logging', () => {
  it('writes attempts as debug, retries as warn and the final failure as error', async () => {
    const { dispatcher, lines, summary } = setup(() => {
      throw new TransientError('backend busy');
    });
    const pending = dispatcher.dispatch('search.web', { query: 'x' }, { callId: 'c1' });
    await vi.advanceTimersByTimeAsync(100 + 400);
    const outcome = await pending;

    expect(outcome).toMatchObject({ ok: false, kind: 'transient', attempts: 3 });
    expect(summary()).toEqual([
      'debug dispatch.attempt',
      'debug dispatch.attempt_failed',
      'warn dispatch.retry',
      'debug dispatch.attempt',
      'debug dispatch.attempt_failed',
      'warn dispatch.retry',
      'debug dispatch.attempt',
      'debug dispatch.attempt_failed',
      'error dispatch.failure',
    ]);
    expect(lines[2]?.record).toEqual({
      event: 'dispatch.retry',
      tool: 'search.web',
      callId: 'c1',
      attempt: 1,
      durationMs: 0,
      kind: 'transient',
      delayMs: 100,
    });
    expect(lines[8]?.record).toEqual({
      event: 'dispatch.failure',
      tool: 'search.web',
      callId: 'c1',
      attempt: 3,
      durationMs: 500,
      kind: 'transient',
      attempts: 3,
      message: 'backend busy',
    });
  });

  it('writes a success as info with the time since the dispatch started', async () => {
    const held = gate<string>();
    const { dispatcher, lines, summary } = setup(() => held.promise);
    const pending = dispatcher.dispatch('search.web', { query: 'x' }, { callId: 'c2' });
    await vi.advanceTimersByTimeAsync(250);
    held.open('done');
    await expect(pending).resolves.toEqual({ ok: true, result: 'done', attempts: 1 });

    expect(summary()).toEqual(['debug dispatch.attempt', 'info dispatch.success']);
    expect(lines[1]?.record).toEqual({
      event: 'dispatch.success',
      tool: 'search.web',
      callId: 'c2',
      attempt: 1,
      durationMs: 250,
      attempts: 1,
    });
  });

  it('writes a timeout as warn, with its timeoutMs', async () => {
    const { dispatcher, lines, summary } = setup(() => new Promise(() => {}), {
      tool: { timeoutMs: 1_000 },
    });
    const pending = dispatcher.dispatch('search.web', { query: 'x' });
    await vi.advanceTimersByTimeAsync(1_000);
    await expect(pending).resolves.toMatchObject({ ok: false, kind: 'timeout', attempts: 1 });

    expect(summary()).toEqual([
      'debug dispatch.attempt',
      'warn dispatch.timeout',
      'debug dispatch.attempt_failed',
      'error dispatch.failure',
    ]);
    expect(lines[1]?.record).toMatchObject({ timeoutMs: 1_000, durationMs: 1_000, attempt: 1 });
  });

  it('writes queueing and idempotency hits as debug', async () => {
    const held = gate<string>();
    const { dispatcher, lines } = setup(() => held.promise, { concurrency: 1 });
    const first = dispatcher.dispatch('search.web', { query: 'a' }, { callId: 'a', idempotencyKey: 'k' });
    const second = dispatcher.dispatch('search.web', { query: 'b' }, { callId: 'b' });
    const follower = dispatcher.dispatch('search.web', { query: 'a' }, { callId: 'a2', idempotencyKey: 'k' });
    await flush();
    held.open('ok');
    await Promise.all([first, second, follower]);

    const queued = lines.find((line) => line.record.event === 'concurrency.queued');
    expect(queued).toEqual({
      level: 'debug',
      record: expect.objectContaining({ callId: 'b', queued: 1, max: 1 }) as unknown,
    });
    const cachedCall = await dispatcher.dispatch(
      'search.web',
      { query: 'a' },
      { callId: 'a3', idempotencyKey: 'k' },
    );
    expect(cachedCall).toEqual({ ok: true, result: 'ok', attempts: 0 });
    const hits = lines.filter((line) => line.record.event === 'idempotency.hit');
    expect(hits).toEqual([
      {
        level: 'debug',
        record: expect.objectContaining({ callId: 'a2', key: 'k', source: 'in_flight' }) as unknown,
      },
      {
        level: 'debug',
        record: expect.objectContaining({ callId: 'a3', key: 'k', source: 'cache' }) as unknown,
      },
    ]);
  });

  it('writes records that survive JSON.stringify and carry no cause or stack', async () => {
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic.self = cyclic;
    const emitOddDetails: Middleware = async function emitOddDetails(ctx, next) {
      ctx.emit('custom.event', {
        big: 10n,
        forever: Infinity,
        notANumber: Number.NaN,
        when: new Date(0),
        error: new Error('inner'),
        cause: new Error('hidden'),
        stack: 'Error\n    at somewhere (file.ts:1:1)',
        fn: () => 1,
        missing: undefined,
        cyclic,
        nested: { cause: new Error('hidden too'), ok: [1, undefined, 'two'] },
      });
      await next();
    };
    const { dispatcher, lines } = setup(
      () => {
        throw new Error('boom', { cause: new Error('root cause') });
      },
      { extra: [emitOddDetails] },
    );
    await expect(dispatcher.dispatch('search.web', { query: 'x' })).resolves.toMatchObject({
      kind: 'internal',
    });

    expect(lines.map((line) => line.record.event)).toEqual([
      'custom.event',
      'dispatch.attempt',
      'dispatch.attempt_failed',
      'dispatch.failure',
    ]);
    const callId = lines[0]?.record.callId;
    expect(callId).toMatch(/^call-/);
    for (const { record } of lines) {
      expect(roundTrip(record)).toEqual(record);
      expect(record).toMatchObject({ tool: 'search.web', callId });
      expect(typeof record.attempt).toBe('number');
      expect(typeof record.durationMs).toBe('number');
      const text = JSON.stringify(record);
      expect(text).not.toMatch(/hidden|root cause|\bat somewhere\b/);
    }
    expect(lines[0]).toEqual({
      level: 'debug',
      record: {
        event: 'custom.event',
        tool: 'search.web',
        callId,
        attempt: 0,
        durationMs: 0,
        big: '10',
        forever: 'Infinity',
        notANumber: 'NaN',
        when: '1970-01-01T00:00:00.000Z',
        error: 'inner',
        cyclic: { name: 'loop' },
        nested: { ok: [1, null, 'two'] },
      },
    });
  });

  it('lets levels override the defaults and level drop what is below it', async () => {
    const { dispatcher, summary } = setup(
      () => {
        throw new TransientError('busy');
      },
      { logging: { level: 'info', levels: { 'dispatch.retry': 'info', 'dispatch.failure': 'warn' } } },
    );
    const pending = dispatcher.dispatch('search.web', { query: 'x' });
    await vi.advanceTimersByTimeAsync(500);
    await pending;

    expect(summary()).toEqual(['info dispatch.retry', 'info dispatch.retry', 'warn dispatch.failure']);
  });

  it('never breaks a dispatch when the logger throws or rejects', async () => {
    const throwing = {
      debug: () => {
        throw new Error('disk full');
      },
      info: () => {
        throw new Error('disk full');
      },
      warn: () => Promise.reject(new Error('disk full')),
      error: () => Promise.reject(new Error('disk full')),
    };
    const registry = registryWith((args) => `result:${args.query}`);
    const dispatcher = createDispatcher([
      logging({ logger: throwing }),
      ...defaultStack({ registry, retry: { random: () => 0 } }),
    ]);
    await expect(dispatcher.dispatch('search.web', { query: 'x' })).resolves.toEqual({
      ok: true,
      result: 'result:x',
      attempts: 1,
    });
    await expect(dispatcher.dispatch('nope', {})).resolves.toMatchObject({ kind: 'not_found' });
    await flush();
  });

  it('writes each event once when it runs inside retry', async () => {
    const log = fakeLogger();
    let calls = 0;
    const registry = registryWith(() => {
      calls += 1;
      if (calls === 1) throw new TransientError('once');
      return 'ok';
    });
    const dispatcher = createDispatcher(
      [
        errorMapping(),
        toolLookup(registry),
        retry({ random: () => 0 }),
        logging({ logger: log.logger, now }),
        timeout(),
      ],
      { now },
    );
    const pending = dispatcher.dispatch('search.web', { query: 'x' });
    await vi.advanceTimersByTimeAsync(100);
    await expect(pending).resolves.toEqual({ ok: true, result: 'ok', attempts: 2 });

    expect(log.summary()).toEqual([
      'debug dispatch.attempt',
      'debug dispatch.attempt_failed',
      'warn dispatch.retry',
      'debug dispatch.attempt',
      'info dispatch.success',
    ]);
  });

  it('takes console as a logger', () => {
    expect(() => logging({ logger: console })).not.toThrow();
    expect(logging({ logger: console }).name).toBe('logging');
  });

  it('rejects malformed options with a TypeError naming the option', () => {
    const { logger } = fakeLogger();
    const call = (options: unknown) => () => logging(options as Parameters<typeof logging>[0]);
    expect(call(undefined)).toThrow(/logger/);
    expect(call(null)).toThrow(/options must be an object/);
    expect(call({})).toThrow(/logger must be an object/);
    expect(call({ logger: 'console' })).toThrow(/logger must be an object/);
    expect(call({ logger: { ...logger, warn: undefined } })).toThrow(/logger must have a warn\(\) method/);
    expect(call({ logger, level: 'trace' })).toThrow(/level must be one of/);
    expect(call({ logger, levels: { 'dispatch.retry': 'loud' } })).toThrow(/levels\["dispatch.retry"\]/);
    expect(call({ logger, levels: 'warn' })).toThrow(/levels must be an object/);
    expect(call({ logger, now: 5 })).toThrow(/now must be a function/);
    expect(call({ logger, recordArguments: 'yes' })).toThrow(/recordArguments must be a boolean/);
    for (const bad of [call(undefined), call({}), call({ logger, level: 'x' })]) {
      expect(bad).toThrow(TypeError);
    }
  });
});
