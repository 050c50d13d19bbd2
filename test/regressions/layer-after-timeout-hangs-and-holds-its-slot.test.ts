// Regression (issue 31, item 26): since timeout() only tightened ctx.limit, a layer placed
// between it and the attempt that never settled (or never called next) was never cut off: the
// call hung for ever and held its concurrencyLimit slot, so the next call never ran.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  concurrencyLimit,
  createDispatcher,
  defaultStack,
  errorMapping,
  type Middleware,
  retry,
  timeout,
  ToolRegistry,
  toolLookup,
} from '../../index.js';

beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});
afterEach(() => {
  vi.useRealTimers();
});

function setup() {
  const ran: string[] = [];
  const registry = new ToolRegistry().register({
    name: 'search.web',
    inputSchema: z.object({ query: z.string() }),
    handler: ({ query }) => {
      ran.push(query);
      return `hits for ${query}`;
    },
  });
  // A user's layer after timeout(): on its first call it awaits what never settles.
  let calls = 0;
  const stuck: Middleware = async (_ctx, next) => {
    calls += 1;
    if (calls === 1) await new Promise<never>(() => {});
    await next();
  };
  return { registry, ran, stuck };
}

async function expectCutOffAndSlotFreed(
  dispatch: (query: string) => Promise<unknown>,
  ran: readonly string[],
): Promise<void> {
  const hung = dispatch('hang');
  let settled: unknown;
  void hung.then((outcome) => {
    settled = outcome;
  });
  await vi.advanceTimersByTimeAsync(999);
  expect(settled).toBeUndefined();
  await vi.advanceTimersByTimeAsync(1);
  expect(settled).toMatchObject({ ok: false, kind: 'timeout', attempts: 0 });

  // The single slot is free again: the next call runs.
  expect(await dispatch('agents')).toMatchObject({ ok: true, result: 'hits for agents' });
  expect(ran).toEqual(['agents']);
}

describe('a layer between timeout() and the attempt', () => {
  it('is cut off at the deadline and frees its slot in a hand-built stack', async () => {
    const { registry, ran, stuck } = setup();
    const dispatcher = createDispatcher([
      errorMapping(),
      toolLookup(registry),
      concurrencyLimit({ max: 1 }),
      retry({ maxAttempts: 1 }),
      timeout({ defaultMs: 1_000 }),
      stuck,
    ]);
    await expectCutOffAndSlotFreed((query) => dispatcher.dispatch('search.web', { query }), ran);
  });

  it('is cut off at the deadline and frees its slot after defaultStack', async () => {
    const { registry, ran, stuck } = setup();
    // defaultStack has no slot after timeout(): a layer goes there by following its array.
    const layers = defaultStack({
      registry,
      concurrency: { max: 1 },
      retry: { maxAttempts: 1 },
      timeout: { defaultMs: 1_000 },
    });
    const dispatcher = createDispatcher([...layers, stuck]);
    await expectCutOffAndSlotFreed((query) => dispatcher.dispatch('search.web', { query }), ran);
  });
});
