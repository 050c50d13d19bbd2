/**
 * `mcp-proxy --redis-url`: the stores a fleet of proxies shares on Redis (dedupe, Tasks, breakers),
 * on whichever Redis client is installed (`redis`, else `ioredis`; both optional peers).
 * @module
 */

import {
  fromIoredis,
  fromNodeRedis,
  redisApprovalStore,
  redisCircuitStore,
  redisIdempotencyStore,
  type IoredisLike,
  type IoredisSubscriberLike,
  type NodeRedisLike,
  type NodeRedisSubscriberLike,
  type StoreClient,
} from '../redis/index.js';
import { maskedUrl } from './masked-url.js';
import type { McpProxyStores } from './proxy.js';

/** The proxy's stores on one Redis, and how to let go of it. */
export interface FleetStores {
  /** The stores to pass to `createMcpProxy`. */
  readonly stores: Required<McpProxyStores>;
  /** Closes the connections. */
  close(): Promise<void>;
}

/** Why the fleet's Redis could not be had: said in one line, with exit code 1. */
export class FleetUnavailable extends Error {}

// Faults show fast: a call fails at its store deadline instead of waiting in a queue.
const connectTimeoutMs = 2_000;

function backoff(retries: number): number {
  return Math.min(50 * (retries + 1), 1_000);
}

/**
 * Connects to `url` with the `redis` package (or `ioredis` when only it is installed) and makes
 * the proxy's idempotency and circuit stores on it under `prefix`.
 *
 * @throws FleetUnavailable naming the server when it does not answer, or the packages when
 * neither is installed.
 * @example
 * const fleet = await connectFleet('redis://127.0.0.1:6379', 'td');
 * const proxy = await createMcpProxy({ upstream, stores: fleet.stores });
 */
export async function connectFleet(url: string, prefix: string): Promise<FleetStores> {
  const connection = (await connectNodeRedis(url)) ?? (await connectIoredis(url));
  if (connection === undefined) {
    throw new FleetUnavailable(
      '--redis-url needs the "redis" package (or "ioredis") beside tool-dispatcher: npm install redis',
    );
  }
  const idempotency = redisIdempotencyStore(connection.client, { prefix });
  return {
    stores: {
      idempotency,
      circuit: redisCircuitStore(connection.client, { prefix }),
      approvals: redisApprovalStore(connection.client, { prefix }),
    },
    close: async () => {
      idempotency.close();
      await connection.close();
    },
  };
}

interface Connection {
  client: StoreClient;
  close(): Promise<void>;
}

function isMissing(error: unknown, name: string): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === 'ERR_MODULE_NOT_FOUND' && String(message).includes(`'${name}'`);
}

function unreachable(url: string, error: unknown): FleetUnavailable {
  const reason = error instanceof Error ? error.message || error.name : String(error);
  // A password in the URL is never echoed, however the URL is spelled.
  return new FleetUnavailable(
    `Cannot reach Redis at ${maskedUrl(url)}: ${reason.replaceAll(url, maskedUrl(url))}`,
    {
      cause: error,
    },
  );
}

// The `redis` package's client, typed as little as the stores need (it is an optional peer).
interface NodeRedisClient extends NodeRedisLike {
  on(event: 'error', listener: () => void): unknown;
  connect(): Promise<unknown>;
  destroy(): void;
  duplicate(): NodeRedisClient & NodeRedisSubscriberLike;
}

async function connectNodeRedis(url: string): Promise<Connection | undefined> {
  let createClient: (options: object) => NodeRedisClient;
  try {
    ({ createClient } = (await import('redis')) as unknown as { createClient: typeof createClient });
  } catch (error) {
    if (isMissing(error, 'redis')) return undefined;
    throw error;
  }
  let started = false;
  const client = createClient({
    url,
    disableOfflineQueue: true,
    // A server that is down at start is an error now, not a reconnect loop in the background;
    // once up, a dropped connection is made again.
    socket: {
      connectTimeout: connectTimeoutMs,
      reconnectStrategy: (retries: number) => started && backoff(retries),
    },
  });
  client.on('error', () => {});
  let subscriber: (NodeRedisClient & NodeRedisSubscriberLike) | undefined;
  try {
    await client.connect();
    subscriber = client.duplicate();
    subscriber.on('error', () => {});
    await subscriber.connect();
  } catch (error) {
    client.destroy();
    subscriber?.destroy();
    throw unreachable(url, error);
  }
  const connected = subscriber;
  started = true;
  return {
    client: fromNodeRedis(client, { subscriber: connected }),
    close: async () => {
      client.destroy();
      connected.destroy();
    },
  };
}

// The `ioredis` package's client, typed as little as the stores need (it is an optional peer).
interface IoredisClient extends IoredisLike, IoredisSubscriberLike {
  on(event: 'error', listener: (error: unknown) => void): this;
  on(event: 'message', listener: (channel: string, message: string) => void): this;
  on(event: 'ready' | 'close', listener: () => void): this;
  connect(): Promise<void>;
  disconnect(): void;
}

async function connectIoredis(url: string): Promise<Connection | undefined> {
  let Redis: new (url: string, options: object) => IoredisClient;
  try {
    ({ Redis } = (await import('ioredis')) as unknown as { Redis: typeof Redis });
  } catch (error) {
    if (isMissing(error, 'ioredis')) return undefined;
    throw error;
  }
  const settings = {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    connectTimeout: connectTimeoutMs,
    lazyConnect: true,
    retryStrategy: (retries: number) => (started ? backoff(retries) : null),
  };
  let started = false;
  const client = new Redis(url, settings);
  const subscriber = new Redis(url, { ...settings, enableOfflineQueue: true });
  // ioredis rejects a failed connect with "Connection is closed."; the socket's error says why.
  let cause: unknown;
  const remember = (error: unknown) => {
    cause ??= error;
  };
  client.on('error', remember);
  subscriber.on('error', remember);
  try {
    await client.connect();
    await subscriber.connect();
  } catch (error) {
    client.disconnect();
    subscriber.disconnect();
    throw unreachable(url, cause ?? error);
  }
  started = true;
  return {
    client: fromIoredis(client, { subscriber }),
    close: async () => {
      client.disconnect();
      subscriber.disconnect();
    },
  };
}
