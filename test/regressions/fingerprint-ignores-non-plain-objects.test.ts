// Regression (fixed): src/internal/fingerprint.ts: objects are hashed by Object.keys only, so every URL, Map, Set or
// other class instance without own enumerable keys hashes the same. Args are fingerprinted after
// the schema, so a schema that transforms (z.url().transform(u => new URL(u)), z.set(...)) makes
// two different calls with one key look identical: SPEC §3.4 says that must be an
// idempotency_conflict, "never another call's result".
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../../index.js';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

it('the same key with a different URL is a conflict, not the other call’s result', async () => {
  const registry = new ToolRegistry().register({
    name: 'http.get',
    inputSchema: z.object({ url: z.url().transform((u) => new URL(u)) }),
    handler: ({ url }) => `body of ${url.href}`,
  });
  const dispatcher = createDispatcher(defaultStack({ registry }));
  const first = await dispatcher.dispatch('http.get', { url: 'https://a.example/' }, { idempotencyKey: 'k' });
  expect(first).toMatchObject({ ok: true, result: 'body of https://a.example/' });
  const second = await dispatcher.dispatch(
    'http.get',
    { url: 'https://b.example/' },
    { idempotencyKey: 'k' },
  );
  expect(second).toMatchObject({ kind: 'idempotency_conflict' });
});

it('the same key with a different Set is a conflict', async () => {
  const registry = new ToolRegistry().register({
    name: 'tags.add',
    inputSchema: z.object({ tags: z.set(z.string()) }),
    handler: ({ tags }) => [...tags].join(','),
  });
  const dispatcher = createDispatcher(defaultStack({ registry }));
  await dispatcher.dispatch('tags.add', { tags: new Set(['a']) }, { idempotencyKey: 'k' });
  const second = await dispatcher.dispatch('tags.add', { tags: new Set(['b']) }, { idempotencyKey: 'k' });
  expect(second).toMatchObject({ kind: 'idempotency_conflict' });
});
