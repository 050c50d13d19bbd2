// Redis clients as the docs tell users to configure them: faults visible fast, nothing queued or resent blindly.

import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { fromIoredis, fromNodeRedis, type StoreClient } from '../../../integrations/redis/index.js';

/** A connected client pair (commands + subscriber) behind a StoreClient. */
export interface Connected {
  readonly store: StoreClient;
  /** Whether both connections are up. */
  ready(): boolean;
  close(): Promise<void>;
}

/** Connects node-redis with the documented fault settings. */
export async function connectNodeRedis(
  url: string,
  options: { subscriber?: boolean } = {},
): Promise<Connected> {
  const client = createClient({
    url,
    disableOfflineQueue: true,
    // Traffic on idle connections, so that socketTimeout fires only for a dead one.
    pingInterval: 250,
    // The default strategy gives up after a socket timeout; reconnect quickly, for ever.
    socket: {
      connectTimeout: 1_000,
      socketTimeout: 1_000,
      reconnectStrategy: (retries) => Math.min(20 * (retries + 1), 200),
    },
  });
  client.on('error', () => {});
  let subscriber: ReturnType<typeof client.duplicate> | undefined;
  try {
    await client.connect();
    if (options.subscriber !== false) {
      subscriber = client.duplicate();
      subscriber.on('error', () => {});
      await subscriber.connect();
    }
  } catch (error) {
    // A failed connect must not leave a client reconnecting in the background.
    client.destroy();
    subscriber?.destroy();
    throw error;
  }
  return {
    store: subscriber === undefined ? fromNodeRedis(client) : fromNodeRedis(client, { subscriber }),
    ready: () => client.isReady && (subscriber?.isReady ?? true),
    close: async () => {
      client.destroy();
      subscriber?.destroy();
    },
  };
}

/** The ioredis settings a test may set back to their defaults. */
export interface IoredisOverrides {
  autoResendUnfulfilledCommands?: boolean;
  maxRetriesPerRequest?: number | null;
  enableOfflineQueue?: boolean;
}

/** Connects ioredis with the documented fault settings (`overrides` for tests of the defaults). */
export async function connectIoredis(
  url: string,
  options: { subscriber?: boolean; overrides?: IoredisOverrides } = {},
): Promise<Connected> {
  const settings = {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    socketTimeout: 1_000,
    connectTimeout: 1_000,
    retryStrategy: (retries: number) => Math.min(20 * retries, 200),
    lazyConnect: true,
    ...options.overrides,
  };
  const client = new Redis(url, settings);
  client.on('error', () => {});
  let subscriber: Redis | undefined;
  try {
    await client.connect();
    if (options.subscriber !== false) {
      // A subscriber may queue its SUBSCRIBE until connected: it sends nothing else.
      const { socketTimeout: _unused, ...rest } = settings;
      subscriber = new Redis(url, { ...rest, enableOfflineQueue: true });
      subscriber.on('error', () => {});
      await subscriber.connect();
    }
  } catch (error) {
    // A failed connect must not leave a client reconnecting in the background.
    client.disconnect();
    subscriber?.disconnect();
    throw error;
  }
  return {
    store: subscriber === undefined ? fromIoredis(client) : fromIoredis(client, { subscriber }),
    ready: () => client.status === 'ready' && (subscriber === undefined || subscriber.status === 'ready'),
    close: async () => {
      client.disconnect();
      subscriber?.disconnect();
    },
  };
}

/** Waits until `connected` is ready again (5 s at most). */
export async function reconnected(...connected: Connected[]): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (connected.every((each) => each.ready())) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('clients did not reconnect within 5 s');
}
