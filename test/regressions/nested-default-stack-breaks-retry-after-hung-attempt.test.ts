// Regression (issue 9, item 6): with createDispatcher([audit, compose(defaultStack(...))]), an
// idempotent tool whose first attempt timed out with a handler that never settled was not
// retried: the call ended `internal` "next() called multiple times" after 2 attempts.
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry, type Middleware } from '../../index.js';
import { compose } from '../../middleware/index.js';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

it('runs a stack composed inside another exactly as if it were flattened', async () => {
  let calls = 0;
  const registry = new ToolRegistry().register({
    name: 'kv.get',
    inputSchema: z.object({}),
    idempotent: true,
    timeoutMs: 50,
    handler: () => (++calls < 3 ? new Promise<never>(() => {}) : 'value'),
  });
  const audited: string[] = [];
  const audit: Middleware = async (ctx, next) => {
    audited.push(ctx.toolName);
    await next();
  };
  const nested = compose(defaultStack({ registry, retry: { random: () => 0 } }));
  const stacks: Middleware[][] = [
    [audit, nested],
    [audit, ...defaultStack({ registry, retry: { random: () => 0 } })],
  ];
  for (const stack of stacks) {
    calls = 0;
    const pending = createDispatcher(stack).dispatch('kv.get', {});
    await vi.runAllTimersAsync();
    await expect(pending).resolves.toEqual({ ok: true, result: 'value', attempts: 3 });
  }
  expect(audited).toEqual(['kv.get', 'kv.get']);
});
