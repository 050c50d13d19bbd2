/**
 * The Lua scripts: one atomic round trip per state change, each safe to send twice, all time from the server.
 * @module
 */

import { defineScript } from './client.js';

// Server time in ms and µs, inside a script (Redis ≥ 5 replicates script effects, so TIME is
// allowed before writes).
const serverTime = `
local clock = redis.call('TIME')
local nowMs = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
`;

/**
 * Claims an idempotency key. KEYS: record, epoch, reset marker, receipt. ARGV: token, fingerprint,
 * leaseMs, known epoch ('' if none), a fresh epoch id, reset window ms (0: never fail closed),
 * tool ('' for no running receipt), receipt ttl ms, key, '1' when the tool can reconcile.
 * Reply: {kind, epoch, a, b}: lead (fence, lease ms left, the earlier receipt, '1' when the key's
 * past was lost in a reset, '?' when the epoch is younger than the reset window and no reset was
 * marked: the store cannot tell whether it forgot the key's past), follow (fence, ms left), hit
 * (payload, ms left), unshareable (reason, ms left), conflict, reset (ms left of the window),
 * settling (ms until a lease has passed since the reset).
 */
export const claimScript = defineScript(
  'idempotency claim',
  `${serverTime}
-- One read for both: the epoch, and whether keyed calls are refused after a restart.
local state = redis.call('MGET', KEYS[2], KEYS[3])
local epoch, marked = state[1], state[2]
if not epoch then
  epoch = ARGV[5] .. ':' .. nowMs
  redis.call('SET', KEYS[2], epoch)
end
local window = tonumber(ARGV[6])
local lostPast = ''
if window > 0 then
  if ARGV[4] ~= '' and epoch ~= ARGV[4] and not marked then
    -- A life of the store this caller did not know: Redis came back empty since it last looked.
    local born = tonumber(string.match(epoch, ':(%d+)$')) or nowMs
    local left = born + window - nowMs
    if left > 0 then
      redis.call('SET', KEYS[3], '1', 'PX', left)
      marked = '1'
    end
  end
  if marked then
    local left = redis.call('PTTL', KEYS[3])
    if left > 0 then
      if ARGV[10] ~= '1' then return {'reset', epoch, left} end
      -- A tool that can reconcile is asked, once a lease has passed since the restart: every
      -- leader of the store's earlier life has finished or lost its lease by then.
      local born = tonumber(string.match(epoch, ':(%d+)$')) or nowMs
      local settling = born + tonumber(ARGV[3]) - nowMs
      if settling > 0 then return {'settling', epoch, settling} end
      lostPast = '1'
    end
  elseif (tonumber(string.match(epoch, ':(%d+)$')) or nowMs) + window > nowMs then
    -- A young life nobody has said is a restart: a first deployment, or a restart whose first
    -- caller never knew the earlier life. This store cannot vouch for what ran before it.
    lostPast = '?'
  end
end
local rec = redis.call('HMGET', KEYS[1], 's', 'f', 't', 'g', 'r')
if not rec[1] then
  local fence = string.format('%.0f', tonumber(clock[1]) * 1000000 + tonumber(clock[2]))
  redis.call('HSET', KEYS[1], 's', 'R', 'f', ARGV[2], 't', ARGV[1], 'g', fence)
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  -- The earlier leader's receipt comes back, and this lead leaves its own, in the same trip.
  local earlier = redis.call('GET', KEYS[4]) or ''
  if ARGV[7] ~= '' then
    local receipt = cjson.encode({key = ARGV[9], tool = ARGV[7], status = 'running', attempts = 0, startedAt = nowMs})
    redis.call('SET', KEYS[4], receipt, 'PX', ARGV[8])
  end
  return {'lead', epoch, fence, tonumber(ARGV[3]), earlier, lostPast}
end
if rec[2] ~= ARGV[2] then return {'conflict', epoch} end
local left = redis.call('PTTL', KEYS[1])
if rec[1] == 'D' then return {'hit', epoch, rec[5], left} end
if rec[1] == 'U' then return {'unshareable', epoch, rec[5], left} end
if rec[3] == ARGV[1] then return {'lead', epoch, rec[4], left} end
-- Someone waits: the end of this lead is published (a lead nobody follows publishes nothing).
redis.call('HSET', KEYS[1], 'w', '1')
return {'follow', epoch, rec[4], left}
`,
);

