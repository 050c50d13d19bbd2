/**
 * The only thing the Redis stores need from a client: run a script, and (optionally) subscribe to a channel.
 * @module
 */

import { createHash } from 'node:crypto';

/** A Lua script the stores run; `sha` is computed once, when the script is defined. */
export interface RedisScript {
  /** A short name, for error messages. */
  readonly name: string;
  /** The Lua source. */
  readonly lua: string;
  /** The SHA-1 of `lua`, for EVALSHA. */
  readonly sha: string;
}

/** What a subscription hears: messages, and word that some may have been missed. */
export interface StoreSubscriptionHandlers {
  /** A message published on the channel. */
  message(text: string): void;
  /**
   * The subscriber connection dropped or came back: messages may have been missed, so every
   * waiter should look again and every mirror should be read afresh.
   */
  reset(): void;
}

/**
 * A Redis client as the stores see it. Build one with `fromNodeRedis` or `fromIoredis`, or
 * write one for another client (two methods).
 */
export interface StoreClient {
  /** Runs `script` with EVALSHA, falling back to EVAL when the server does not know it yet. */
  evalScript(script: RedisScript, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  /**
   * Subscribes to `channel` on a dedicated connection and returns the unsubscribe function.
   * Optional: without it, waiters poll and the breaker's mirror expires by age.
   */
  subscribe?(channel: string, handlers: StoreSubscriptionHandlers): Promise<() => Promise<void>>;
  /**
   * Optional: told each time a call passed its store deadline unanswered. A connection that
   * drops bytes but stays open (a wedge) never errors, and a client that lost a reply pairs
   * every later reply with the wrong command, so the adapters drop such a connection for the
   * client to make a new one.
   */
  stalled?(): void;
}

/**
 * Defines a script once (its SHA-1 computed now).
 *
 * @example
 * const ping = defineScript('ping', "return 'pong'");
 */
export function defineScript(name: string, lua: string): RedisScript {
  return { name, lua, sha: createHash('sha1').update(lua).digest('hex') };
}

/** The keys and arguments of a node-redis `evalSha` or `eval` call. */
export interface NodeRedisEvalOptions {
  /** The script's KEYS. */
  keys: string[];
  /** The script's ARGV. */
  arguments: string[];
}

/** The part of a node-redis (`redis` / `@redis/client` v6) client the stores use. */
export interface NodeRedisLike {
  /** Runs a script the server knows by its SHA-1 (EVALSHA). */
  evalSha(sha: string, options: NodeRedisEvalOptions): Promise<unknown>;
  /** Runs a script from its source (EVAL). */
  eval(script: string, options: NodeRedisEvalOptions): Promise<unknown>;
  /** A view of the client, on the same connection, whose commands run with other options. */
  withCommandOptions?(options: { timeout?: number }): NodeRedisLike;
  /** Used to drop a stalled connection (then `connect()` again). */
  destroy?(): void;
  /** Connects again after `destroy()`. */
  connect?(): Promise<unknown>;
}

/** The part of a node-redis client in subscriber mode (`client.duplicate()`, connected) the stores use. */
export interface NodeRedisSubscriberLike {
  /** Subscribes `listener` to `channel`. */
  subscribe(channel: string, listener: (message: string, channel: string) => void): Promise<unknown>;
  /** Removes `listener` from `channel`. */
  unsubscribe(channel: string, listener: (message: string, channel: string) => void): Promise<unknown>;
  /** Hears the connection come back (`ready`) or drop (`end`, `error`). */
  on(event: 'ready' | 'end' | 'error', listener: () => void): unknown;
}

/** The part of an ioredis v6 client the stores use. */
export interface IoredisLike {
  /** Runs a script the server knows by its SHA-1 (EVALSHA): the keys, then the arguments. */
  evalsha(sha: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  /** Runs a script from its source (EVAL): the keys, then the arguments. */
  eval(script: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  /** Used to drop a stalled connection (`disconnect(true)` reconnects). */
  disconnect?(reconnect?: boolean): void;
}

/** The part of an ioredis client used as a subscriber (`client.duplicate()`) the stores use. */
export interface IoredisSubscriberLike {
  /** Subscribes the connection to `channel`. */
  subscribe(channel: string): Promise<unknown>;
  /** Unsubscribes the connection from `channel`. */
  unsubscribe(channel: string): Promise<unknown>;
  /** Hears a message on any subscribed channel. */
  on(event: 'message', listener: (channel: string, message: string) => void): unknown;
  /** Hears the connection come back (`ready`) or drop (`close`). */
  on(event: 'ready' | 'close', listener: () => void): unknown;
}

/** Options for `fromNodeRedis`. */
export interface FromNodeRedisOptions {
  /**
   * A second, connected client for pub/sub (`await client.duplicate().connect()`). Without
   * one, followers learn of a finished leader by polling, and the breaker's mirror by age.
   */
  subscriber?: NodeRedisSubscriberLike;
  /**
   * After this many store calls in a row pass their deadline unanswered, the connection is
   * dropped and made again (`destroy()` then `connect()`), so a wedged connection heals; 0 never.
   * @default 2
   */
  stallsBeforeReconnect?: number;
}

/** Options for `fromIoredis`. */
export interface FromIoredisOptions {
  /** A second client for pub/sub (`client.duplicate()`); see `FromNodeRedisOptions.subscriber`. */
  subscriber?: IoredisSubscriberLike;
  /**
   * After this many store calls in a row pass their deadline unanswered, the connection is
   * dropped (`disconnect(true)`, ioredis reconnects); 0 never.
   * @default 2
   */
  stallsBeforeReconnect?: number;
}

function isNoScript(error: unknown): boolean {
  return String((error as { message?: unknown } | null)?.message ?? '').startsWith('NOSCRIPT');
}

/**
 * Adapts a node-redis v6 client (the documented default) for the Redis stores. Nothing from
 * `redis` is imported: any object with these methods works. The stores' scripts run without
 * node-redis's per-command timeout (`commandOptions.timeout`): each store call has a deadline
 * of its own, `storeTimeoutMs`.
 *
 * @example
 * const client = await createClient({ url, disableOfflineQueue: true }).connect();
 * const subscriber = await client.duplicate().connect();
 * const redis = fromNodeRedis(client, { subscriber });
 */
export function fromNodeRedis(client: NodeRedisLike, options: FromNodeRedisOptions = {}): StoreClient {
  if (typeof client?.evalSha !== 'function' || typeof client.eval !== 'function') {
    throw new TypeError('client must be a node-redis client (evalSha and eval)');
  }
  const { subscriber } = options;
  if (subscriber !== undefined && typeof subscriber?.subscribe !== 'function') {
    throw new TypeError('subscriber must be a node-redis client (subscribe)');
  }
  const watchdog = stallWatchdog(options.stallsBeforeReconnect ?? 2, async () => {
    if (typeof client.destroy !== 'function' || typeof client.connect !== 'function') return;
    client.destroy();
    await client.connect();
  });
  // node-redis 6 arms a timer for every command (an AbortSignal.timeout, 5 s by default) that
  // only covers the wait before it is written, and on Node 20 costs more CPU than the rest of
  // the command (measured: a SET + GET pair 46 → 8 µs without it). A store call has a deadline
  // of its own (storeTimeoutMs), so the scripts run through a view of the client without that
  // timer: the same connection, and the same options otherwise.
  const scripts =
    typeof client.withCommandOptions === 'function' ? client.withCommandOptions({ timeout: 0 }) : client;
  const store: StoreClient = {
    async evalScript(script, keys, args) {
      // The arrays are the stores' own and never reused: no copy on the hot path.
      const call = { keys: keys as string[], arguments: args as string[] };
      try {
        const reply = await scripts.evalSha(script.sha, call);
        watchdog.answered();
        return reply;
      } catch (error) {
        if (!isNoScript(error)) throw error;
        return scripts.eval(script.lua, call);
      }
    },
    stalled: () => watchdog.stalled(),
  };
  if (subscriber !== undefined) {
    const resets = resetFanOut((reset) => {
      // node-redis subscribes again by itself after a reconnect.
      subscriber.on('ready', reset);
      subscriber.on('end', reset);
      subscriber.on('error', reset);
    });
    store.subscribe = async (channel, handlers) => {
      const listener = (message: string) => handlers.message(message);
      await subscriber.subscribe(channel, listener);
      const stop = resets.add(() => handlers.reset());
      return async () => {
        stop();
        await subscriber.unsubscribe(channel, listener);
      };
    };
  }
  return store;
}

/**
 * Adapts an ioredis v6 client for the Redis stores. Nothing from `ioredis` is imported: any
 * object with these methods works.
 *
 * @example
 * const client = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
 * const redis = fromIoredis(client, { subscriber: client.duplicate() });
 */
export function fromIoredis(client: IoredisLike, options: FromIoredisOptions = {}): StoreClient {
  if (typeof client?.evalsha !== 'function' || typeof client.eval !== 'function') {
    throw new TypeError('client must be an ioredis client (evalsha and eval)');
  }
  const { subscriber } = options;
  if (subscriber !== undefined && typeof subscriber?.subscribe !== 'function') {
    throw new TypeError('subscriber must be an ioredis client (subscribe)');
  }
  const watchdog = stallWatchdog(options.stallsBeforeReconnect ?? 2, async () => client.disconnect?.(true));
  const store: StoreClient = {
    async evalScript(script, keys, args) {
      try {
        const reply = await client.evalsha(script.sha, keys.length, ...keys, ...args);
        watchdog.answered();
        return reply;
      } catch (error) {
        if (!isNoScript(error)) throw error;
        return client.eval(script.lua, keys.length, ...keys, ...args);
      }
    },
    stalled: () => watchdog.stalled(),
  };
  if (subscriber !== undefined) {
    const channels = new Map<string, StoreSubscriptionHandlers>();
    const resets = resetFanOut((reset) => {
      // ioredis subscribes again by itself after a reconnect (autoResubscribe).
      subscriber.on('ready', reset);
      subscriber.on('close', reset);
      subscriber.on('message', (from: string, message: string) => channels.get(from)?.message(message));
    });
    store.subscribe = async (channel, handlers) => {
      if (channels.has(channel)) throw new TypeError(`already subscribed to ${channel}`);
      channels.set(channel, handlers);
      const stop = resets.add(() => handlers.reset());
      try {
        await subscriber.subscribe(channel);
      } catch (error) {
        stop();
        channels.delete(channel);
        throw error;
      }
      return async () => {
        stop();
        channels.delete(channel);
        await subscriber.unsubscribe(channel);
      };
    };
  }
  return store;
}

// One set of connection listeners per subscriber, whatever the number of channels on it.
function resetFanOut(install: (reset: () => void) => void): { add(handler: () => void): () => void } {
  const handlers = new Set<() => void>();
  let installed = false;
  return {
    add(handler) {
      if (!installed) {
        installed = true;
        install(() => {
          for (const each of handlers) each();
        });
      }
      handlers.add(handler);
      return () => handlers.delete(handler);
    },
  };
}

// Counts calls in a row that passed their deadline; at `limit`, drops the connection once.
function stallWatchdog(
  limit: number,
  reconnect: () => Promise<unknown>,
): { stalled(): void; answered(): void } {
  if (!Number.isInteger(limit) || limit < 0) {
    throw new TypeError(`stallsBeforeReconnect must be an integer >= 0, got ${String(limit)}`);
  }
  let stalls = 0;
  let reconnecting = false;
  return {
    answered() {
      stalls = 0;
    },
    stalled() {
      stalls += 1;
      if (limit === 0 || stalls < limit || reconnecting) return;
      reconnecting = true;
      stalls = 0;
      reconnect()
        .catch(() => {})
        .finally(() => {
          reconnecting = false;
        });
    },
  };
}
