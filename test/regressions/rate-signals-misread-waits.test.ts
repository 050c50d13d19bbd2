// Regression (issue 31, items 19-21): parseRetryAfter handed `retry in 5` to V8's lenient
// Date.parse (a date in 2001: retry at once) instead of reading x-ratelimit-reset; an MCP
// error text's "retry after 2 hours", "1 day" or a date was read as 2 s, 1 s or 34 minutes; and
// a Retry-After too large for a number became Infinity (null in JSON, "after Infinity ms").

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  classifyRateLimit,
  createDispatcher,
  defaultStack,
  parseRetryAfter,
  ToolRegistry,
  toToolMessage,
  TransientError,
} from '../../index.js';

const now = () => Date.UTC(2026, 11, 1, 12, 0, 0);
const longestWaitMs = 2 ** 31 - 1;

function mcpError(text: string) {
  return { isError: true, content: [{ type: 'text', text }] };
}

describe('rate signals read only what they say', () => {
  it('skips a Retry-After that is no HTTP date and reads x-ratelimit-reset next', () => {
    expect(parseRetryAfter({ 'retry-after': 'retry in 5', 'x-ratelimit-reset': '7' }, { now })).toBe(7000);
    expect(parseRetryAfter({ 'retry-after': 'retry in 5' }, { now })).toBeUndefined();
    for (const junk of [
      '2026-12-01T12:00:09Z',
      'tomorrow 5',
      'Tue, 1 Dec 2026 12:00:03 GMT',
      'tue, 01 dec 2026 12:00:03 gmt',
    ]) {
      expect(parseRetryAfter({ 'retry-after': junk, 'x-ratelimit-reset': '3' }, { now })).toBe(3000);
    }
    // The three formats RFC 9110 §5.6.7 names, each read on the given clock.
    expect(parseRetryAfter({ 'retry-after': 'Tue, 01 Dec 2026 12:00:03 GMT' }, { now })).toBe(3000);
    expect(parseRetryAfter({ 'retry-after': 'Tuesday, 01-Dec-26 12:00:04 GMT' }, { now })).toBe(4000);
    expect(parseRetryAfter({ 'retry-after': 'Tue Dec  1 12:00:05 2026' }, { now })).toBe(5000);
    expect(
      parseRetryAfter({ 'retry-after': 'Tue, 31 Feb 2026 12:00:03 GMT', 'x-ratelimit-reset': '2' }, { now }),
    ).toBe(2000);
  });

  it.each([
    ['Rate limit exceeded. Retry after 2 hours.', 7_200_000],
    ['Quota used up; try again in 1 day', 86_400_000],
    ['Rate limited: retry after 2026-12-01T12:05:00Z', 300_000],
    ['Rate limited: retry after 2026-12-01T13:05:00+01:00', 300_000],
    ['Too many requests. Retry-After: Tue, 01 Dec 2026 12:00:03 GMT', 3000],
    ['Rate limit hit, retry after 2 months', undefined],
    ['Rate limit hit, retry after 12:30', undefined],
    ['Rate limit exceeded. Retry after 30s', 30_000],
    ['Too Many Requests; retry-after: 500ms', 500],
  ])('reads the wait in %j as %s ms', (text, expected) => {
    expect(classifyRateLimit(mcpError(text), { now })).toMatchObject({
      rateLimited: true,
      retryAfterMs: expected,
    });
  });

  it('caps a Retry-After too large for a number, so JSON and the model read a finite wait', async () => {
    const huge = '9'.repeat(400);
    expect(parseRetryAfter({ 'retry-after': huge }, { now })).toBe(longestWaitMs);
    expect(parseRetryAfter({ 'retry-after-ms': huge }, { now })).toBe(longestWaitMs);
    expect(parseRetryAfter({ 'x-ratelimit-reset': huge }, { now })).toBe(longestWaitMs);
    expect(parseRetryAfter({ 'retry-after': 'Fri, 31 Dec 9999 23:59:59 GMT' }, { now })).toBe(longestWaitMs);
    expect(classifyRateLimit(mcpError(`Rate limit. Retry after ${huge} days`))?.retryAfterMs).toBe(
      longestWaitMs,
    );
    expect(new TransientError('busy', { retryAfterMs: Infinity }).retryAfterMs).toBe(longestWaitMs);

    const registry = new ToolRegistry().register({
      name: 'search.web',
      inputSchema: z.object({}),
      handler: () => {
        throw new Response('slow down', { status: 429, headers: { 'retry-after': huge } });
      },
    });
    const dispatcher = createDispatcher(defaultStack({ registry, retry: { maxAttempts: 1 } }));
    const outcome = await dispatcher.dispatch('search.web', {});
    expect(outcome).toMatchObject({ ok: false, kind: 'transient', retryAfterMs: longestWaitMs });
    expect(JSON.parse(JSON.stringify(outcome)).retryAfterMs).toBe(longestWaitMs);
    expect(toToolMessage(outcome)).toContain(`after ${longestWaitMs} ms`);
    expect(toToolMessage(outcome)).not.toContain('Infinity');
  });
});
