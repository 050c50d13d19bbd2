// examples/durable/restate.ts: its Checkout service, served on a free port and registered with a
// restate-server of the test's own, charges once per invocation and fails a decline terminally.

import { createServer, type Http2Server, type ServerHttp2Session } from 'node:http2';
import * as restate from '@restatedev/restate-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCheckout } from '../../../examples/durable/restate.js';
import { freePort } from '../../helpers/free-port.js';
import {
  restateSuitesEnabled,
  startRestateServer,
  type RestateServer,
} from '../../helpers/restate-server.js';

const enabled = restateSuitesEnabled('examples/durable/restate');

describe.runIf(enabled)('examples/durable/restate.ts', () => {
  const checkout = createCheckout();
  let server: RestateServer;
  let endpoint: Http2Server;
  const sessions = new Set<ServerHttp2Session>();

  beforeAll(async () => {
    server = await startRestateServer();
    const port = await freePort();
    endpoint = createServer(restate.createEndpointHandler({ services: [checkout.service] }));
    endpoint.on('session', (session) => sessions.add(session));
    await new Promise<void>((resolve) => endpoint.listen(port, '127.0.0.1', resolve));
    await server.register(`http://127.0.0.1:${port}`);
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    // The server's HTTP/2 sessions stay open until closed; close() alone would wait for them.
    for (const session of sessions) session.destroy();
    await new Promise((resolve) => endpoint?.close(resolve));
  });

  const call = async (handler: string, body: unknown, idempotencyKey?: string) => {
    const response = await fetch(`${server.ingressUrl}/Checkout/${handler}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }),
      },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  it('charges once for a request sent twice with the same idempotency key', async () => {
    const order = { orderId: '1042', amountCents: 2_500 };
    const first = await call('charge', order, 'order-1042');
    const again = await call('charge', order, 'order-1042');
    expect(first).toEqual({ status: 200, body: { chargeId: 'ch_1042', amountCents: 2_500 } });
    expect(again).toEqual(first);
    expect(checkout.charges).toEqual(['1042']);
  });

  it('fails a declined card terminally, or hands the model its envelope as data', async () => {
    const order = { orderId: '1043', amountCents: 500_000 };
    const thrown = await call('charge', order);
    expect(thrown.status).toBe(500);
    expect(thrown.body.message).toBe('tool_error: The card was declined');
    const data = await call('chargeForModel', order);
    expect(data.body).toMatchObject({ ok: false, kind: 'tool_error', message: 'The card was declined' });
  });
});
