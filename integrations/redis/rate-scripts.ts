/**
 * The rate-limit and windowed-budget scripts: one atomic round trip each, safe to send twice (an
 * attempt id), all time from the server, and a Redis found restarted empty never hands out a
 * fresh burst or window.
 * @module
 */

import { defineScript } from './client.js';

// Server time in ms, and whether Redis came back empty since this process last looked: the
// epoch key is gone, or is not the one the caller knew. Then a marker holds for `ARGV[resetArg]`
// ms, while buckets start in debt and budgets refuse.
const timeAndReset = (resetArg: number) => `
local clock = redis.call('TIME')
local nowMs = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local epoch = redis.call('GET', KEYS[2])
if not epoch then
  -- A new id for each life of Redis, even when the same process creates it again.
  epoch = ARGV[2] .. ':' .. nowMs
  redis.call('SET', KEYS[2], epoch)
  if ARGV[1] ~= '' then redis.call('SET', KEYS[3], '1', 'PX', ARGV[${resetArg}]) end
elseif ARGV[1] ~= '' and ARGV[1] ~= epoch then
  redis.call('SET', KEYS[3], '1', 'PX', ARGV[${resetArg}], 'NX')
end
local resetting = redis.call('EXISTS', KEYS[3]) == 1
`;

/**
 * Reserves tokens. KEYS: bucket hash, epoch, reset marker, the attempt's hash. ARGV: known epoch,
 * fresh epoch id, attempt id, cost, ms per token, burst ms (burst × ms per token), max wait ms,
 * reset debt ms. Reply: {epoch, granted 1|0, wait or retry-after ms, mark}.
 */
export const rateAcquireScript = defineScript(
  'rate acquire',
  `${timeAndReset(8)}
local prior = redis.call('HMGET', KEYS[4], 'at', 'mark')
if prior[1] then return {epoch, 1, math.max(0, tonumber(prior[1]) - nowMs), tonumber(prior[2])} end
local tat = tonumber(redis.call('HGET', KEYS[1], 'tat') or '0')
local shifted = tonumber(redis.call('HGET', KEYS[1], 'shifted') or '0')
if tat == 0 and resetting then
  -- Kept even when this call is refused, so the debt drains instead of starting again each call.
  tat = nowMs + tonumber(ARGV[8])
  redis.call('HSET', KEYS[1], 'tat', tostring(tat), 'shifted', tostring(shifted))
  redis.call('PEXPIRE', KEYS[1], math.ceil(tat - nowMs) + 1000)
end
local paidAt = math.max(tat, nowMs) + tonumber(ARGV[4]) * tonumber(ARGV[5])
local wait = math.max(0, math.ceil(paidAt - tonumber(ARGV[6]) - nowMs))
if wait > tonumber(ARGV[7]) then return {epoch, 0, wait, 0} end
redis.call('HSET', KEYS[1], 'tat', tostring(paidAt), 'shifted', tostring(shifted))
redis.call('PEXPIRE', KEYS[1], math.ceil(paidAt - nowMs) + 1000)
redis.call('HSET', KEYS[4], 'at', tostring(nowMs + wait), 'mark', tostring(shifted))
redis.call('PEXPIRE', KEYS[4], wait + 60000)
return {epoch, 1, wait, shifted, math.floor(paidAt - nowMs)}
`,
);

/**
 * Gives a reservation back, once. KEYS: bucket hash, the attempt's hash. ARGV: cost, ms per
 * token. Reply: 1.
 */
export const rateCancelScript = defineScript(
  'rate cancel',
  `
if redis.call('HSETNX', KEYS[2], 'cancelled', '1') == 0 then return 1 end
redis.call('PEXPIRE', KEYS[2], 60000)
if redis.call('HEXISTS', KEYS[1], 'tat') == 0 then return 1 end
redis.call('HINCRBYFLOAT', KEYS[1], 'tat', -tonumber(ARGV[1]) * tonumber(ARGV[2]))
return 1
`,
);

/**
 * Empties a bucket until retry-after ms from now, once per failed attempt. KEYS: bucket hash,
 * the attempt's hash. ARGV: retry-after ms, burst ms. Reply: 1.
 */
export const rateDebitScript = defineScript(
  'rate debit',
  `
local clock = redis.call('TIME')
local nowMs = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
if redis.call('HSETNX', KEYS[2], 'debited', '1') == 0 then return 1 end
redis.call('PEXPIRE', KEYS[2], 60000)
local tat = tonumber(redis.call('HGET', KEYS[1], 'tat') or '0')
local shifted = tonumber(redis.call('HGET', KEYS[1], 'shifted') or '0')
local paidAt = math.max(tat, nowMs + tonumber(ARGV[2])) + tonumber(ARGV[1])
redis.call('HSET', KEYS[1], 'tat', tostring(paidAt), 'shifted', tostring(shifted + paidAt - math.max(tat, nowMs)))
redis.call('PEXPIRE', KEYS[1], math.ceil(paidAt - nowMs) + 1000)
return 1
`,
);

/** Reads how far debits moved a bucket. KEYS: bucket hash. Reply: shifted ms (0 when gone). */
export const rateShiftScript = defineScript(
  'rate shift',
  `
return tonumber(redis.call('HGET', KEYS[1], 'shifted') or '0')
`,
);

/**
 * Reserves units in the current window, once per attempt. KEYS: the key's ledger hash, epoch,
 * reset marker, the attempt's hash. ARGV: known epoch, fresh epoch id, attempt id, units,
 * limit, window ms. Reply: {epoch, 1 reserved | 0 refused | -1 reset, window or ms left}.
 */
export const windowReserveScript = defineScript(
  'window reserve',
  `${timeAndReset(6)}
local windowMs = tonumber(ARGV[6])
local window = math.floor(nowMs / windowMs)
local left = (window + 1) * windowMs - nowMs
if resetting then return {epoch, -1, math.max(1, redis.call('PTTL', KEYS[3]))} end
if redis.call('HEXISTS', KEYS[4], 'window') == 1 then
  return {epoch, 1, tonumber(redis.call('HGET', KEYS[4], 'window'))}
end
local ledger = redis.call('HMGET', KEYS[1], 'window', 'used')
local used = 0
if ledger[1] and tonumber(ledger[1]) == window then used = tonumber(ledger[2]) end
if used + tonumber(ARGV[4]) > tonumber(ARGV[5]) then return {epoch, 0, left} end
redis.call('HSET', KEYS[1], 'window', window, 'used', tostring(used + tonumber(ARGV[4])))
redis.call('PEXPIRE', KEYS[1], left + windowMs)
redis.call('HSET', KEYS[4], 'window', window)
redis.call('PEXPIRE', KEYS[4], left + windowMs)
return {epoch, 1, window}
`,
);

/**
 * Settles a reservation once. KEYS: the key's ledger hash, the attempt's hash. ARGV: window,
 * delta. Reply: 1.
 */
export const windowSettleScript = defineScript(
  'window settle',
  `
if redis.call('HSETNX', KEYS[2], 'settled', '1') == 0 then return 1 end
local window = redis.call('HGET', KEYS[1], 'window')
if not window or tonumber(window) ~= tonumber(ARGV[1]) then return 1 end
local used = tonumber(redis.call('HINCRBYFLOAT', KEYS[1], 'used', ARGV[2]))
if used < 0 then redis.call('HSET', KEYS[1], 'used', 0) end
return 1
`,
);
