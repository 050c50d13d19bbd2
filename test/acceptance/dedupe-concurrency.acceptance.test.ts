import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  ToolRegistry,
  TransientError,
  concurrencyLimit,
  createDispatcher,
  defaultStack,
  errorMapping,
  idempotency,
  toolLookup,
  schemaValidation,
} from '../../index.js';
import { flush, gate, track, useFake, type Gate, setup } from './helpers.js';

beforeEach(() => useFake());
afterEach(() => {
  vi.useRealTimers();
});

/** A tool whose every call waits on its own gate. */
function gatedTool(registry: ToolRegistry, name: string, opts: { idempotent?: boolean } = {}) {
  const gates: Gate<unknown>[] = [];
  const calls: { args: unknown; signal: AbortSignal; key: string | undefined }[] = [];
  let running = 0;
  let maxRunning = 0;
  registry.register({
    name,
    inputSchema: z.object({ v: z.number().default(0), amount: z.number().optional() }).passthrough(),
    idempotent: opts.idempotent ?? false,
    handler: async (args, ctx) => {
      calls.push({ args, signal: ctx.signal, key: ctx.idempotencyKey });
      running++;
      maxRunning = Math.max(maxRunning, running);
      const g = gate<unknown>();
      gates.push(g);
      try {
        return await g.promise;
      } finally {
        running--;
      }
    },
  });
  return {
    gates,
    calls,
    get running() {
      return running;
    },
    get maxRunning() {
      return maxRunning;
    },
  };
}

