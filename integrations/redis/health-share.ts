/**
 * A fleet's tool-health snapshots on Redis: one hash, a field per process, each field's expiry
 * kept beside its value (on the server's clock), so a console on one worker shows every worker's tools.
 * @module
 */

import { optionKeys } from '../../middleware/index.js';
import { runScript } from './call.js';
import { defineScript, type StoreClient } from './client.js';
import { requireClient, requireMs, requireOptions, requirePrefix } from './options.js';

/** Options for `redisHealthShare`. */
export interface RedisHealthShareOptions {
  /**
   * The key namespace: the snapshots live in the hash `<prefix>:health`.
   * @default 'td'
   */
  prefix?: string;
  /**
   * Each store call's own deadline, in milliseconds.
   * @default 1_000
   */
  storeTimeoutMs?: number;
  /**
   * The largest snapshot published, in bytes of JSON; a larger one is refused (a `TypeError`)
   * rather than stored.
   * @default 1_000_000
   */
  maxSnapshotBytes?: number;
}

const redisHealthShareOptionKeys = optionKeys<RedisHealthShareOptions>({
  prefix: true,
  storeTimeoutMs: true,
  maxSnapshotBytes: true,
});

/** Where each process publishes its health snapshot and reads the others' (a console's `HealthShare`). */
export interface RedisHealthShare {
  /** Stores `snapshot` as `processId`'s, for `ttlMs` on the server's clock: one round trip. */
  publish(processId: string, snapshot: unknown, ttlMs: number): Promise<void>;
  /** Every live process's snapshot, parsed; expired fields are deleted on the way. One round trip. */
  readAll(): Promise<unknown[]>;
}

// The field's value is `<expires at, ms>|<json>`; the hash lives as long as its newest field.
const publishScript = defineScript(
  'health-publish',
  `local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], ARGV[1], tostring(ms + ttl) .. '|' .. ARGV[2])
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1`,
);

const readScript = defineScript(
  'health-read',
  `local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local all = redis.call('HGETALL', KEYS[1])
local live = {}
for i = 1, #all, 2 do
  local value = all[i + 1]
  local bar = string.find(value, '|', 1, true)
  local expires = bar and tonumber(string.sub(value, 1, bar - 1)) or 0
  if expires > ms then
    live[#live + 1] = string.sub(value, bar + 1)
  else
    redis.call('HDEL', KEYS[1], all[i])
  end
end
return live`,
);

/**
 * Shares tool-health snapshots through Redis: `publish` is one script (HSET of this process's
 * field, stamped with its expiry on the server's clock), `readAll` one script that answers the
 * live fields and deletes the expired ones. Give it to `toolHealth({ share })` on every worker:
 * each publishes about once a second, and any console's report merges them all.
 *
 * @example
 * import { fromNodeRedis, redisHealthShare } from 'tool-dispatcher/redis';
 * import { toolHealth } from 'tool-dispatcher/console';
 * const health = toolHealth({ dispatcher, share: redisHealthShare(fromNodeRedis(client), { prefix: 'billing' }) });
 */
export function redisHealthShare(
  redis: StoreClient,
  options: RedisHealthShareOptions = {},
): RedisHealthShare {
  requireClient(redis, 'redisHealthShare');
  requireOptions(options, 'redisHealthShare', redisHealthShareOptionKeys);
  const prefix = requirePrefix(options.prefix ?? 'td');
  const timeoutMs = requireMs('storeTimeoutMs', options.storeTimeoutMs ?? 1_000);
  const maxBytes = requireMs('maxSnapshotBytes', options.maxSnapshotBytes ?? 1_000_000);
  const key = `${prefix}:health`;
  return {
    publish: async (processId, snapshot, ttlMs) => {
      if (typeof processId !== 'string' || processId === '') {
        throw new TypeError('processId must be a non-empty string');
      }
      requireMs('ttlMs', ttlMs);
      const json = JSON.stringify(snapshot);
      if (json === undefined) throw new TypeError('snapshot must be JSON');
      if (Buffer.byteLength(json) > maxBytes) {
        throw new TypeError(`the snapshot is over maxSnapshotBytes (${maxBytes})`);
      }
      await runScript(redis, publishScript, [key], [processId, json, String(ttlMs)], timeoutMs);
    },
    readAll: async () => {
      const reply = await runScript(redis, readScript, [key], [], timeoutMs);
      const snapshots: unknown[] = [];
      for (const item of Array.isArray(reply) ? reply : []) {
        try {
          snapshots.push(JSON.parse(String(item)) as unknown);
        } catch {
          // A field no process of this version wrote: skipped.
        }
      }
      return snapshots;
    },
  };
}