/** Renews a lead. KEYS: record. ARGV: token, leaseMs. Reply: 1 renewed, 0 gone. */
export const renewScript = defineScript(
  'idempotency renew',
  `
local rec = redis.call('HMGET', KEYS[1], 's', 't')
if rec[1] == 'R' and rec[2] == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`,
);

/**
 * Records a success, published only when a follower waits (field w). KEYS: record, receipt. ARGV: token, status (D stored, U unshareable), payload,
 * ttlMs, channel, fence, key, fingerprint, receipt JSON ('' for none), receipt ttl ms.
 * Reply: {stored} | {late} | {lost, status, payload}.
 */
export const completeScript = defineScript(
  'idempotency complete',
  `
local rec = redis.call('HMGET', KEYS[1], 's', 't', 'r', 'w')
if not rec[1] then
  redis.call('HSET', KEYS[1], 's', ARGV[2], 'f', ARGV[8], 't', ARGV[1], 'g', ARGV[6], 'r', ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  redis.call('PUBLISH', ARGV[5], 'i|' .. ARGV[6] .. '|' .. ARGV[7])
  if ARGV[9] ~= '' then redis.call('SET', KEYS[2], ARGV[9], 'PX', ARGV[10]) end
  return {'late'}
end
if rec[2] ~= ARGV[1] then return {'lost', rec[1], rec[3] or ''} end
if ARGV[9] ~= '' then redis.call('SET', KEYS[2], ARGV[9], 'PX', ARGV[10]) end
if rec[1] == 'R' then
  redis.call('HSET', KEYS[1], 's', ARGV[2], 'r', ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  if rec[4] then redis.call('PUBLISH', ARGV[5], 'i|' .. ARGV[6] .. '|' .. ARGV[7]) end
end
return {'stored'}
`,
);

/**
 * Reads a key's record without claiming it. KEYS: record. ARGV: fingerprint.
 * Reply: {none} (free or running) | {conflict} | {D or U, payload or reason, ms left}.
 */
export const peekScript = defineScript(
  'idempotency peek',
  `
local rec = redis.call('HMGET', KEYS[1], 's', 'f', 'r')
if not rec[1] then return {'none'} end
if rec[2] ~= ARGV[1] then return {'conflict'} end
if rec[1] == 'R' then return {'none'} end
return {rec[1], rec[3], redis.call('PTTL', KEYS[1])}
`,
);

/**
 * Stores a result under a key with no record (no lease, so nobody follows it). KEYS: record.
 * ARGV: status (D stored, U unshareable), payload, ttlMs, fingerprint. Reply: 1 stored, 0 exists.
 */
export const putIfAbsentScript = defineScript(
  'idempotency put-if-absent',
  `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 's', ARGV[1], 'f', ARGV[4], 'r', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`,
);

/**
 * Frees a lead after a failure; its receipt is written too when the key is free (a lost lease
 * nobody took over), unless only the holder may write it. KEYS: record, receipt. ARGV: token,
 * channel, fence, key, receipt JSON ('' for none, '-' to delete the holder's receipt), receipt ttl
 * ms, '1' when only the holder writes the receipt. Reply: 1.
 */
export const releaseScript = defineScript(
  'idempotency release',
  `
local rec = redis.call('HMGET', KEYS[1], 's', 't', 'w')
if rec[1] == 'R' and rec[2] == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[5] == '-' then redis.call('DEL', KEYS[2])
  elseif ARGV[5] ~= '' then redis.call('SET', KEYS[2], ARGV[5], 'PX', ARGV[6]) end
  if rec[3] then redis.call('PUBLISH', ARGV[2], 'i|' .. ARGV[3] .. '|' .. ARGV[4]) end
elseif not rec[1] and ARGV[5] ~= '' and ARGV[5] ~= '-' and ARGV[7] ~= '1' then
  redis.call('SET', KEYS[2], ARGV[5], 'PX', ARGV[6])
end
return 1
`,
);

