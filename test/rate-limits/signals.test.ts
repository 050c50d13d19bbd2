import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  classifyRateLimit,
  createDispatcher,
  defaultStack,
  DispatchError,
  isCircuitFailure,
  parseRetryAfter,
  ToolRegistry,
  TransientError,
} from '../../index.js';

const now = () => Date.UTC(2026, 11, 1, 12, 0, 0);

describe('parseRetryAfter', () => {
  it.each([
    [{ 'retry-after-ms': '250', 'retry-after': '9' }, 250],
    [{ 'Retry-After': '2' }, 2000],
    [{ 'retry-after': '1.5' }, 1500],
    [{ 'retry-after': 'Tue, 01 Dec 2026 12:00:03 GMT' }, 3000],
    [{ 'retry-after': 'Tue, 01 Dec 2026 11:00:00 GMT' }, 0],
    [{ 'x-ratelimit-reset': String(now() / 1000 + 7) }, 7000],
    [{ 'x-ratelimit-reset': '4' }, 4000],
    [{ 'retry-after-ms': 'soon', 'retry-after': 'junk', 'x-ratelimit-reset': '3' }, 3000],
    [{ 'retry-after': ['5', '6'] }, 5000],
    [{ 'retry-after': '-1' }, undefined],
    [{}, undefined],
  ])('reads %o as %s ms', (headers, expected) => {
    expect(parseRetryAfter(headers as Record<string, string>, { now })).toBe(expected);
  });

  it('reads a fetch Headers object', () => {
    expect(parseRetryAfter(new Headers({ 'Retry-After': '1' }), { now })).toBe(1000);
  });

  it('answers undefined for a non-object', () => {
    expect(parseRetryAfter(undefined as unknown as Headers)).toBeUndefined();
  });
});

describe('classifyRateLimit', () => {
  it.each([429, 503, 529])('turns a fetch Response of %i into a rate-limited TransientError', (status) => {
    const error = classifyRateLimit(new Response('slow down', { status, headers: { 'retry-after': '1' } }));
    expect(error).toBeInstanceOf(TransientError);
    expect(error).toMatchObject({ rateLimited: true, retryAfterMs: 1000 });
  });

  it('answers undefined for other statuses and other values', () => {
    expect(classifyRateLimit(new Response('no', { status: 500 }))).toBeUndefined();
    expect(classifyRateLimit(new Error('boom'))).toBeUndefined();
    expect(classifyRateLimit(new TransientError('reset'))).toBeUndefined();
    expect(classifyRateLimit('429')).toBeUndefined();
    expect(
      classifyRateLimit({ isError: true, content: [{ type: 'text', text: 'disk full' }] }),
    ).toBeUndefined();
  });

  it('reads an MCP isError result that says so, with its "retry after"', () => {
    const result = {
      isError: true,
      content: [{ type: 'text', text: 'Rate limit exceeded for search. Retry after 2 s.' }],
    };
    expect(classifyRateLimit(result)).toMatchObject({ rateLimited: true, retryAfterMs: 2000 });
    const quota = classifyRateLimit({ isError: true, content: [{ type: 'text', text: 'Quota used up' }] });
    expect(quota).toMatchObject({ rateLimited: true, retryAfterMs: undefined });
    expect(
      classifyRateLimit({
        isError: true,
        content: [{ type: 'text', text: 'Too Many Requests; retry-after: 500ms' }],
      }),
    ).toMatchObject({ retryAfterMs: 500 });
  });

  it('keeps a TransientError that already says it is rate limited', () => {
    const error = new TransientError('busy', { rateLimited: true, retryAfterMs: 5 });
    expect(classifyRateLimit(error)).toBe(error);
  });
});

describe('the SDKs’ 429 answers, from a local server', () => {
  let server: Server;
  let baseUrl = '';
  let status = 429;
  beforeAll(async () => {
    server = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        response.writeHead(status, { 'content-type': 'application/json', 'retry-after': '1' });
        response.end(JSON.stringify({ error: { type: 'rate_limit_error', message: 'slow down' } }));
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => {
    server.close();
  });

  const openai = () => new OpenAI({ apiKey: 'test', baseURL: `${baseUrl}/v1`, maxRetries: 0 });
  const anthropic = () => new Anthropic({ apiKey: 'test', baseURL: baseUrl, maxRetries: 0 });
  const askOpenAi = () =>
    openai().chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });

  it("classifies the openai client's APIError", async () => {
    const error = await askOpenAi().catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(classifyRateLimit(error)).toMatchObject({ rateLimited: true, retryAfterMs: 1000 });
  });

  it("classifies the Anthropic client's 429 and 529", async () => {
    const ask = () =>
      anthropic().messages.create({ model: 'm', max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] });
    const limited = await ask().catch((thrown: unknown) => thrown);
    expect(limited).toBeInstanceOf(Anthropic.RateLimitError);
    expect(classifyRateLimit(limited)).toMatchObject({ rateLimited: true, retryAfterMs: 1000 });
    status = 529;
    try {
      const overloaded = await ask().catch((thrown: unknown) => thrown);
      expect(classifyRateLimit(overloaded)).toMatchObject({ rateLimited: true, retryAfterMs: 1000 });
    } finally {
      status = 429;
    }
  });

  it('fails a handler that lets an SDK 429 escape transient with retryAfterMs, never internal', async () => {
    const registry = new ToolRegistry().register({
      name: 'llm.ask',
      inputSchema: z.object({}),
      handler: () => askOpenAi(),
    });
    const dispatcher = createDispatcher(defaultStack({ registry, retry: { maxAttempts: 1 } }));
    const outcome = await dispatcher.dispatch('llm.ask', {});
    expect(outcome).toMatchObject({ ok: false, kind: 'transient', retryAfterMs: 1000, attempts: 1 });
    // A backend that is only busy never counts toward a breaker.
    expect(isCircuitFailure(outcome as DispatchError)).toBe(false);
    expect(isCircuitFailure(new DispatchError('transient', 'reset'))).toBe(true);
  });
});
