// Regression (issue 31, item 28): at a small `maxChars` the output guard swapped its notice for
// "[… cut from N characters]", dropping the spill handle and the hint, so the model had no way
// to ask for the rest of a result it was shown 200 characters of.

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createDispatcher,
  defaultStack,
  memorySpillStore,
  outputGuard,
  ToolRegistry,
  toToolMessage,
} from '../../index.js';

describe('the cut at a small maxChars', () => {
  it.each([200, 240, 300, 400])('keeps the spill handle and the hint at maxChars %i', async (maxChars) => {
    const long = 'x'.repeat(50_000);
    const registry = new ToolRegistry().register({
      name: 'big.read',
      inputSchema: z.object({}),
      handler: () => long,
    });
    const spill = memorySpillStore();
    const dispatcher = createDispatcher(defaultStack({ registry, output: outputGuard({ maxChars, spill }) }));
    const outcome = await dispatcher.dispatch('big.read', {});
    if (!outcome.ok) throw outcome;
    const copy = outcome.modelCopy;
    const handle = copy?.handle ?? '';
    expect(handle).toMatch(/^spill:/);
    const text = toToolMessage(outcome);
    expect(text.length).toBeLessThanOrEqual(maxChars);
    expect(text).toContain(handle);
    expect(text).toMatch(/narrow the query/i);
    expect(text).toContain('50000 characters');
    expect(spill.get(handle)).toBe(long);
  });
});
