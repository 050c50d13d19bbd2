// `_meta["tool-dispatcher/receipt"]` on a keyed call's result, `{ key, replayed }`: from
// createMcpServerFactory and through the proxy, to a v2 Client on both revisions.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../../../index.js';
import {
  createMcpProxy,
  createMcpServer,
  createMcpServerFactory,
  idempotencyKeyMetaKey,
  receiptMetaKey,
} from '../../../integrations/mcp/index.js';
import { eras, inMemoryClients } from '../../helpers/mcp-clients.js';
import { serveHttp } from './fixtures/http-upstream.js';

const { closing, clientOf } = inMemoryClients();

function billing() {
  const runs = { charge: 0 };
  const registry = new ToolRegistry()
    .register({
      name: 'pay.charge',
      inputSchema: z.object({ cents: z.number() }),
      handler: (args) => {
        runs.charge += 1;
        return { charged: args.cents, run: runs.charge };
      },
    })
    .register({
      name: 'pay.refuse',
      inputSchema: z.object({}),
      handler: () => {
        throw new Error('declined');
      },
    });
  const dispatcher = createDispatcher(defaultStack({ registry }));
  return { registry, dispatcher, runs, info: { name: 'billing', version: '2.0.0' } };
}

const charge = (key?: string) => ({
  name: 'pay.charge',
  arguments: { cents: 500 },
  ...(key === undefined ? {} : { _meta: { [idempotencyKeyMetaKey]: key } }),
});

describe.each(eras)('the receipt on the %s era', (_era, options) => {
  it('says replayed: false for the run and true for the answer served from the store', async () => {
    const { runs, ...server } = billing();
    const client = await clientOf(createMcpServerFactory(server), options);
    const first = await client.callTool(charge('order-42'));
    const again = await client.callTool(charge('order-42'));
    expect(first._meta?.[receiptMetaKey]).toEqual({ key: 'order-42', replayed: false });
    expect(again._meta?.[receiptMetaKey]).toEqual({ key: 'order-42', replayed: true });
    expect(again.structuredContent).toEqual(first.structuredContent);
    expect(runs.charge).toBe(1);
  });

  it('is absent from an unkeyed call and says replayed: false on a keyed failure', async () => {
    const { runs: _runs, ...server } = billing();
    const client = await clientOf(createMcpServerFactory(server), options);
    expect((await client.callTool(charge()))._meta?.[receiptMetaKey]).toBeUndefined();
    const refused = await client.callTool({
      name: 'pay.refuse',
      arguments: {},
      _meta: { [idempotencyKeyMetaKey]: 'refund-7' },
    });
    expect(refused.isError).toBe(true);
    expect(refused._meta?.[receiptMetaKey]).toEqual({ key: 'refund-7', replayed: false });
  });

  it('is the proxy’s own through the proxy: the upstream runs once, the re-sent call is replayed', async () => {
    const { runs, ...billingServer } = billing();
    const upstream = await serveHttp(() => createMcpServer(billingServer));
    const proxy = await createMcpProxy({ upstream: { url: upstream.url }, logLevel: 'silent' });
    closing.push(
      () => proxy.close(),
      () => upstream.close(),
    );
    const client = await clientOf(proxy.serverFactory, options);
    const first = await client.callTool(charge('order-43'));
    const again = await client.callTool(charge('order-43'));
    expect(first._meta?.[receiptMetaKey]).toEqual({ key: 'order-43', replayed: false });
    expect(again._meta?.[receiptMetaKey]).toEqual({ key: 'order-43', replayed: true });
    expect(again.structuredContent).toEqual({ charged: 500, run: 1 });
    expect(runs.charge).toBe(1);
  });
});
