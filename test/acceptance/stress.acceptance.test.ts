// A small seeded random-schedule check of the invariants (not a replacement for the property suite).
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { EventEmitter } from 'node:events';
import {
  ToolRegistry,
  TransientError,
  createBudget,
  createDispatcher,
  defaultStack,
  type Outcome,
} from '../../index.js';
import { useFake } from './helpers.js';

beforeEach(() => useFake());
afterEach(() => {
  vi.useRealTimers();
});

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('seeded random schedules keep the invariants', () => {
  it.each(Array.from({ length: 12 }, (_, i) => i + 1))('seed %d', async (seed) => {
    const r = rng(seed);
    const MAX = 3;
    const registry = new ToolRegistry();
    let running = 0;
    let maxRunning = 0;
    const runningPerKey = new Map<string, number>();
    const violations: string[] = [];
    const successAt = new Map<string, number>();
    const nonIdemTimedOut = new Set<string>();
    const modes = ['ok', 'transient', 'internal', 'hang', 'slow', 'string'] as const;
    for (const idempotent of [true, false]) {
      registry.register({
        name: idempotent ? 'tool.idem' : 'tool.write',
        inputSchema: z.object({ mode: z.enum(modes), delay: z.number(), id: z.number() }),
        idempotent,
        timeoutMs: 200,
        handler: async (args, ctx) => {
          const key = ctx.idempotencyKey;
          if (!idempotent && ctx.attempt > 1 && nonIdemTimedOut.has(ctx.callId))
            violations.push(`re-ran timed out write ${ctx.callId}`);
          if (key !== undefined) {
            const n = (runningPerKey.get(key) ?? 0) + 1;
            runningPerKey.set(key, n);
            if (n > 1) violations.push(`two executions of key ${key}`);
            const at = successAt.get(key);
            if (at !== undefined && Date.now() - at < 60_000) violations.push(`ran ${key} within TTL`);
          }
          running++;
          maxRunning = Math.max(maxRunning, running);
          // An attempt counts as running until it settles or its signal aborts (a timed-out
          // handler that ignores its signal no longer holds a slot, per the contract).
          let live = true;
          const done = () => {
            if (!live) return;
            live = false;
            running--;
            if (key !== undefined) runningPerKey.set(key, runningPerKey.get(key)! - 1);
          };
          ctx.signal.addEventListener('abort', done, { once: true });
          try {
            await new Promise<void>((res) => setTimeout(res, args.delay));
            switch (args.mode) {
              case 'ok':
                if (key !== undefined && !ctx.signal.aborted) successAt.set(key, Date.now());
                return args.id;
              case 'transient':
                throw new TransientError('busy');
              case 'internal':
                throw new Error('bad');
              case 'string':
                throw 'str';
              case 'hang':
                await new Promise<void>((res) => setTimeout(res, 10_000));
                return 'late';
              case 'slow':
                await new Promise<void>((res) => setTimeout(res, 300));
                if (!idempotent) nonIdemTimedOut.add(ctx.callId);
                return 'slow';
            }
          } finally {
            done();
          }
        },
      });
    }
    const disp = createDispatcher(defaultStack({ registry, concurrency: { max: MAX } }));
    const budget = createBudget(40);
    const controllers: AbortController[] = [];
    const results: { p: Promise<Outcome>; settled: boolean; count: number }[] = [];
    const usedKeys = new Map<string, { name: string; mode: string; delay: number; id: number }>();
    for (let i = 0; i < 60; i++) {
      const name = r() < 0.5 ? 'tool.idem' : 'tool.write';
      let mode = modes[Math.floor(r() * modes.length)]!;
      let delay = Math.floor(r() * 50);
      let id = i;
      let key: string | undefined;
      if (r() < 0.5) {
        key = `k${Math.floor(r() * 6)}`;
        const prev = usedKeys.get(key);
        if (prev && r() < 0.8) {
          // reuse with identical tool and args, so no conflict
          ({ mode, delay, id } = prev as { mode: (typeof modes)[number]; delay: number; id: number });
        }
        if (!prev) usedKeys.set(key, { name, mode, delay, id });
      }
      const prevForKey = key ? usedKeys.get(key) : undefined;
      const callName = prevForKey && prevForKey.id === id ? prevForKey.name : name;
      const ac = new AbortController();
      controllers.push(ac);
      const options = {
        ...(key !== undefined ? { idempotencyKey: key } : {}),
        ...(r() < 0.3 ? { budget } : {}),
        ...(r() < 0.3 ? { signal: ac.signal } : {}),
      };
      const entry = { p: disp.dispatch(callName, { mode, delay, id }, options), settled: false, count: 0 };
      entry.p.then(
        () => {
          entry.settled = true;
          entry.count++;
        },
        () => violations.push('rejected'),
      );
      results.push(entry);
      if (r() < 0.2) setTimeout(() => ac.abort(), Math.floor(r() * 400));
      await vi.advanceTimersByTimeAsync(Math.floor(r() * 40));
    }
    await vi.advanceTimersByTimeAsync(60_000);
    const outs = await Promise.all(results.map((x) => x.p));
    expect(violations).toEqual([]);
    expect(maxRunning).toBeLessThanOrEqual(MAX);
    expect(results.every((x) => x.settled && x.count === 1)).toBe(true);
    for (const o of outs) {
      expect(o.attempts).toBeLessThanOrEqual(3);
      if (!o.ok)
        expect([
          'transient',
          'internal',
          'timeout',
          'cancelled',
          'budget_exceeded',
          'idempotency_conflict',
          // A write that timed out leaves its key in doubt: the same key is not run again.
          'outcome_unknown',
        ]).toContain(o.kind);
    }
    expect(budget.limit - budget.remaining).toBeLessThanOrEqual(40);
    expect(budget.remaining).toBeGreaterThanOrEqual(0);
    // let hung handlers finish, then nothing is left
    await vi.advanceTimersByTimeAsync(20_000);
    expect(vi.getTimerCount()).toBe(0);
    for (const ac of controllers) expect(EventEmitter.getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  });
});
