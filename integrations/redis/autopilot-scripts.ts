/**
 * The autopilot store's scripts: a retry budget's ledger (one hash of slice amounts per budget
 * key) and a tool's fleet latency window (one hash of sub-window bucket counts per tool), each
 * one atomic round trip on the server's clock.
 * @module
 */

import { defineScript } from './client.js';

// The server's time in ms, and the ledger's current slice (ARGV[1]: its ttlMs; ten slices).
const sliceNow = `
local clock = redis.call('TIME')
local nowMs = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local ttlMs = tonumber(ARGV[1])
local sliceMs = ttlMs / 10
local current = math.floor(nowMs / sliceMs)
-- The amounts that still count (the ten latest slices); older fields are deleted on the way.
local function liveSum()
  local fields = redis.call('HGETALL', KEYS[1])
  local sum = 0
  local stale = {}
  for i = 1, #fields, 2 do
    local slice = tonumber(fields[i])
    if slice == nil or current - slice >= 10 or slice > current then
      stale[#stale + 1] = fields[i]
    else
      sum = sum + tonumber(fields[i + 1])
    end
  end
  if #stale > 0 then redis.call('HDEL', KEYS[1], unpack(stale)) end
  return sum
end
local function keep()
  redis.call('PEXPIRE', KEYS[1], math.ceil(ttlMs + sliceMs))
end
`;

/**
 * Adds deposits to a ledger. KEYS: ledger hash. ARGV: ttlMs, units. Reply: 1.
 */
export const budgetDepositScript = defineScript(
  'retry budget deposit',
  `${sliceNow}
redis.call('HINCRBY', KEYS[1], current, ARGV[2])
keep()
return 1
`,
);

/**
 * Adds the deposits not sent yet, then takes `units` if the balance covers them; a resend of the
 * same withdrawal (its marker set) answers as the first did and changes nothing. KEYS: ledger
 * hash, withdrawal marker. ARGV: ttlMs, reserve, units, pending deposit units.
 * Reply: {granted 1|0, balance after}.
 */
export const budgetWithdrawScript = defineScript(
  'retry budget withdraw',
  `${sliceNow}
local prior = redis.call('GET', KEYS[2])
if prior then return {tonumber(prior), tonumber(ARGV[2]) + liveSum()} end
local pending = tonumber(ARGV[4])
if pending ~= 0 then redis.call('HINCRBY', KEYS[1], current, pending) end
local units = tonumber(ARGV[3])
local balance = tonumber(ARGV[2]) + liveSum()
local granted = 0
if balance >= units then
  redis.call('HINCRBY', KEYS[1], current, -units)
  balance = balance - units
  granted = 1
end
keep()
redis.call('SET', KEYS[2], granted, 'PX', math.ceil(ttlMs + sliceMs))
return {granted, balance}
`,
);

/** A ledger's balance. KEYS: ledger hash. ARGV: ttlMs, reserve. Reply: the balance in units. */
export const budgetBalanceScript = defineScript(
  'retry budget balance',
  `${sliceNow}
return tonumber(ARGV[2]) + liveSum()
`,
);

/**
 * Adds one process's latency counts to a tool's fleet window and answers the window merged.
 * Fields are `sub|bucket` (`sub|z` for the zeros), sub-windows numbered on the server's clock.
 * KEYS: the tool's hash. ARGV: windowMs, subWindows, zeros, then bucket and count pairs.
 * Reply: {zeros, bucket, count, bucket, count, …} over the live sub-windows.
 */
export const sketchExchangeScript = defineScript(
  'autopilot sketch exchange',
  `
local clock = redis.call('TIME')
local nowMs = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local windowMs = tonumber(ARGV[1])
local subWindows = tonumber(ARGV[2])
local subMs = windowMs / subWindows
local current = math.floor(nowMs / subMs)
local prefix = current .. '|'
if tonumber(ARGV[3]) > 0 then redis.call('HINCRBY', KEYS[1], prefix .. 'z', ARGV[3]) end
for i = 4, #ARGV, 2 do
  redis.call('HINCRBY', KEYS[1], prefix .. ARGV[i], ARGV[i + 1])
end
local fields = redis.call('HGETALL', KEYS[1])
local totals = {}
local order = {}
local zeros = 0
local stale = {}
for i = 1, #fields, 2 do
  local sub, bucket = string.match(fields[i], '^(-?%d+)|(.+)$')
  sub = tonumber(sub)
  if sub == nil or current - sub >= subWindows or sub > current then
    stale[#stale + 1] = fields[i]
  elseif bucket == 'z' then
    zeros = zeros + tonumber(fields[i + 1])
  else
    if totals[bucket] == nil then
      totals[bucket] = 0
      order[#order + 1] = bucket
    end
    totals[bucket] = totals[bucket] + tonumber(fields[i + 1])
  end
end
for i = 1, #stale, 1000 do
  redis.call('HDEL', KEYS[1], unpack(stale, i, math.min(i + 999, #stale)))
end
redis.call('PEXPIRE', KEYS[1], math.ceil(windowMs + subMs))
local reply = {zeros}
for _, bucket in ipairs(order) do
  reply[#reply + 1] = bucket
  reply[#reply + 1] = totals[bucket]
end
return reply
`,
);
