// Issue 22's measured scenario, deterministic: 20 parallel calls on the default stack against a
// backend allowing 5 requests/s that answers 429 with `Retry-After: 1`, behind a limiter at 6/s.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry, type DispatchEvent } from '../../index.js';

beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});
afterEach(() => {
  vi.useRealTimers();
});

// What an SDK throws for a 429: an error with `status` and `headers`.
class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly headers: Record<string, string>,
  ) {
    super(`${status} Too Many Requests`);
  }
}

function backend(allowedPerSecond: number) {
  const served = new Map<number, number>();
  const refused = new Map<number, number>();
  const request = () => {
    const second = Math.floor(Date.now() / 1_000);
    const count = served.get(second) ?? 0;
    if (count >= allowedPerSecond) {
      refused.set(second, (refused.get(second) ?? 0) + 1);
      throw new ApiError(429, { 'retry-after': '1' });
    }
    served.set(second, count + 1);
    return 'ok';
  };
  return { request, served, refused };
}

async function run(rateLimit: boolean) {
  const api = backend(5);
  const events: DispatchEvent[] = [];
  const registry = new ToolRegistry().register({
    name: 'search.web',
    inputSchema: z.object({ q: z.string() }),
    handler: () => api.request(),
  });
  const dispatcher = createDispatcher(
    defaultStack({
      registry,
      retry: { maxAttempts: 3, random: () => 0 },
      ...(rateLimit
        ? { rateLimit: { key: () => 'search-api', rate: 6, intervalMs: 1_000, maxWaitMs: 10_000 } }
        : {}),
    }),
    { onEvent: (event) => events.push(event) },
  );
  const calls = Array.from({ length: 20 }, (_, i) => dispatcher.dispatch('search.web', { q: `q${i}` }));
  await vi.advanceTimersByTimeAsync(20_000);
  const outcomes = await Promise.all(calls);
  return { api, outcomes, events };
}

describe('20 parallel calls against a backend allowing 5 requests/s', () => {
  it('with rateLimit at 6/s: all served, at most one 429 and five served per backend second, none in the second after a 429', async () => {
    const { api, outcomes, events } = await run(true);
    expect(outcomes.every((outcome) => outcome.ok)).toBe(true);
    const seconds = [...new Set([...api.served.keys(), ...api.refused.keys()])].sort((a, b) => a - b);
    for (const second of seconds) {
      expect(api.served.get(second) ?? 0).toBeLessThanOrEqual(5);
      expect(api.refused.get(second) ?? 0).toBeLessThanOrEqual(1);
      if ((api.refused.get(second) ?? 0) > 0) expect(api.refused.get(second + 1) ?? 0).toBe(0);
    }
    const total429 = [...api.refused.values()].reduce((sum, n) => sum + n, 0);
    expect(total429).toBeLessThanOrEqual(seconds.length / 2 + 1);
    expect(events.some((event) => event.type === 'rate_limit.debit')).toBe(true);
    // 20 requests at 5/s: about 4 s, not the rediscovery storm.
    expect(Math.max(...seconds)).toBeLessThanOrEqual(5);
  });

  it('without it, the calls rediscover the 429 (the issue’s measurement)', async () => {
    const { api, outcomes } = await run(false);
    const total429 = [...api.refused.values()].reduce((sum, n) => sum + n, 0);
    expect(total429).toBeGreaterThan(10);
    expect(outcomes.some((outcome) => !outcome.ok)).toBe(true);
  });
});
