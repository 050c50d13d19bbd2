// Regression (issue 31, item 22): a call costing more than a windowedBudget's whole limit was
// refused with the time to the window's end, as if the next window would hold it, and the model
// read "The tool-call budget is spent" — a budget it does not have.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry, toToolMessage } from '../../index.js';

beforeEach(() => {
  vi.useFakeTimers({ now: 10_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('a windowedBudget refuses what no window holds', () => {
  it('refuses a call above the whole limit as such, without retryAfterMs, naming the window', async () => {
    let runs = 0;
    const registry = new ToolRegistry().register({
      name: 'llm.summarize',
      inputSchema: z.object({ words: z.number() }),
      cost: ({ words }) => words,
      handler: () => {
        runs += 1;
        return 'summary';
      },
    });
    const dispatcher = createDispatcher(
      defaultStack({
        registry,
        windowedBudget: { key: (ctx) => ctx.options.tenant, limit: 20, windowMs: 60_000 },
      }),
    );

    const huge = await dispatcher.dispatch('llm.summarize', { words: 21 }, { tenant: 'acme' });
    expect(huge).toMatchObject({ ok: false, kind: 'budget_exceeded', attempts: 0, retryAfterMs: undefined });
    expect(runs).toBe(0);
    const text = toToolMessage(huge);
    expect(text).toContain('20 units per 60000 ms');
    expect(text).toMatch(/whole window/);
    expect(text).not.toContain('tool-call budget');

    // What fits still runs; once the window is spent, the refusal says when the next one starts.
    expect(await dispatcher.dispatch('llm.summarize', { words: 20 }, { tenant: 'acme' })).toMatchObject({
      ok: true,
    });
    const spent = await dispatcher.dispatch('llm.summarize', { words: 1 }, { tenant: 'acme' });
    expect(spent).toMatchObject({ ok: false, kind: 'budget_exceeded', retryAfterMs: 50_000 });
    expect(toToolMessage(spent)).toContain('this window is spent; try again after 50000 ms');
    expect(toToolMessage(spent)).not.toContain('tool-call budget');
  });
});