/**
 * Takes a slot. KEYS: the pool's zset (token → lease end, server ms). ARGV: token, max,
 * leaseMs. Reply: {1, held} granted | {0, ms until the first lease ends, held}.
 */
export const acquireScript = defineScript(
  'slot acquire',
  `${serverTime}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', nowMs)
local lease = tonumber(ARGV[3])
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return {1, redis.call('ZCARD', KEYS[1])} end
local held = redis.call('ZCARD', KEYS[1])
if held < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], nowMs + lease, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], 2 * lease)
  return {1, held + 1}
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {0, tonumber(first[2]) - nowMs, held}
`,
);

/** Renews a slot. KEYS: the pool's zset. ARGV: token, leaseMs. Reply: 1 renewed, 0 gone. */
export const renewSlotScript = defineScript(
  'slot renew',
  `${serverTime}
local ends = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not ends or tonumber(ends) <= nowMs then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return 0
end
local lease = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], nowMs + lease, ARGV[1])
redis.call('PEXPIRE', KEYS[1], 2 * lease)
return 1
`,
);

/** Gives a slot back. KEYS: the pool's zset. ARGV: token, channel, pool. Reply: 1 removed, 0 not held. */
export const releaseSlotScript = defineScript(
  'slot release',
  `
local removed = redis.call('ZREM', KEYS[1], ARGV[1])
if removed == 1 then redis.call('PUBLISH', ARGV[2], 'c|' .. ARGV[3]) end
return removed
`,
);

/** Counts a pool's live slots. KEYS: the pool's zset. Reply: held. */
export const loadSlotScript = defineScript(
  'slot load',
  `${serverTime}
return redis.call('ZCOUNT', KEYS[1], '(' .. nowMs, '+inf')
`,
);

// A circuit's view as a reply: {written, exists, state, failures, openedAt, probe, probeUntil,
// version, windowFailures, now}. The window is trimmed with the last windowMs recorded.
const circuitView = `
local function view(written)
  local rec = redis.call('HMGET', KEYS[1], 'st', 'fl', 'oa', 'pr', 'pu', 'v', 'wm')
  local wm = tonumber(rec[7] or '')
  if wm then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. (nowMs - wm)) end
  local count = redis.call('ZCARD', KEYS[2])
  local exists = 0
  if rec[1] and rec[1] ~= '' then exists = 1 end
  return {written, exists, rec[1] or '', rec[2] or '0', rec[3] or '0', rec[4] or '', rec[5] or '0',
    rec[6] or '0', count, nowMs}
end
`;

/** Reads a circuit. KEYS: record, failure zset. Reply: a view. */
export const readCircuitScript = defineScript(
  'circuit read',
  `${serverTime}${circuitView}
return view(0)
`,
);

/**
 * Compare-and-set of a circuit record. KEYS: record, failure zset. ARGV: expected version,
 * write id, has record (1/0), state, failures, openedAt, probe, probeUntil, idle ttl ms,
 * channel, circuit. Reply: a view (written 1 when this write, or its first send, landed).
 */
export const casCircuitScript = defineScript(
  'circuit compare-and-set',
  `${serverTime}${circuitView}
local cur = redis.call('HMGET', KEYS[1], 'v', 'w')
local version = tonumber(cur[1] or '0')
local expected = tonumber(ARGV[1])
if version ~= expected then
  if cur[2] == ARGV[2] and version == expected + 1 then return view(1) end
  return view(0)
end
version = version + 1
if ARGV[3] == '1' then
  redis.call('HSET', KEYS[1], 'st', ARGV[4], 'fl', ARGV[5], 'oa', ARGV[6], 'pr', ARGV[7], 'pu', ARGV[8],
    'v', version, 'w', ARGV[2])
else
  redis.call('HSET', KEYS[1], 'st', '', 'fl', 0, 'oa', 0, 'pr', '', 'pu', 0, 'v', version, 'w', ARGV[2])
end
redis.call('HDEL', KEYS[1], 'wm')
redis.call('DEL', KEYS[2])
redis.call('PEXPIRE', KEYS[1], ARGV[9])
local st = ARGV[4]
if ARGV[3] ~= '1' then st = '' end
redis.call('PUBLISH', ARGV[10], 'b|' .. version .. '|' .. st .. '|' .. ARGV[5] .. '|' .. ARGV[6] .. '|' ..
  ARGV[7] .. '|' .. ARGV[8] .. '|' .. nowMs .. '|' .. ARGV[11])
return view(1)
`,
);