describe('idempotency', () => {
  it('same-key concurrent calls run the handler once; follower gets attempts 0 and an idempotency.hit', async () => {
    const { registry, log, d } = setup();
    const t = gatedTool(registry, 'payments.charge');
    const disp = d();
    const a = track(disp.dispatch('payments.charge', { amount: 5 }, { idempotencyKey: 'pay-1' }));
    const b = track(disp.dispatch('payments.charge', { amount: 5 }, { idempotencyKey: 'pay-1' }));
    await flush();
    expect(t.calls).toHaveLength(1);
    t.gates[0]!.resolve('charged');
    await flush();
    expect(a.value).toMatchObject({ ok: true, result: 'charged', attempts: 1 });
    expect(b.value).toMatchObject({ ok: true, result: 'charged', attempts: 0 });
    // a later call within TTL is served from the cache
    const c = await disp.dispatch('payments.charge', { amount: 5 }, { idempotencyKey: 'pay-1' });
    expect(c).toMatchObject({ ok: true, result: 'charged', attempts: 0 });
    expect(t.calls).toHaveLength(1);
    expect(log.types().filter((x) => x === 'idempotency.hit')).toHaveLength(2); // one in-flight join, one cache hit
  });

  it('SPEC §8.1: same-key calls queued behind a full semaphore still run the handler once', async () => {
    const { registry, d } = setup({ concurrency: { max: 1 } });
    const blocker = gatedTool(registry, 'busy.tool');
    const t = gatedTool(registry, 'payments.charge');
    const disp = d();
    const b0 = track(disp.dispatch('busy.tool', {}));
    await flush();
    const a = track(disp.dispatch('payments.charge', { amount: 5 }, { idempotencyKey: 'k' }));
    const b = track(disp.dispatch('payments.charge', { amount: 5 }, { idempotencyKey: 'k' }));
    await flush();
    expect(t.calls).toHaveLength(0);
    blocker.gates[0]!.resolve('x');
    await flush();
    expect(b0.settled).toBe(true);
    expect(t.calls).toHaveLength(1);
    t.gates[0]!.resolve('once');
    await flush();
    expect(t.calls).toHaveLength(1);
    expect(a.value).toMatchObject({ ok: true, result: 'once', attempts: 1 });
    expect(b.value).toMatchObject({ ok: true, result: 'once', attempts: 0 });
  });

  it('followers take no concurrency slot', async () => {
    const { registry, log, d } = setup({ concurrency: { max: 2 } });
    const t = gatedTool(registry, 'payments.charge');
    const other = gatedTool(registry, 'other.tool');
    const disp = d();
    disp.dispatch('payments.charge', {}, { idempotencyKey: 'k' });
    disp.dispatch('payments.charge', {}, { idempotencyKey: 'k' });
    disp.dispatch('payments.charge', {}, { idempotencyKey: 'k' });
    await flush();
    const x = track(disp.dispatch('other.tool', {}));
    await flush();
    expect(other.calls).toHaveLength(1);
    expect(log.types()).not.toContain('concurrency.queued');
    t.gates[0]!.resolve(1);
    other.gates[0]!.resolve(2);
    await flush();
    expect(x.value).toMatchObject({ ok: true, result: 2 });
  });

  it('a failed leader gives followers its error (with its attempts) and caches nothing', async () => {
    const { registry, d } = setup({ retry: { random: () => 0 } });
    let n = 0;
    registry.register({
      name: 't.flaky',
      inputSchema: z.object({}),
      handler: async () => {
        n++;
        throw new TransientError('down');
      },
    });
    const disp = d();
    const a = disp.dispatch('t.flaky', {}, { idempotencyKey: 'k' });
    const b = disp.dispatch('t.flaky', {}, { idempotencyKey: 'k' });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await a).toMatchObject({ ok: false, kind: 'transient', attempts: 3 });
    expect(await b).toMatchObject({ ok: false, kind: 'transient', attempts: 3 });
    expect(n).toBe(3);
    const c = disp.dispatch('t.flaky', {}, { idempotencyKey: 'k' });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await c).toMatchObject({ ok: false, kind: 'transient', attempts: 3 });
    expect(n).toBe(6);
  });

  it('TTL: served while now − completedAt < 60 s (default), re-run at exactly 60 s', async () => {
    const { registry, d } = setup();
    let n = 0;
    const g = gate<string>();
    registry.register({
      name: 't.x',
      inputSchema: z.object({}),
      timeoutMs: Infinity,
      handler: async () => {
        n++;
        if (n === 1) return g.promise;
        return `run-${n}`;
      },
    });
    const disp = d();
    const first = track(disp.dispatch('t.x', {}, { idempotencyKey: 'k' }));
    await vi.advanceTimersByTimeAsync(10_000); // handler takes 10 s; TTL counts from completion
    g.resolve('run-1');
    await flush();
    expect(first.value).toMatchObject({ ok: true, result: 'run-1' });
    await vi.advanceTimersByTimeAsync(59_999);
    expect(await disp.dispatch('t.x', {}, { idempotencyKey: 'k' })).toMatchObject({
      result: 'run-1',
      attempts: 0,
    });
    await vi.advanceTimersByTimeAsync(1);
    expect(await disp.dispatch('t.x', {}, { idempotencyKey: 'k' })).toMatchObject({
      result: 'run-2',
      attempts: 1,
    });
    expect(n).toBe(2);
  });

  it('ttlMs is configurable through defaultStack', async () => {
    const { registry, d } = setup({ idempotency: { ttlMs: 1_000 } });
    let n = 0;
    registry.register({ name: 't.x', inputSchema: z.object({}), handler: async () => ++n });
    const disp = d();
    await disp.dispatch('t.x', {}, { idempotencyKey: 'k' });
    await vi.advanceTimersByTimeAsync(999);
    expect(await disp.dispatch('t.x', {}, { idempotencyKey: 'k' })).toMatchObject({ result: 1 });
    await vi.advanceTimersByTimeAsync(1);
    expect(await disp.dispatch('t.x', {}, { idempotencyKey: 'k' })).toMatchObject({ result: 2 });
  });

  it('conflict: same key, other args or other tool → idempotency_conflict (-32602, attempts 0), in flight and cached', async () => {
    const { registry, d } = setup();
    const t = gatedTool(registry, 'payments.charge');
    registry.register({
      name: 'payments.refund',
      inputSchema: z.object({}).passthrough(),
      handler: async () => 'refund',
    });
    const disp = d();
    const a = track(disp.dispatch('payments.charge', { amount: 5 }, { idempotencyKey: 'k' }));
    await flush();
    const inflightConflict = await disp.dispatch('payments.charge', { amount: 6 }, { idempotencyKey: 'k' });
    expect(inflightConflict).toMatchObject({
      ok: false,
      kind: 'idempotency_conflict',
      jsonrpcCode: -32602,
      attempts: 0,
    });
    const toolConflict = await disp.dispatch('payments.refund', { amount: 5 }, { idempotencyKey: 'k' });
    expect(toolConflict).toMatchObject({ ok: false, kind: 'idempotency_conflict' });
    t.gates[0]!.resolve('charged');
    await flush();
    expect(a.value).toMatchObject({ ok: true });
    const cachedConflict = await disp.dispatch('payments.charge', { amount: 7 }, { idempotencyKey: 'k' });
    expect(cachedConflict).toMatchObject({ ok: false, kind: 'idempotency_conflict' });
    expect(await disp.dispatch('payments.refund', {}, { idempotencyKey: 'k' })).toMatchObject({
      kind: 'idempotency_conflict',
    });
    expect(t.calls).toHaveLength(1);
  });

  it('args are compared canonically (key order) and after parsing (defaults)', async () => {
    const { registry, d } = setup();
    let n = 0;
    registry.register({
      name: 't.x',
      inputSchema: z.object({ a: z.number(), b: z.number(), limit: z.number().default(5) }),
      handler: async () => ++n,
    });
    const disp = d();
    expect(await disp.dispatch('t.x', { a: 1, b: 2 }, { idempotencyKey: 'k' })).toMatchObject({
      ok: true,
      result: 1,
    });
    expect(await disp.dispatch('t.x', { b: 2, a: 1 }, { idempotencyKey: 'k' })).toMatchObject({
      ok: true,
      result: 1,
      attempts: 0,
    });
    expect(await disp.dispatch('t.x', { b: 2, a: 1, limit: 5 }, { idempotencyKey: 'k' })).toMatchObject({
      ok: true,
      result: 1,
    });
    expect(n).toBe(1);
  });

  it('without a key nothing is deduplicated', async () => {
    const { registry, d } = setup();
    let n = 0;
    registry.register({ name: 't.x', inputSchema: z.object({}), handler: async () => ++n });
    const disp = d();
    await disp.dispatch('t.x', {});
    await disp.dispatch('t.x', {});
    expect(n).toBe(2);
  });

  it('a follower that aborts only detaches (cancelled); the leader still succeeds', async () => {
    const { registry, d } = setup();
    const t = gatedTool(registry, 't.g');
    const disp = d();
    const a = track(disp.dispatch('t.g', {}, { idempotencyKey: 'k' }));
    const ac = new AbortController();
    const b = track(disp.dispatch('t.g', {}, { idempotencyKey: 'k', signal: ac.signal }));
    await flush();
    ac.abort();
    await flush();
    expect(b.value).toMatchObject({ ok: false, kind: 'cancelled' });
    expect(t.calls[0]!.signal.aborted).toBe(false);
    t.gates[0]!.resolve('v');
    await flush();
    expect(a.value).toMatchObject({ ok: true, result: 'v', attempts: 1 });
  });

  it('SPEC §8.2: a leader that aborts only detaches; its follower still gets the outcome', async () => {
    const { registry, d } = setup();
    const t = gatedTool(registry, 't.g');
    const disp = d();
    const ac = new AbortController();
    const a = track(disp.dispatch('t.g', {}, { idempotencyKey: 'k', signal: ac.signal }));
    const b = track(disp.dispatch('t.g', {}, { idempotencyKey: 'k' }));
    await flush();
    ac.abort();
    await flush();
    expect(a.value).toMatchObject({ ok: false, kind: 'cancelled' });
    expect(t.calls[0]!.signal.aborted).toBe(false);
    t.gates[0]!.resolve('v');
    await flush();
    expect(b.value).toMatchObject({ ok: true, result: 'v' });
    expect(t.calls).toHaveLength(1);
  });

  it('when every caller has aborted, the shared execution is aborted and nothing is cached', async () => {
    const { registry, d } = setup();
    const t = gatedTool(registry, 't.g');
    const disp = d();
    const ac1 = new AbortController();
    const ac2 = new AbortController();
    const a = track(disp.dispatch('t.g', {}, { idempotencyKey: 'k', signal: ac1.signal }));
    const b = track(disp.dispatch('t.g', {}, { idempotencyKey: 'k', signal: ac2.signal }));
    await flush();
    ac1.abort();
    await flush();
    expect(t.calls[0]!.signal.aborted).toBe(false);
    ac2.abort();
    await flush();
    expect(t.calls[0]!.signal.aborted).toBe(true);
    expect(a.value).toMatchObject({ kind: 'cancelled' });
    expect(b.value).toMatchObject({ kind: 'cancelled' });
    const c = track(disp.dispatch('t.g', {}, { idempotencyKey: 'k' }));
    await flush();
    expect(t.calls).toHaveLength(2);
    t.gates[1]!.resolve('fresh');
    await flush();
    expect(c.value).toMatchObject({ ok: true, result: 'fresh', attempts: 1 });
  });

  it('maxEntries bounds the cache, oldest evicted first; size() is inspectable', async () => {
    const registry = new ToolRegistry();
    let n = 0;
    registry.register({ name: 't.x', inputSchema: z.object({}), handler: async () => ++n });
    const idem = idempotency({ maxEntries: 2 });
    const disp = createDispatcher([errorMapping(), toolLookup(registry), schemaValidation(), idem]);
    await disp.dispatch('t.x', {}, { idempotencyKey: 'a' });
    await disp.dispatch('t.x', {}, { idempotencyKey: 'b' });
    await disp.dispatch('t.x', {}, { idempotencyKey: 'c' });
    expect(idem.size().cached).toBeLessThanOrEqual(2);
    expect(idem.size().inFlight).toBe(0);
    expect(await disp.dispatch('t.x', {}, { idempotencyKey: 'c' })).toMatchObject({ result: 3, attempts: 0 });
    expect(await disp.dispatch('t.x', {}, { idempotencyKey: 'b' })).toMatchObject({ result: 2, attempts: 0 });
    expect(await disp.dispatch('t.x', {}, { idempotencyKey: 'a' })).toMatchObject({ result: 4, attempts: 1 });
  });

  it('expired entries are evicted (size shrinks) with no background timer', async () => {
    const registry = new ToolRegistry();
    registry.register({ name: 't.x', inputSchema: z.object({}), handler: async () => 1 });
    const idem = idempotency({ ttlMs: 1_000 });
    const disp = createDispatcher([errorMapping(), toolLookup(registry), schemaValidation(), idem]);
    for (let i = 0; i < 50; i++) await disp.dispatch('t.x', {}, { idempotencyKey: `k${i}` });
    expect(idem.size().cached).toBe(50);
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(2_000);
    for (let i = 0; i < 5; i++) await disp.dispatch('t.x', {}, { idempotencyKey: `new${i}` });
    expect(idem.size().cached).toBeLessThan(50);
  });
});

