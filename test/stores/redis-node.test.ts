// The stores contract against the Redis stores through node-redis, on a redis-server of the test's own.

import { createClient } from 'redis';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { fromNodeRedis } from '../../integrations/redis/index.js';
import { contractRedis, redisSuitesEnabled, type RedisServer } from '../helpers/redis-server.js';
import { storeContract } from './contract.js';
import { poll, redisSubject, type Connection } from './redis-subject.js';

const enabled = redisSuitesEnabled('stores contract, node-redis');

async function connect(url: string): Promise<Connection> {
  const options = {
    url,
    disableOfflineQueue: true,
    socket: { reconnectStrategy: (retries: number) => Math.min(20 * (retries + 1), 200) },
  };
  const client = createClient(options);
  const subscriber = client.duplicate();
  client.on('error', () => {});
  subscriber.on('error', () => {});
  await client.connect();
  await subscriber.connect();
  return {
    store: fromNodeRedis(client, { subscriber }),
    ready: () => poll(() => client.isReady && subscriber.isReady),
    close: async () => {
      client.destroy();
      subscriber.destroy();
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
    'redis via node-redis',
    redisSubject(
      () => server,
      () => connections,
    ),
  );
} else {
  describe.skip('redis via node-redis: the stores contract', () => it('needs redis-server', () => {}));
}
