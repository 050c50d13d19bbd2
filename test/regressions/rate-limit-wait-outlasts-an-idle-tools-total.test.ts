import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createDispatcher, errorMapping, rateLimit, ToolRegistry, toolLookup } from '../../index.js';

beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});
afterEach(() => {
  vi.useRealTimers();
});

// The rate limiter capped its wait by the call's or the tool's `timeoutMs` only: a tool with an
// idle timeout (`timeout: { idleMs, totalMs }`, no `timeoutMs`) waited up to `maxWaitMs`, longer
// than any of its attempts may run.
it("refuses a wait longer than an idle-timeout tool's totalMs", async () => {
  const registry = new ToolRegistry().register({
    name: 'export.run',
    inputSchema: z.object({}),
    timeout: { idleMs: 100, totalMs: 200 },
    handler: () => 'done',
  });
  const dispatcher = createDispatcher([
    errorMapping(),
    toolLookup(registry),
    rateLimit({ rate: 1, intervalMs: 1_000 }),
  ]);
  expect(await dispatcher.dispatch('export.run', {})).toMatchObject({ ok: true });
  expect(await dispatcher.dispatch('export.run', {})).toMatchObject({
    ok: false,
    kind: 'rate_limited',
    retryAfterMs: 1_000,
  });
});