describe('concurrency', () => {
  it('at most 8 handlers at once by default; the rest queue with concurrency.queued', async () => {
    const { registry, log, d } = setup();
    const t = gatedTool(registry, 't.g');
    const disp = d();
    const ps = Array.from({ length: 10 }, (_, i) => disp.dispatch('t.g', { v: i }));
    await flush();
    expect(t.running).toBe(8);
    expect(log.types().filter((x) => x === 'concurrency.queued')).toHaveLength(2);
    for (let i = 0; i < 10; i++) {
      t.gates[i]!.resolve(i);
      await flush();
    }
    const outs = await Promise.all(ps);
    expect(outs.map((o) => (o.ok ? o.result : null))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(t.maxRunning).toBe(8);
  });

  it('queue is FIFO', async () => {
    const { registry, d } = setup({ concurrency: { max: 1 } });
    const t = gatedTool(registry, 't.g');
    const disp = d();
    for (let i = 0; i < 5; i++) disp.dispatch('t.g', { v: i });
    for (let i = 0; i < 5; i++) {
      await flush();
      expect(t.calls.map((c) => (c.args as { v: number }).v)).toEqual(
        Array.from({ length: i + 1 }, (_, j) => j),
      );
      t.gates[i]!.resolve(i);
    }
  });

  it('a queued caller that aborts leaves the queue at once (attempts 0) and does not run', async () => {
    const { registry, d } = setup({ concurrency: { max: 1 } });
    const t = gatedTool(registry, 't.g');
    const disp = d();
    disp.dispatch('t.g', { v: 0 });
    const ac = new AbortController();
    const q = track(disp.dispatch('t.g', { v: 1 }, { signal: ac.signal }));
    const r = track(disp.dispatch('t.g', { v: 2 }));
    await flush();
    ac.abort();
    await flush();
    expect(q.value).toMatchObject({ ok: false, kind: 'cancelled', attempts: 0 });
    t.gates[0]!.resolve('x');
    await flush();
    expect(t.calls.map((c) => (c.args as { v: number }).v)).toEqual([0, 2]);
    t.gates[1]!.resolve('y');
    await flush();
    expect(r.value).toMatchObject({ ok: true, result: 'y' });
  });

  it('a timed-out handler that never settles frees its slot', async () => {
    const { registry, d } = setup({ concurrency: { max: 1 } });
    registry.register({
      name: 't.hang',
      inputSchema: z.object({}),
      timeoutMs: 100,
      handler: () => new Promise(() => {}),
    });
    registry.register({ name: 't.ok', inputSchema: z.object({}), handler: async () => 'ok' });
    const disp = d();
    const a = disp.dispatch('t.hang', {});
    const b = track(disp.dispatch('t.ok', {}));
    await vi.advanceTimersByTimeAsync(100);
    expect(await a).toMatchObject({ kind: 'timeout' });
    await flush();
    expect(b.value).toMatchObject({ ok: true, result: 'ok' });
    for (let i = 0; i < 3; i++) {
      const h = disp.dispatch('t.hang', {});
      await vi.advanceTimersByTimeAsync(100);
      await h;
    }
    expect(await disp.dispatch('t.ok', {})).toMatchObject({ ok: true });
  });

  it.each([0, -1, 1.5])('concurrencyLimit({ max: %s }) is a TypeError', (max) => {
    expect(() => concurrencyLimit({ max })).toThrow(TypeError);
  });

  it('concurrencyLimit.load() reports running and queued', async () => {
    const registry = new ToolRegistry();
    const t = gatedTool(registry, 't.g');
    const limit = concurrencyLimit({ max: 2 });
    const disp = createDispatcher([errorMapping(), toolLookup(registry), schemaValidation(), limit]);
    for (let i = 0; i < 5; i++) disp.dispatch('t.g', {});
    await flush();
    expect(limit.load()).toEqual({ running: 2, queued: 3 });
    t.gates.forEach((g) => g.resolve(0));
    await flush();
    t.gates.forEach((g) => g.resolve(0));
    await flush();
    t.gates.forEach((g) => g.resolve(0));
    await flush();
    expect(limit.load()).toEqual({ running: 0, queued: 0 });
  });
});

describe('gatherBounded', () => {
  it('resolves outcomes in input order, never rejects, mixing failures', async () => {
    const { registry, d } = setup();
    const t = gatedTool(registry, 't.g');
    const disp = d();
    const p = track(
      disp.gatherBounded([
        { name: 't.g', args: { v: 0 } },
        { name: 'no.such', args: {} },
        { name: 't.g', args: { v: 'bad' } },
        { name: 't.g', args: { v: 3 } },
        { name: 't.g', args: { v: 4 }, options: { budget: 0 } },
      ]),
    );
    await flush();
    t.gates[1]!.resolve('second-finished-first');
    await flush();
    t.gates[0]!.resolve('first');
    await flush();
    expect(p.settled).toBe(true);
    const outs = p.value!;
    expect(outs).toHaveLength(5);
    expect(outs[0]).toMatchObject({ ok: true, result: 'first' });
    expect(outs[1]).toMatchObject({ ok: false, kind: 'not_found' });
    expect(outs[2]).toMatchObject({ ok: false, kind: 'schema' });
    expect(outs[3]).toMatchObject({ ok: true, result: 'second-finished-first' });
    expect(outs[4]).toMatchObject({ ok: false, kind: 'budget_exceeded' });
  });

  it('40 calls never run more than 8 at once even without the concurrency middleware', async () => {
    const registry = new ToolRegistry();
    const t = gatedTool(registry, 't.g');
    const disp = createDispatcher([errorMapping(), toolLookup(registry), schemaValidation()]);
    const p = track(
      disp.gatherBounded(Array.from({ length: 40 }, (_, i) => ({ name: 't.g', args: { v: i } }))),
    );
    for (let round = 0; round < 40; round++) {
      await flush();
      expect(t.running).toBeLessThanOrEqual(8);
      const open = t.gates.length;
      t.gates.slice(0, open).forEach((g) => g.resolve('r'));
    }
    await flush();
    expect(t.maxRunning).toBe(8);
    expect(p.settled).toBe(true);
    expect(p.value).toHaveLength(40);
    expect(t.calls.map((c) => (c.args as { v: number }).v)).toEqual(Array.from({ length: 40 }, (_, i) => i));
  });

  it('concurrency option caps the fan-out', async () => {
    const registry = new ToolRegistry();
    const t = gatedTool(registry, 't.g');
    const disp = createDispatcher([errorMapping(), toolLookup(registry), schemaValidation()]);
    const p = track(
      disp.gatherBounded(
        Array.from({ length: 10 }, (_, i) => ({ name: 't.g', args: { v: i } })),
        { concurrency: 3 },
      ),
    );
    await flush();
    expect(t.running).toBe(3);
    for (let i = 0; i < 10; i++) {
      t.gates[i]!.resolve(i);
      await flush();
      expect(t.running).toBeLessThanOrEqual(3);
    }
    expect((p.value ?? []).map((o) => (o.ok ? o.result : null))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('empty input resolves to []', async () => {
    const { d } = setup();
    expect(await d().gatherBounded([])).toEqual([]);
  });

  it.each([0, -1, 1.5])(
    'gatherBounded concurrency %s is rejected as a programmer error or clamped, never hangs',
    async (concurrency) => {
      const registry = new ToolRegistry();
      registry.register({ name: 't.x', inputSchema: z.object({}), handler: async () => 1 });
      const disp = createDispatcher(defaultStack({ registry }));
      let threw: unknown;
      let out: unknown;
      try {
        const p = disp.gatherBounded([{ name: 't.x', args: {} }], { concurrency });
        const tr = track(p);
        await flush(200);
        expect(tr.settled).toBe(true);
        out = await p;
      } catch (e) {
        threw = e;
      }
      if (threw) expect(threw).toBeInstanceOf(TypeError);
      else expect(out).toHaveLength(1);
    },
  );
});

describe('idempotency fingerprint edge cases', () => {
  it.each([
    ['NaN vs null', { x: Number.NaN }, { x: null }],
    ['[undefined] vs [null]', { x: [undefined] }, { x: [null] }],
    ['Date vs its ISO string', { x: new Date(0) }, { x: new Date(0).toISOString() }],
    ['Map values differ', { x: new Map([['a', 1]]) }, { x: new Map([['a', 2]]) }],
    ['"1" vs 1', { x: '1' }, { x: 1 }],
    ['toJSON object vs its JSON', { x: { toJSON: () => 1 } }, { x: 1 }],
  ])("%s under one key is a conflict, not the other call's result", async (_l, a, b) => {
    let n = 0;
    const registry = new ToolRegistry().register({
      name: 't.any',
      inputSchema: z.any(),
      handler: async () => ++n,
    });
    const disp = createDispatcher(defaultStack({ registry }));
    expect(await disp.dispatch('t.any', a, { idempotencyKey: 'k' })).toMatchObject({ ok: true });
    expect(await disp.dispatch('t.any', b, { idempotencyKey: 'k' })).toMatchObject({
      ok: false,
      kind: 'idempotency_conflict',
    });
  });

  it('shared (non-cyclic) references are not mistaken for cycles', async () => {
    const registry = new ToolRegistry().register({
      name: 't.obj',
      inputSchema: z.object({ a: z.object({ v: z.number() }), b: z.object({ v: z.number() }) }),
      handler: async (x) => x.a.v + x.b.v,
    });
    const disp = createDispatcher(defaultStack({ registry }));
    const s = { v: 1 };
    expect(await disp.dispatch('t.obj', { a: s, b: s })).toMatchObject({ ok: true, result: 2 });
    expect(await disp.dispatch('t.obj', { a: s, b: s }, { idempotencyKey: 'dag' })).toMatchObject({
      ok: true,
      result: 2,
    });
  });
});
