// A tool's idle timeout (`timeout: { idleMs, totalMs }`): progress keeps an attempt alive, silence
// ends it, and nothing takes it past its total; in a bare timeout stack and in the default stack.

import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  autopilot,
  createDispatcher,
  defaultStack,
  errorMapping,
  timeout,
  ToolRegistry,
  toolLookup,
  type DispatchEvent,
  type Middleware,
  type Outcome,
  type ToolContext,
  type ToolTimeout,
} from '../../index.js';
import { hasProgressListener } from '../../middleware/index.js';
import { flush } from '../helpers/gate.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const idle: ToolTimeout = { idleMs: 5_000, totalMs: 60_000 };

/**
 * A tool that runs until the test ends it, reporting progress when told; `stack` makes the
 * layers (a bare timeout stack, or the default stack).
 */
function exportTool(stack: (registry: ToolRegistry) => Middleware[], timeoutSetting: ToolTimeout = idle) {
  const events: DispatchEvent[] = [];
  const attempts: ToolContext[] = [];
  let finish: ((value: string) => void) | undefined;
  const registry = new ToolRegistry().register({
    name: 'reports.export',
    inputSchema: z.object({}),
    timeout: timeoutSetting,
    handler: (_args, ctx) => {
      attempts.push(ctx);
      return new Promise<string>((resolve) => {
        finish = resolve;
      });
    },
  });
  const dispatcher = createDispatcher(stack(registry), { onEvent: (event) => events.push(event) });
  const progress = (n: number) => attempts.at(-1)?.progress(n);
  return { dispatcher, events, attempts, progress, finish: (value: string) => finish?.(value) };
}

const stacks: Array<[string, (registry: ToolRegistry) => Middleware[]]> = [
  ['a bare timeout stack', (registry) => [errorMapping(), toolLookup(registry), timeout()]],
  ['the default stack', (registry) => defaultStack({ registry })],
  // The autopilot takes the timeout's place in the preset, and gives the same idle deadlines.
  ['the default stack with an autopilot', (registry) => defaultStack({ registry, autopilot: autopilot() })],
];

/** Whether `pending` has settled, after the microtasks queued so far have run. */
async function settled(pending: Promise<Outcome>): Promise<boolean> {
  let done = false;
  void pending.then(() => {
    done = true;
  });
  await flush();
  return done;
}

