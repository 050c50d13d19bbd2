// Regression (fixed): middleware/retry.ts:118 + middleware/circuit-breaker.ts:263-270: outside retry (the documented
// place), the breaker learns of a failed attempt either from `dispatch.retry` or from the final
// error. When retry stops because the budget is spent, it throws `budget_exceeded` (the backend
// failure is only its `cause`) and emits no `dispatch.retry`, so the attempt's `transient`
// failure is never counted. With `budget: 1` (docs/faq.md: "means no retries") a backend that
// fails every time never opens its circuit.
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { circuitBreaker, createDispatcher, defaultStack, ToolRegistry, TransientError } from '../../index.js';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

it('counts an attempt that failed even when the dispatch ends as budget_exceeded', async () => {
  let runs = 0;
  const registry = new ToolRegistry().register({
    name: 'search.web',
    inputSchema: z.object({}),
    handler: () => {
      runs += 1;
      throw new TransientError('backend down');
    },
  });
  const breaker = circuitBreaker({ failureThreshold: 2 });
  const stack = defaultStack({ registry });
  stack.splice(
    stack.findIndex((layer) => layer.name === 'concurrencyLimit'),
    0,
    breaker,
  );
  const dispatcher = createDispatcher(stack);
  for (let i = 0; i < 2; i++) {
    const outcome = await dispatcher.dispatch('search.web', {}, { budget: 1 });
    expect(outcome).toMatchObject({ kind: 'budget_exceeded', attempts: 1 });
  }
  expect(runs).toBe(2); // two consecutive backend failures
  expect(breaker.state('search.web')).toBe('open');
});
