// A Redis suite's setup in one call: a redis-server of its own on a free port before the suite,
// clients connected as the docs say, all closed and the server stopped after it.

import { afterAll, beforeAll } from 'vitest';
import {
  connectIoredis,
  connectNodeRedis,
  type Connected,
  type IoredisOverrides,
} from '../integrations/redis/clients.js';
import { startRedisServer, type RedisServer } from './redis-server.js';

/** The suite's server and a way to connect clients that are closed after it. */
export interface RedisSuite {
  /** The suite's own redis-server (once its `beforeAll` ran). */
  readonly server: RedisServer;
  /** Connects node-redis (with a subscriber unless told not to). */
  node(options?: { subscriber?: boolean }): Promise<Connected>;
  /** Connects ioredis (with a subscriber unless told not to). */
  io(options?: { subscriber?: boolean; overrides?: IoredisOverrides }): Promise<Connected>;
}

/**
 * Call inside a `describe`: starts the server in its `beforeAll`, closes every client connected
 * through the answer and stops the server in its `afterAll`.
 */
export function redisSuite(): RedisSuite {
  let started: RedisServer | undefined;
  const open: Connected[] = [];
  const track = (connected: Connected) => {
    open.push(connected);
    return connected;
  };
  beforeAll(async () => {
    started = await startRedisServer();
  });
  afterAll(async () => {
    await Promise.all(open.map((connected) => connected.close()));
    await started?.stop();
  });
  const suite: RedisSuite = {
    get server() {
      if (started === undefined) throw new Error('the Redis suite has not started its server yet');
      return started;
    },
    node: async (options) => track(await connectNodeRedis(suite.server.url, options)),
    io: async (options) => track(await connectIoredis(suite.server.url, options)),
  };
  return suite;
}
