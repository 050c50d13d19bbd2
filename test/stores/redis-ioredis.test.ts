// The stores contract against the Redis stores through ioredis, on a redis-server of the test's own.

import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { fromIoredis } from '../../integrations/redis/index.js';
import { contractRedis, redisSuitesEnabled, type RedisServer } from '../helpers/redis-server.js';
import { storeContract } from './contract.js';
import { poll, redisSubject, type Connection } from './redis-subject.js';

const enabled = redisSuitesEnabled('stores contract, ioredis');

async function connect(url: string): Promise<Connection> {
  const options = {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    retryStrategy: (retries: number) => Math.min(20 * retries, 200),
    lazyConnect: true,
  };
  const client = new Redis(url, options);
  const subscriber = new Redis(url, { ...options, enableOfflineQueue: true });
  client.on('error', () => {});
  subscriber.on('error', () => {});
  await client.connect();
  await subscriber.connect();
  return {
    store: fromIoredis(client, { subscriber }),
    ready: () => poll(() => client.status === 'ready' && subscriber.status === 'ready'),
    close: async () => {
      client.disconnect();
      subscriber.disconnect();
    },
  };
}

if (enabled) {
  let server: RedisServer;
  let connections: [Connection, Connection];
  beforeAll(async () => {
    server = await contractRedis();
    connections = [await connect(server.url), await connect(server.url)];
  });
  afterAll(async () => {
    await Promise.all(connections?.map((connection) => connection.close()) ?? []);
    await server?.stop();
  });
  storeContract(
    'redis via ioredis',
    redisSubject(
      () => server,
      () => connections,
    ),
  );
} else {
  describe.skip('redis via ioredis: the stores contract', () => it('needs redis-server', () => {}));
}
