// Regression (fixed): src/internal/success-cache.ts:93-100: the completion-order queue only advances `#head` over
// evicted entries; the chunk array keeps pointing at them (and at their results) until 4 096
// entries have been pushed into that chunk. With maxEntries: 1 the cache holds up to 4 095
// evicted results alive, contradicting docs/faq.md ("budget for maxEntries × your typical result
// size"). Verified with a forced full GC and WeakRefs.
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../../index.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
const realSetImmediate = setImmediate;
const nextMacrotask = () => new Promise<void>((resolve) => realSetImmediate(resolve));

beforeEach(() => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] }));
afterEach(() => vi.useRealTimers());

it('an evicted success is no longer held by the cache', async () => {
  const refs: Array<WeakRef<object>> = [];
  const registry = new ToolRegistry().register({
    name: 'big.op',
    inputSchema: z.object({ n: z.number() }),
    handler: ({ n }) => {
      const result = { n, payload: new Array(1_000).fill(n) };
      refs.push(new WeakRef(result));
      return result;
    },
  });
  const dispatcher = createDispatcher(defaultStack({ registry, idempotency: { maxEntries: 1 } }));
  for (let n = 0; n < 10; n++) {
    const outcome = await dispatcher.dispatch('big.op', { n }, { idempotencyKey: `k${n}` });
    expect(outcome.ok).toBe(true);
  }
  await nextMacrotask();
  gc();
  await nextMacrotask();
  gc();
  const alive = refs.slice(0, 9).filter((ref) => ref.deref() !== undefined).length;
  expect(alive).toBe(0);
});
