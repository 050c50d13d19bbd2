// Regression (issue 9, item 7): with the breaker outside retry, retried attempts reached
// `isFailure` as envelopes made up from `dispatch.retry` events, without cause or retryAfterMs,
// so an `isFailure` that ignores rate limits still opened the circuit.
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  circuitBreaker,
  createDispatcher,
  errorMapping,
  isCircuitFailure,
  retry,
  timeout,
  ToolRegistry,
  toolLookup,
  TransientError,
  type DispatchError,
} from '../../index.js';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

class RateLimited extends Error {}

it.each(['outside retry', 'inside retry'] as const)(
  'shows isFailure each attempt’s real envelope (%s)',
  async (placement) => {
    const judged: DispatchError[] = [];
    const breaker = circuitBreaker({
      failureThreshold: 2,
      isFailure: (error) => {
        judged.push(error);
        return (
          !(error.cause instanceof TransientError && error.cause.cause instanceof RateLimited) &&
          isCircuitFailure(error)
        );
      },
    });
    const registry = new ToolRegistry().register({
      name: 'api.call',
      inputSchema: z.object({}),
      handler: () => {
        throw new TransientError('slow down', { retryAfterMs: 10, cause: new RateLimited('429') });
      },
    });
    const layers =
      placement === 'outside retry'
        ? [errorMapping(), toolLookup(registry), breaker, retry({ random: () => 0 }), timeout()]
        : [errorMapping(), toolLookup(registry), retry({ random: () => 0 }), breaker, timeout()];
    const dispatcher = createDispatcher(layers);
    for (let i = 0; i < 2; i++) {
      const pending = dispatcher.dispatch('api.call', {});
      await vi.runAllTimersAsync();
      await expect(pending).resolves.toMatchObject({ kind: 'transient', attempts: 3 });
    }
    expect(breaker.state('api.call')).toBe('closed');
    expect(judged).toHaveLength(6);
    for (const error of judged) {
      expect(error).toMatchObject({ kind: 'transient', message: 'slow down', retryAfterMs: 10 });
      expect(error.cause).toBeInstanceOf(TransientError);
    }
  },
);