/**
 * Adds a failure to a circuit's window. KEYS: record, failure zset. ARGV: failure id,
 * windowMs ('inf' for none), idle ttl ms, channel, circuit. Reply: a view.
 */
export const failureScript = defineScript(
  'circuit failure',
  `${serverTime}${circuitView}
redis.call('ZADD', KEYS[2], 'NX', nowMs, ARGV[1])
if ARGV[2] ~= 'inf' then redis.call('HSET', KEYS[1], 'wm', ARGV[2]) else redis.call('HDEL', KEYS[1], 'wm') end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
local seen = view(0)
redis.call('PUBLISH', ARGV[4], 'f|' .. seen[8] .. '|' .. seen[9] .. '|' .. nowMs .. '|' .. ARGV[5])
return seen
`,
);

/**
 * Creates a budget if it does not exist. KEYS: budget hash. ARGV: limit, ttl ms. Reply:
 * {left, limit} (an existing budget keeps its own).
 */
export const createBudgetScript = defineScript(
  'budget create',
  `
if redis.call('HSETNX', KEYS[1], 'limit', ARGV[1]) == 1 then
  redis.call('HSET', KEYS[1], 'left', ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
local rec = redis.call('HMGET', KEYS[1], 'left', 'limit')
return {tonumber(rec[1]), tonumber(rec[2])}
`,
);

/**
 * Takes units from a budget, once per attempt id. KEYS: budget hash. ARGV: attempt id, units.
 * Reply: {1, left} taken (a resend answers the same) | {0, left} refused | {-1} budget gone.
 */
export const takeBudgetScript = defineScript(
  'budget take',
  `
local prior = redis.call('HGET', KEYS[1], 'a:' .. ARGV[1])
if prior then return {1, tonumber(prior)} end
local left = redis.call('HGET', KEYS[1], 'left')
if not left then return {-1, 0} end
left = tonumber(left)
local units = tonumber(ARGV[2])
if left < units then return {0, left} end
left = redis.call('HINCRBY', KEYS[1], 'left', -units)
redis.call('HSET', KEYS[1], 'a:' .. ARGV[1], left)
return {1, left}
`,
);

/** Reads a budget. KEYS: budget hash. Reply: {left, limit} or {-1, 0} when gone. */
export const readBudgetScript = defineScript(
  'budget read',
  `
local rec = redis.call('HMGET', KEYS[1], 'left', 'limit')
if not rec[1] then return {-1, 0} end
return {tonumber(rec[1]), tonumber(rec[2])}
`,
);

/** Reads a receipt. KEYS: receipt. Reply: its JSON, or nil. */
export const receiptGetScript = defineScript('receipt get', `return redis.call('GET', KEYS[1])`);

/** Records a receipt. KEYS: receipt. ARGV: JSON, ttl ms. Reply: 1. */
export const receiptRecordScript = defineScript(
  'receipt record',
  `redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`,
);

/**
 * Lists receipts, for an operator's query. ARGV: key pattern, the most keys to look at. Reply:
 * their JSON. A scan: it reads the whole namespace, so it is not for a hot path.
 */
export const receiptListScript = defineScript(
  'receipt list',
  `
local found, cursor, looked = {}, '0', 0
repeat
  local page = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', 500)
  cursor = page[1]
  for _, key in ipairs(page[2]) do
    looked = looked + 1
    local receipt = redis.call('GET', key)
    if receipt then found[#found + 1] = receipt end
  end
until cursor == '0' or looked >= tonumber(ARGV[2])
return found
`,
);
