// One worker of the console's two-process test: a dispatcher whose approval gate keeps its requests
// on Redis (redisApprovalStore), and a control room served on 127.0.0.1:0. The test drives it over
// IPC: `dispatch` runs a refund (with an approval token, or none) and answers the outcome and how
// many times this process's handler has run.

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { approvalGate, createDispatcher, defaultStack, ToolRegistry } from '../../index.js';
import { controlRoom } from '../../integrations/console/index.js';
import { redisApprovalStore } from '../../integrations/redis/index.js';
import { connectNodeRedis } from '../integrations/redis/clients.js';

/** What the test tells a worker (JSON in TD_CONSOLE_WORKER). */
export interface ConsoleWorkerConfig {
  readonly name: string;
  readonly redisUrl: string;
  readonly prefix: string;
  readonly token: string;
}

/** A message from the test. */
export type ToWorker =
  | { readonly type: 'dispatch'; readonly id: number; readonly amount: number; readonly approval?: string }
  | { readonly type: 'stop' };

/** A message to the test. */
export type FromWorker =
  | { readonly type: 'ready'; readonly origin: string }
  | {
      readonly type: 'dispatched';
      readonly id: number;
      readonly ok: boolean;
      readonly kind?: string;
      readonly approval?: string;
      readonly runs: number;
    };

const config = JSON.parse(process.env.TD_CONSOLE_WORKER ?? '{}') as ConsoleWorkerConfig;
const send = (message: FromWorker) => process.send?.(message);

async function main(): Promise<void> {
  const connected = await connectNodeRedis(config.redisUrl);
  const store = redisApprovalStore(connected.store, { prefix: config.prefix });
  let runs = 0;
  const registry = new ToolRegistry().register({
    name: 'payments.refund',
    inputSchema: z.object({ amount: z.number() }),
    requiresApproval: true,
    handler: async ({ amount }) => {
      runs += 1;
      return { refunded: amount, by: config.name };
    },
  });
  const gate = approvalGate({ registry, store });
  const dispatcher = createDispatcher(defaultStack({ registry, approval: gate }));
  const room = controlRoom({ token: config.token, gate, dispatcher, registry });
  const server = createServer(room.handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.on('message', (message: ToWorker) => {
    if (message.type === 'stop') {
      void room.close().then(async () => {
        server.closeAllConnections();
        server.close();
        await connected.close();
        process.exit(0);
      });
      return;
    }
    dispatcher
      .dispatch(
        'payments.refund',
        { amount: message.amount },
        message.approval === undefined ? {} : { approval: message.approval },
      )
      .then((outcome) =>
        send({
          type: 'dispatched',
          id: message.id,
          ok: outcome.ok,
          ...(outcome.ok ? {} : { kind: outcome.kind }),
          ...(!outcome.ok && outcome.approval !== undefined ? { approval: outcome.approval.token } : {}),
          runs,
        }),
      );
  });
  send({ type: 'ready', origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
}

process.on('disconnect', () => process.exit(0));
await main();