describe.each(stacks)('a tool’s idle timeout, in %s', (_name, stack) => {
  it('keeps a call that reports progress alive past idleMs, and it succeeds', async () => {
    const tool = exportTool(stack);
    const pending = tool.dispatcher.dispatch('reports.export', {});
    for (let n = 1; n <= 5; n++) {
      await vi.advanceTimersByTimeAsync(4_000);
      tool.progress(n);
    }
    // 20 s in: four times idleMs, alive because each report came within 5 s of the last.
    await vi.advanceTimersByTimeAsync(4_999);
    expect(await settled(pending)).toBe(false);
    tool.finish('exported');
    expect(await pending).toMatchObject({ ok: true, result: 'exported', attempts: 1 });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('ends a silent call at idleMs with a timeout that says it was idle', async () => {
    const tool = exportTool(stack);
    const pending = tool.dispatcher.dispatch('reports.export', {});
    await vi.advanceTimersByTimeAsync(3_000);
    tool.progress(1);
    await vi.advanceTimersByTimeAsync(4_999);
    expect(await settled(pending)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const outcome = await pending;
    expect(outcome).toMatchObject({
      ok: false,
      kind: 'timeout',
      message: '"reports.export" timed out: no progress for 5000 ms (attempt 1)',
    });
    expect(tool.events.find((event) => event.type === 'dispatch.timeout')).toMatchObject({
      timeoutMs: 5_000,
      idle: true,
    });
    expect(tool.attempts[0]?.signal.aborted).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('never lets progress take a call past totalMs', async () => {
    const tool = exportTool(stack);
    const pending = tool.dispatcher.dispatch('reports.export', {});
    for (let n = 1; n <= 14; n++) {
      await vi.advanceTimersByTimeAsync(4_000);
      tool.progress(n);
    }
    // 56 s in, the last report a moment ago: the total, not the idle time, ends it at 60 s.
    await vi.advanceTimersByTimeAsync(3_999);
    expect(await settled(pending)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await pending).toMatchObject({
      kind: 'timeout',
      message: '"reports.export" timed out after 60000 ms (attempt 1)',
    });
    expect(tool.events.find((event) => event.type === 'dispatch.timeout')).toEqual(
      expect.not.objectContaining({ idle: true }),
    );
    expect(vi.getTimerCount()).toBe(0);
  });

  it('caps totalMs at the caller’s timeoutMs', async () => {
    const tool = exportTool(stack);
    const pending = tool.dispatcher.dispatch('reports.export', {}, { timeoutMs: 10_000 });
    for (let n = 1; n <= 2; n++) {
      await vi.advanceTimersByTimeAsync(4_000);
      tool.progress(n);
    }
    await vi.advanceTimersByTimeAsync(2_000);
    expect(await pending).toMatchObject({
      kind: 'timeout',
      message: '"reports.export" timed out after 10000 ms (attempt 1)',
    });
  });

  it('shows the handler the total as its deadline, and counts its reports as listened to', async () => {
    const tool = exportTool(stack);
    const startedAt = Date.now();
    const pending = tool.dispatcher.dispatch('reports.export', {});
    await flush();
    expect(tool.attempts[0]?.deadline).toBe(startedAt + 60_000);
    expect(hasProgressListener(tool.attempts[0] as ToolContext)).toBe(true);
    tool.finish('done');
    await pending;
  });

  it('still sends the reports to the caller’s onProgress', async () => {
    const tool = exportTool(stack);
    const seen: number[] = [];
    const pending = tool.dispatcher.dispatch(
      'reports.export',
      {},
      { onProgress: (update) => seen.push(update.progress) },
    );
    await flush();
    tool.progress(1);
    tool.progress(2);
    tool.finish('done');
    await pending;
    expect(seen).toEqual([1, 2]);
  });

  it('leaves no timer or listener behind when the caller aborts', async () => {
    const tool = exportTool(stack);
    const caller = new AbortController();
    const pending = tool.dispatcher.dispatch('reports.export', {}, { signal: caller.signal });
    await vi.advanceTimersByTimeAsync(1_000);
    tool.progress(1);
    caller.abort();
    expect(await pending).toMatchObject({ kind: 'cancelled' });
    expect(vi.getTimerCount()).toBe(0);
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
    // A report after the attempt ended moves nothing and arms nothing.
    tool.progress(2);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('a tool’s idle timeout across attempts', () => {
  it('gives each attempt its own idleMs from its start', async () => {
    const contexts: ToolContext[] = [];
    const registry = new ToolRegistry().register({
      name: 'reports.export',
      inputSchema: z.object({}),
      idempotent: true,
      timeout: { idleMs: 1_000, totalMs: 10_000 },
      handler: (_args, ctx) => {
        contexts.push(ctx);
        return new Promise<never>(() => {});
      },
    });
    const dispatcher = createDispatcher(
      defaultStack({ registry, retry: { maxAttempts: 2, baseDelayMs: 100, random: () => 0 } }),
    );
    const pending = dispatcher.dispatch('reports.export', {});
    await vi.advanceTimersByTimeAsync(1_000);
    expect(contexts).toHaveLength(1);
    expect(contexts[0]?.signal.aborted).toBe(true);
    // The backoff, then a second attempt with a fresh idle deadline.
    await vi.advanceTimersByTimeAsync(100);
    expect(contexts).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(999);
    contexts[1]?.progress(1);
    await vi.advanceTimersByTimeAsync(999);
    expect(await settled(pending)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await pending).toMatchObject({
      kind: 'timeout',
      attempts: 2,
      message: '"reports.export" timed out: no progress for 1000 ms (attempt 2)',
    });
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('register() with timeout', () => {
  const base = { name: 'reports.export', inputSchema: z.object({}), handler: () => 'ok' };

  it('keeps the idle timeout on the tool and its listing', () => {
    const registry = new ToolRegistry().register({ ...base, timeout: idle });
    expect(registry.get('reports.export')).toMatchObject({ timeoutMs: undefined, timeout: idle });
    expect(registry.list()[0]).toMatchObject({ timeoutMs: undefined, timeout: idle });
  });

  it('throws a TypeError naming both when timeoutMs and timeout are given', () => {
    expect(() => new ToolRegistry().register({ ...base, timeoutMs: 1_000, timeout: idle })).toThrow(
      expect.objectContaining({
        name: 'TypeError',
        message: expect.stringMatching(/both timeoutMs and timeout/),
      }),
    );
  });

  it.each([
    ['a number', 5_000, /timeout of "reports\.export" must be an object/],
    ['null', null, /timeout of "reports\.export" must be an object/],
    ['no idleMs', { totalMs: 1_000 }, /timeout\.idleMs of "reports\.export" must be a finite number > 0/],
    ['a zero idleMs', { idleMs: 0, totalMs: 1_000 }, /timeout\.idleMs/],
    ['an infinite totalMs', { idleMs: 1_000, totalMs: Infinity }, /timeout\.totalMs .* finite number > 0/],
    ['a NaN totalMs', { idleMs: 1_000, totalMs: Number.NaN }, /timeout\.totalMs/],
    [
      'an idleMs above totalMs',
      { idleMs: 2_000, totalMs: 1_000 },
      /timeout\.idleMs .* must be <= timeout\.totalMs/,
    ],
    ['a misspelt key', { idelMs: 1_000, totalMs: 2_000 }, /unknown field "idelMs"; did you mean "idleMs"\?/],
  ])('throws a TypeError for %s', (_case, given, message) => {
    expect(() => new ToolRegistry().register({ ...base, timeout: given as never })).toThrow(
      expect.objectContaining({ name: 'TypeError', message: expect.stringMatching(message) }),
    );
  });
});

describe('ctx.limit({ idleMs })', () => {
  /** A handler held until the test ends; its contexts, for reports. */
  function heldTool(timeoutSetting?: ToolTimeout) {
    const contexts: ToolContext[] = [];
    const registry = new ToolRegistry().register({
      name: 'op',
      inputSchema: z.object({}),
      ...(timeoutSetting === undefined ? {} : { timeout: timeoutSetting }),
      handler: (_args, ctx) => {
        contexts.push(ctx);
        return new Promise<never>(() => {});
      },
    });
    return { registry, contexts };
  }

  it('still fires a fixed deadline set inside it that progress has overtaken', async () => {
    const { registry, contexts } = heldTool();
    const idleLayer: Middleware = async (ctx, next) => {
      const restore = ctx.limit({ idleMs: 1_000, timeoutMs: 10_000 });
      try {
        await next();
      } finally {
        restore();
      }
    };
    // Inside: a fixed 3 s deadline, later than the idle one when it is set.
    const fixedLayer: Middleware = async (ctx, next) => {
      const restore = ctx.limit({ timeoutMs: 3_000 });
      try {
        await next();
      } finally {
        restore();
      }
    };
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), idleLayer, fixedLayer]);
    const pending = dispatcher.dispatch('op', {});
    for (let n = 1; n <= 5; n++) {
      await vi.advanceTimersByTimeAsync(600);
      contexts[0]?.progress(n);
    }
    expect(await pending).toMatchObject({
      kind: 'timeout',
      message: '"op" timed out after 3000 ms (attempt 1)',
    });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('leaves the end to an outer deadline that comes first', async () => {
    const { registry, contexts } = heldTool({ idleMs: 1_000, totalMs: 10_000 });
    const events: DispatchEvent[] = [];
    const outerLayer: Middleware = async (ctx, next) => {
      const restore = ctx.limit({ timeoutMs: 2_500 });
      try {
        await next();
      } finally {
        restore();
      }
    };
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), outerLayer, timeout()], {
      onEvent: (event) => events.push(event),
    });
    const pending = dispatcher.dispatch('op', {});
    for (let n = 1; n <= 4; n++) {
      await vi.advanceTimersByTimeAsync(600);
      contexts[0]?.progress(n);
    }
    await vi.advanceTimersByTimeAsync(100);
    expect(await pending).toMatchObject({
      kind: 'timeout',
      message: '"op" timed out after 2500 ms (attempt 1)',
    });
    expect(events.filter((event) => event.type === 'dispatch.timeout')).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(0);
  });
});
