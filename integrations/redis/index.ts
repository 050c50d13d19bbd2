/**
 * tool-dispatcher/redis: idempotency, fleet-wide concurrency slots, circuit breakers and
 * tool-call budgets shared across processes on Redis. Any client works through a two-method
 * adapter; `fromNodeRedis` (the documented default) and `fromIoredis` ship here, and neither
 * client is imported at run time. Every state change is one Lua script: atomic, safe to send
 * twice, under its own deadline (`store_unavailable` past it), with leases on the server's clock.
 *
 * @example
 * import { createClient } from 'redis';
 * import { fromNodeRedis, redisIdempotencyStore, redisBudget } from 'tool-dispatcher/redis';
 * const client = await createClient({ url, disableOfflineQueue: true }).connect();
 * const redis = fromNodeRedis(client, { subscriber: await client.duplicate().connect() });
 * const store = redisIdempotencyStore(redis, { prefix: 'billing' });
 * const budget = await redisBudget(redis, { id: runId, limit: 50 });
 *
 * @module tool-dispatcher/redis
 */

export {
  fromIoredis,
  fromNodeRedis,
  defineScript,
  type FromIoredisOptions,
  type FromNodeRedisOptions,
  type IoredisLike,
  type IoredisSubscriberLike,
  type NodeRedisEvalOptions,
  type NodeRedisLike,
  type NodeRedisSubscriberLike,
  type RedisScript,
  type StoreClient,
  type StoreSubscriptionHandlers,
} from './client.js';
export {
  redisIdempotencyStore,
  type RedisIdempotencyStore,
  type RedisIdempotencyStoreOptions,
} from './idempotency-store.js';
export { redisSlotStore, type RedisSlotStoreOptions } from './slot-store.js';
export { redisCircuitStore, type RedisCircuitStoreOptions } from './circuit-store.js';
export { redisBudget, type RedisBudgetOptions } from './budget.js';
export { redisRateStore, redisWindowStore, type RedisLimitStoreOptions } from './rate-store.js';
export { redisApprovalStore, type RedisApprovalStoreOptions } from './approval-store.js';
export {
  redisAutopilotStore,
  type RedisAutopilotStore,
  type RedisAutopilotStoreOptions,
} from './autopilot-store.js';
export {
  redisHealthShare,
  type RedisHealthShare,
  type RedisHealthShareOptions,
} from './health-share.js';
