// The stores contract's subject for the Redis stores, whatever the client: two "processes" (two
// clients, each with its own subscriber) on one redis-server of the test's own.

import { randomUUID } from 'node:crypto';
import {
  redisApprovalStore,
  redisBudget,
  redisCircuitStore,
  redisIdempotencyStore,
  redisSlotStore,
  type StoreClient,
} from '../../integrations/redis/index.js';
import type { RedisServer } from '../helpers/redis-server.js';
import type { StoreSubject } from './contract.js';

/** One connected client pair (commands + subscriber) as a test sees it. */
export interface Connection {
  readonly store: StoreClient;
  /** Resolves once the client and its subscriber are connected again (after a restart). */
  ready(): Promise<void>;
  close(): Promise<void>;
}

export function redisSubject(
  server: () => RedisServer,
  connections: () => [Connection, Connection],
): () => StoreSubject {
  return () => {
    const [one, two] = connections();
    const prefix = `td-test-${randomUUID()}`;
    const common = { prefix, storeTimeoutMs: 2_000, pollMs: 200 };
    return {
      idempotency: ({ leaseMs, onStoreReset = 'fail' }) => [
        redisIdempotencyStore(one.store, { ...common, leaseMs, onStoreReset }),
        redisIdempotencyStore(two.store, { ...common, leaseMs, onStoreReset }),
      ],
      slots: ({ max, leaseMs }) => [
        redisSlotStore(one.store, { ...common, pool: 'p', max, leaseMs }),
        redisSlotStore(two.store, { ...common, pool: 'p', max, leaseMs }),
      ],
      circuits: () => [
        redisCircuitStore(one.store, { prefix, storeTimeoutMs: 2_000 }),
        redisCircuitStore(two.store, { prefix, storeTimeoutMs: 2_000 }),
      ],
      approvals: () => [
        redisApprovalStore(one.store, { prefix, storeTimeoutMs: 2_000 }),
        redisApprovalStore(two.store, { prefix, storeTimeoutMs: 2_000 }),
      ],
      budget: async ({ limit, join }) => {
        const id = join ?? randomUUID();
        const budget = await redisBudget(join === undefined ? one.store : two.store, { id, limit, prefix });
        return Object.defineProperty(budget, 'id', { value: id }) as typeof budget & { id: string };
      },
      wait: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      can: { idempotencyLeases: true, slotLeases: true, resend: true },
      ...(server().owned
        ? {
            restartEmpty: async () => {
              await server().restart();
              await Promise.all([one.ready(), two.ready()]);
            },
          }
        : {}),
    };
  };
}

/** Polls `check` every 10 ms until it holds (5 s at most). */
export async function poll(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  if (!check()) throw new Error('not ready within 5 s');
}
