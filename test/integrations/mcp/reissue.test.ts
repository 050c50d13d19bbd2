// Re-issued requests on Streamable HTTP (2026-07-28 §re-issue): a cut stream cancels an unkeyed
// call's run, but only the response of a keyed one; the re-issue (new JSON-RPC id, same key) joins
// the run or gets its stored result, so the tool runs once. Keys come from _meta only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../../../index.js';
import { createMcpServerFactory, receiptMetaKey } from '../../../integrations/mcp/index.js';
import { listenMcp, type McpListener } from '../../../integrations/mcp/listener.js';
import { type Gate, gate } from '../../helpers/gate.js';

let listener: McpListener;
let nextId = 1;
const runs: { key: string | undefined; signal: AbortSignal }[] = [];
let started: Gate<void>;
let release: Gate<void>;

function call(
  args: Record<string, unknown>,
  meta: Record<string, unknown>,
  options: { id?: number; signal?: AbortSignal } = {},
): Promise<Response> {
  return fetch(listener.url, {
    method: 'POST',
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'orders.place',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: options.id ?? nextId++,
      method: 'tools/call',
      params: {
        name: 'orders.place',
        arguments: args,
        _meta: {
          ...meta,
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    }),
  });
}

async function resultOf(response: Response): Promise<Record<string, unknown>> {
  const text = await response.text();
  const json = text.startsWith('{') ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? text);
  return (JSON.parse(json) as { result: Record<string, unknown> }).result;
}

// Sends a call and cuts its stream once the tool is running.
async function cutOnceRunning(args: Record<string, unknown>, meta: Record<string, unknown>): Promise<void> {
  const cut = new AbortController();
  const sent = call(args, meta, { signal: cut.signal }).catch((error: unknown) => error);
  await started.promise;
  cut.abort();
  expect(await sent).toMatchObject({ name: 'AbortError' });
}

beforeAll(async () => {
  const registry = new ToolRegistry().register({
    name: 'orders.place',
    inputSchema: z.object({ sku: z.string() }),
    handler: async (args, ctx) => {
      runs.push({ key: ctx.idempotencyKey, signal: ctx.signal });
      started.open();
      await Promise.race([
        release.promise,
        new Promise((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
        }),
      ]);
      return { placed: args.sku, run: runs.length };
    },
  });
  const dispatcher = createDispatcher(defaultStack({ registry }));
  const factory = createMcpServerFactory({
    registry,
    dispatcher,
    info: { name: 'orders', version: '1.0.0' },
  });
  listener = await listenMcp(factory, { url: 'http://127.0.0.1:0/mcp' });
});

afterAll(async () => {
  release?.open();
  await listener.close();
});

describe('a cut Streamable HTTP stream', () => {
  it('cancels the run of an unkeyed call', async () => {
    runs.length = 0;
    started = gate();
    release = gate();
    await cutOnceRunning({ sku: 'a-1' }, {});
    const [run] = runs;
    for (let waits = 0; waits < 200 && run?.signal.aborted !== true; waits++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(run?.signal.aborted).toBe(true);
  });

  it('cancels only the response of a keyed call: the re-issue under a new id joins the run, which runs once', async () => {
    runs.length = 0;
    started = gate();
    release = gate();
    await cutOnceRunning({ sku: 'b-2' }, { 'tool-dispatcher/idempotencyKey': 'order-b-2' });
    const reissued = call({ sku: 'b-2' }, { 'tool-dispatcher/idempotencyKey': 'order-b-2' });
    // The run goes on: nothing aborts it while nobody waits for its response.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(runs.map((run) => run.signal.aborted)).toEqual([false]);
    release.open();
    const result = await resultOf(await reissued);
    expect(result['structuredContent']).toEqual({ placed: 'b-2', run: 1 });
    expect((result['_meta'] as Record<string, unknown>)[receiptMetaKey]).toEqual({
      key: 'order-b-2',
      replayed: true,
    });
    // A later re-issue is served from the store.
    const later = await resultOf(
      await call({ sku: 'b-2' }, { 'tool-dispatcher/idempotencyKey': 'order-b-2' }),
    );
    expect(later['structuredContent']).toEqual({ placed: 'b-2', run: 1 });
    expect(runs).toHaveLength(1);
  });

  it('never takes a request id for a key: two calls under one id with no key both run', async () => {
    runs.length = 0;
    started = gate();
    release = gate();
    release.open();
    await resultOf(await call({ sku: 'c-3' }, {}, { id: 777 }));
    await resultOf(await call({ sku: 'c-3' }, {}, { id: 777 }));
    expect(runs.map((run) => run.key)).toEqual([undefined, undefined]);
  });
});
