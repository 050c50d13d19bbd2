// Regression (issue 9, item 9): `{ ...toolCtx }`, `Object.keys` and `JSON.stringify` kept only
// `attempt`: signal, callId and idempotencyKey were prototype getters.
import { expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry, type ToolContext } from '../../index.js';

it('gives a handler a context whose documented fields are all own enumerable properties', async () => {
  const spread: Array<Partial<ToolContext>> = [];
  const registry = new ToolRegistry()
    .register({
      name: 'with.deadline',
      inputSchema: z.object({}),
      timeoutMs: 5_000,
      handler: (_a, ctx) => void spread.push({ ...ctx }),
    })
    .register({
      name: 'without.deadline',
      inputSchema: z.object({}),
      timeoutMs: Infinity,
      handler: (_a, ctx) => void spread.push({ ...ctx }),
    });
  const dispatcher = createDispatcher(defaultStack({ registry }));
  const caller = new AbortController();
  await dispatcher.dispatch('with.deadline', {}, { callId: 'c-1', idempotencyKey: 'k-1' });
  await dispatcher.dispatch('without.deadline', {}, { callId: 'c-2', signal: caller.signal });
  for (const ctx of spread) {
    expect(Object.keys(ctx).sort()).toEqual([
      'attempt',
      'callId',
      'deadline',
      'idempotencyKey',
      'progress',
      'signal',
    ]);
    expect(ctx.signal).toBeInstanceOf(AbortSignal);
    expect(typeof ctx.progress).toBe('function');
  }
  expect(spread[0]).toMatchObject({ attempt: 1, callId: 'c-1', idempotencyKey: 'k-1' });
  expect(Number.isFinite(spread[0]?.deadline)).toBe(true);
  expect(spread[1]).toMatchObject({
    attempt: 1,
    callId: 'c-2',
    idempotencyKey: undefined,
    deadline: Infinity,
  });
});

it('still gives a handler that declares only its args a working context through arguments', async () => {
  const seen: unknown[] = [];
  const registry = new ToolRegistry().register({
    name: 'wrapped.tool',
    inputSchema: z.object({}),
    timeoutMs: 5_000,
    // A wrapper that forwards `arguments`, as memoizers and tracers do.
    handler: function wrapped(_args: unknown) {
      // biome-ignore lint/complexity/noArguments: the point of the test
      const ctx = arguments[1] as ToolContext;
      seen.push(
        ctx.signal instanceof AbortSignal,
        ctx.callId,
        ctx.attempt,
        ctx.idempotencyKey,
        Number.isFinite(ctx.deadline),
        typeof ctx.progress,
      );
      return 'ok';
    },
  });
  const dispatcher = createDispatcher(defaultStack({ registry }));
  await expect(
    dispatcher.dispatch('wrapped.tool', {}, { callId: 'c-9', idempotencyKey: 'k-9' }),
  ).resolves.toMatchObject({ ok: true });
  expect(seen).toEqual([true, 'c-9', 1, 'k-9', true, 'function']);
});
