/**
 * The approval store on Redis: requests by token, one pending request per call, answered once,
 * expiring on the server's clock.
 * @module
 */

import type {
  ApprovalAnswer,
  ApprovalAuditPage,
  ApprovalAuditQuery,
  ApprovalAuditRecord,
  ApprovalListQuery,
  ApprovalPage,
  ApprovalRecord,
  ApprovalRedemption,
  ApprovalRequest,
  ApprovalSettlement,
  ApprovalStore,
} from '../../middleware/index.js';
import { num, runScript, text } from './call.js';
import { defineScript, type StoreClient } from './client.js';
import { hubFor } from './events.js';
import { optionKeys } from '../../middleware/index.js';
import { listFilterOf, listStatusOf, pageLimitOf } from '../../middleware/internal-kit.js';
import { requireClient, requireMs, requireOptions, requirePrefix } from './options.js';

/** Options for `redisApprovalStore`. */
export interface RedisApprovalStoreOptions {
  /**
   * The key namespace.
   * @default 'td'
   */
  prefix?: string;
  /**
   * Each store call's own deadline, in milliseconds.
   * @default 1_000
   */
  storeTimeoutMs?: number;
  /**
   * The largest serialised result of an approved token's run that is kept, in bytes. A larger
   * one (or one that is not JSON) is returned to its own caller but kept as "ran, unshareable":
   * later deliveries fail with `idempotency_result_unavailable` and never run it again.
   * @default 1_048_576
   */
  maxResultBytes?: number;
  /**
   * The most records the fleet-wide audit log (a stream) keeps, roughly; the oldest go first.
   * @default 100_000
   */
  auditMaxEntries?: number;
  /**
   * How long one request's audit record stays readable by `audit({ token })`, in milliseconds.
   * @default 604_800_000 (7 days)
   */
  auditTtlMs?: number;
}

const redisApprovalStoreOptionKeys = optionKeys<RedisApprovalStoreOptions>({
  prefix: true,
  storeTimeoutMs: true,
  maxResultBytes: true,
  auditMaxEntries: true,
  auditTtlMs: true,
});

// Expired requests swept from the pending index (and audited) per open or list: bounded work.
const sweepBatch = 100;

// The most entries of the pending index one list call looks at: a filter that matches few of very
// many keeps Redis busy for tens of milliseconds at most, and the page then ends early, with a
// cursor after the last entry looked at.
const listScanBudget = 20_000;

const serverTime = `
local clock = redis.call('TIME')
local nowMs = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
`;

// The fields of a record, in the order every reply lists them after its status.
const fields =
  "'s', 'tool', 'fp', 'key', 'hk', 'cid', 'why', 'exp', 'by', 'dr', 'tn', 'pv', 'ca', 'ef', 'ch', 'da'";
const fieldCount = 16;

// One decision written: to the audit stream, to the request's own audit key, and published to
// every console. ARGV of the scripts that call it: the stream's MAXLEN, the audit key's ttl ms,
// the channel, the key prefix (for per-token keys the sweep finds).
const decided = `
local function decided(a, streamKey, maxLen, auditTtl, channel, prefix)
  local json = cjson.encode(a)
  redis.call('XADD', streamKey, 'MAXLEN', '~', maxLen, '*', 'r', json)
  redis.call('SET', prefix .. ':ap:h:' .. a.token, json, 'PX', auditTtl)
  redis.call('PUBLISH', channel, json)
end
`;

// Drops up to ${sweepBatch} expired requests from the pending index, each audited as expired.
// KEYS 1..4 of the scripts that call it: pending, expiries, pending infos, audit stream.
const sweep = `
local function sweep(nowMs, maxLen, auditTtl, channel, prefix)
  local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', nowMs, 'WITHSCORES', 'LIMIT', 0, ${sweepBatch})
  for i = 1, #gone, 2 do
    local t = gone[i]
    redis.call('ZREM', KEYS[1], t)
    redis.call('ZREM', KEYS[2], t)
    local info = redis.call('HGET', KEYS[3], t)
    redis.call('HDEL', KEYS[3], t)
    if info then
      local meta = cjson.decode(info)
      local a = { token = t, tool = meta.tool, decision = 'expired', by = 'store', channel = 'store',
        at = tonumber(gone[i + 1]), fingerprint = meta.fp }
      if meta.tn then a.tenant = meta.tn end
      decided(a, KEYS[4], maxLen, auditTtl, channel, prefix)
    end
  end
end
`;

/**
 * Opens a request. KEYS: pending, expiries, pending infos, audit stream, the call's key, the new
 * token's record. ARGV: token, tool, fingerprint, key, has key (1/0), call id, reason, ttl ms, the
 * token the call key may replace ('' for none), tenant ('' for none), preview ('' for none), has
 * preview (1/0), then the audit's MAXLEN, ttl, channel and prefix. Reply: {'created', ...record} |
 * {'exists', token}. Sent again, it finds its own record.
 */
const openScript = defineScript(
  'approval open',
  `${serverTime}${decided}${sweep}
sweep(nowMs, ARGV[13], ARGV[14], ARGV[15], ARGV[16])
local mine = redis.call('HMGET', KEYS[6], ${fields})
if mine[1] then return {'created', unpack(mine)} end
local current = redis.call('GET', KEYS[5])
if current and current ~= ARGV[9] then return {'exists', current} end
local exp = nowMs + tonumber(ARGV[8])
redis.call('HSET', KEYS[6], 's', 'P', 'tool', ARGV[2], 'fp', ARGV[3], 'key', ARGV[4], 'hk', ARGV[5],
  'cid', ARGV[6], 'why', ARGV[7], 'exp', exp, 'ca', nowMs)
local info = { tool = ARGV[2], fp = ARGV[3] }
if ARGV[10] ~= '' then
  redis.call('HSET', KEYS[6], 'tn', ARGV[10])
  info.tn = ARGV[10]
end
if ARGV[12] == '1' then redis.call('HSET', KEYS[6], 'pv', ARGV[11]) end
redis.call('PEXPIRE', KEYS[6], ARGV[8])
redis.call('SET', KEYS[5], ARGV[1], 'PX', ARGV[8])
redis.call('ZADD', KEYS[1], nowMs, ARGV[1])
redis.call('ZADD', KEYS[2], exp, ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], cjson.encode(info))
return {'created', unpack(redis.call('HMGET', KEYS[6], ${fields}))}
`,
);

/** Reads a record. KEYS: the record. Reply: {status, ...} ({false, …} when gone). */
const getScript = defineScript('approval get', `return redis.call('HMGET', KEYS[1], ${fields})`);

/**
 * Answers a request once, and audits and publishes the decision in the same step. KEYS: pending,
 * expiries, pending infos, audit stream, the record. ARGV: status (A/D), who approved or why
 * denied, who, channel, the edited fingerprint ('' for none), its preview, has preview (1/0), the
 * token, then the audit's MAXLEN, ttl, channel and prefix. Reply: 1 when it now stands so (sent
 * again, still 1: an approval only for the same args), 0 when gone or answered otherwise.
 */
const answerScript = defineScript(
  'approval answer',
  `${serverTime}${decided}
local s = redis.call('HGET', KEYS[5], 's')
if not s then return 0 end
if s ~= 'P' then
  if s ~= ARGV[1] then return 0 end
  if s == 'D' then return 1 end
  local current = redis.call('HMGET', KEYS[5], 'fp', 'ef')
  local target = ARGV[5]
  if target == '' then target = current[2] or current[1] end
  if current[1] == target then return 1 end
  return 0
end
local info = redis.call('HMGET', KEYS[5], 'tool', 'fp', 'tn')
local a = { token = ARGV[8], tool = info[1], by = ARGV[3], channel = ARGV[4], at = nowMs,
  fingerprint = info[2] }
if info[3] then a.tenant = info[3] end
if ARGV[1] == 'D' then
  redis.call('HSET', KEYS[5], 's', 'D', 'dr', ARGV[2], 'ch', ARGV[4], 'da', nowMs)
  a.decision = 'denied'
  a.reason = ARGV[2]
elseif ARGV[5] == '' then
  redis.call('HSET', KEYS[5], 's', 'A', 'by', ARGV[2], 'ch', ARGV[4], 'da', nowMs)
  a.decision = 'approved'
else
  redis.call('HSET', KEYS[5], 's', 'A', 'by', ARGV[2], 'ch', ARGV[4], 'da', nowMs, 'fp', ARGV[5],
    'ef', info[2])
  if ARGV[7] == '1' then redis.call('HSET', KEYS[5], 'pv', ARGV[6]) else redis.call('HDEL', KEYS[5], 'pv') end
  a.decision = 'edited'
  a.fingerprint = ARGV[5]
  a.editedFrom = info[2]
end
redis.call('ZREM', KEYS[1], ARGV[8])
redis.call('ZREM', KEYS[2], ARGV[8])
redis.call('HDEL', KEYS[3], ARGV[8])
decided(a, KEYS[4], ARGV[9], ARGV[10], ARGV[11], ARGV[12])
return 1
`,
);

/**
 * A page of pending requests, oldest first, after sweeping expired ones, keeping only those of
 * the tool and tenant asked for, and looking at no more than `listScanBudget` of the index's
 * entries. KEYS: pending, expiries, pending infos, audit stream. ARGV: the audit's MAXLEN, ttl,
 * channel and prefix, then the cursor's creation time and token ('' for the first page), the
 * limit, the tool and whether to keep only it (1/0), the tenant and the same. Reply: {more (1/0),
 * the next cursor's creation time and token ('' when none), token, ...record, token, ...record, …}.
 */
const listScript = defineScript(
  'approval list',
  `${serverTime}${decided}${sweep}
sweep(nowMs, ARGV[1], ARGV[2], ARGV[3], ARGV[4])
local limit = tonumber(ARGV[7])
local afterTime = tonumber(ARGV[5])
local afterToken = ARGV[6]
local tool, byTool = ARGV[8], ARGV[9] == '1'
local tenant, byTenant = ARGV[10], ARGV[11] == '1'
local filtering = byTool or byTenant
-- Walked by rank (stable within the script): each read costs its length, not its offset.
local rank = 0
if afterToken ~= '' then rank = redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. ARGV[5]) end
local step = limit + 1
if filtering then step = 512 end
local out = {0, '', ''}
local taken = 0
local budget = ${listScanBudget}
-- Where the next page starts: after the last request taken, or the last entry looked at.
local takenScore, takenToken = '', ''
local seenScore, seenToken = ARGV[5], afterToken
while true do
  local batch = redis.call('ZRANGE', KEYS[1], rank, rank + step - 1, 'WITHSCORES')
  if #batch == 0 then return out end
  for i = 1, #batch, 2 do
    local t = batch[i]
    if budget == 0 then
      -- Looked at enough for one call: the page ends early and goes on after the last looked at.
      out[1] = 1
      out[2] = seenScore
      out[3] = seenToken
      return out
    end
    budget = budget - 1
    -- Ties on the cursor's creation time are ordered by token: skip those up to the cursor's.
    if afterToken == '' or tonumber(batch[i + 1]) > afterTime or t > afterToken then
      local key = ARGV[4] .. ':ap:' .. t
      local keep = true
      if filtering then
        -- Three fields decide; the whole record (its preview too) is read for a match only.
        local head = redis.call('HMGET', key, 's', 'tool', 'tn')
        keep = head[1] == 'P' and (not byTool or head[2] == tool) and (not byTenant or head[3] == tenant)
      end
      if keep then
        local r = redis.call('HMGET', key, ${fields})
        if r[1] == 'P' then
          if taken == limit then
            out[1] = 1
            out[2] = takenScore
            out[3] = takenToken
            return out
          end
          out[#out + 1] = t
          for j = 1, ${fieldCount} do out[#out + 1] = r[j] end
          taken = taken + 1
          takenScore, takenToken = batch[i + 1], t
        end
      end
      seenScore, seenToken = batch[i + 1], t
    end
  end
  rank = rank + #batch / 2
end
`,
);

/**
 * Claims an approved token's run. KEYS: the record. ARGV: the claim. Reply: {'gone'} when unknown,
 * expired or not approved; {'claimed'} for the holder (sent again, still); {'running'} for others
 * while it runs; else {state, value} of the settled run (S result, U reason, I window).
 */
const redeemScript = defineScript(
  'approval redeem',
  `
if redis.call('HGET', KEYS[1], 's') ~= 'A' then return {'gone'} end
local run = redis.call('HMGET', KEYS[1], 'rc', 'rs', 'rv')
if not run[1] then
  redis.call('HSET', KEYS[1], 'rc', ARGV[1], 'rs', 'R')
  return {'claimed'}
end
if run[2] == 'R' then
  if run[1] == ARGV[1] then return {'claimed'} end
  return {'running'}
end
return {run[2], run[3]}
`,
);

/**
 * Settles the run a claim holds. KEYS: the record. ARGV: the claim, S/U/I (or X to release),
 * the value. Reply: 1 when settled, 0 when the claim does not hold a running run (sent again).
 */
const settleScript = defineScript(
  'approval settle',
  `
local run = redis.call('HMGET', KEYS[1], 'rc', 'rs')
if run[1] ~= ARGV[1] or run[2] ~= 'R' then return 0 end
if ARGV[2] == 'X' then
  redis.call('HDEL', KEYS[1], 'rc', 'rs', 'rv')
else
  redis.call('HSET', KEYS[1], 'rs', ARGV[2], 'rv', ARGV[3])
end
return 1
`,
);

const statuses = { P: 'pending', A: 'approved', D: 'denied' } as const;
const claimed: ApprovalRedemption = Object.freeze({ state: 'claimed' });
const running: ApprovalRedemption = Object.freeze({ state: 'running' });

/**
 * Makes an approval store on Redis, shared by every process using the same prefix: a token
 * approved on one worker is redeemed on any, and its one run is claimed and recorded here, so it
 * runs once across the fleet. Each change is one Lua script, safe to send again; tokens expire
 * on the server's clock.
 *
 * @example
 * const gate = approvalGate({ registry, store: redisApprovalStore(redis, { prefix: 'billing' }) });
 */
export function redisApprovalStore(
  redis: StoreClient,
  options: RedisApprovalStoreOptions = {},
): ApprovalStore {
  requireClient(redis, 'redisApprovalStore');
  requireOptions(options, 'redisApprovalStore', redisApprovalStoreOptionKeys);
  const prefix = requirePrefix(options.prefix ?? 'td');
  const timeoutMs = requireMs('storeTimeoutMs', options.storeTimeoutMs ?? 1_000);
  const maxResultBytes = requireMs('maxResultBytes', options.maxResultBytes ?? 1_048_576);
  const auditMaxEntries = requireMs('auditMaxEntries', options.auditMaxEntries ?? 100_000);
  const auditTtlMs = requireMs('auditTtlMs', options.auditTtlMs ?? 604_800_000);
  const recordKey = (token: string) => `${prefix}:ap:${token}`;
  const channel = `${prefix}:ap:decided`;
  // The pending index, the expiries, what an expiry's audit record needs, and the audit stream.
  const indexKeys = [
    `${prefix}:ap:pending`,
    `${prefix}:ap:expiries`,
    `${prefix}:ap:pinfo`,
    `${prefix}:ap:audit`,
  ];
  const auditArgs = [String(auditMaxEntries), String(auditTtlMs), channel, prefix];
  const get = async (token: string): Promise<ApprovalRecord | undefined> =>
    recordOf(token, await runScript(redis, getScript, [recordKey(token)], [], timeoutMs), 0);

  const openAs = (request: ApprovalRequest, replacing: string) =>
    runScript(
      redis,
      openScript,
      [...indexKeys, `${prefix}:ac:${request.callKey}`, recordKey(request.token)],
      [
        request.token,
        request.tool,
        request.fingerprint,
        request.key ?? '',
        request.key === null ? '0' : '1',
        request.callId,
        request.reason,
        String(Math.max(1, Math.round(request.ttlMs))),
        replacing,
        typeof request.tenant === 'string' ? request.tenant : '',
        typeof request.preview === 'string' ? request.preview : '',
        typeof request.preview === 'string' ? '1' : '0',
        ...auditArgs,
      ],
      timeoutMs,
    );

  const store: ApprovalStore = {
    edits: true,
    async open(request) {
      let replacing = '';
      // At most twice: a call's earlier request that is answered or gone is replaced, atomically.
      for (let round = 0; round < 3; round++) {
        const reply = await openAs(request, replacing);
        if (text(reply, 0) === 'created') {
          const record = recordOf(request.token, reply, 1);
          if (record !== undefined) return { record, created: true };
        }
        const existing = text(reply, 1);
        const pending = await get(existing);
        if (pending?.status === 'pending') return { record: pending, created: false };
        replacing = existing;
      }
      throw new Error('the call key kept changing while a request was opened');
    },
    get,
    async answer(token: string, answer: ApprovalAnswer) {
      if (typeof token !== 'string') return false;
      const edit = answer.action === 'approve' ? answer.edit : undefined;
      const args = [
        answer.action === 'approve' ? 'A' : 'D',
        answer.action === 'approve' ? answer.by : answer.reason,
        answer.action === 'approve' ? answer.by : (answer.by ?? 'a reviewer'),
        answer.channel ?? 'api',
        edit?.fingerprint ?? '',
        edit?.preview ?? '',
        typeof edit?.preview === 'string' ? '1' : '0',
        token,
        ...auditArgs,
      ];
      return (
        Number(await runScript(redis, answerScript, [...indexKeys, recordKey(token)], args, timeoutMs)) === 1
      );
    },
    async redeem(token: string, claim: string) {
      const reply = await runScript(redis, redeemScript, [recordKey(token)], [claim], timeoutMs);
      return redemptionOf(text(reply, 0), text(reply, 1));
    },
    async settle(token: string, claim: string, settlement: ApprovalSettlement) {
      const [state, value] = settled(settlement, maxResultBytes);
      await runScript(redis, settleScript, [recordKey(token)], [claim, state, value], timeoutMs);
    },
    async list(query: ApprovalListQuery = {}): Promise<ApprovalPage> {
      listStatusOf(query.status);
      const limit = pageLimitOf(query.limit);
      const [afterTime, afterToken] = listCursorOf(query.cursor);
      const tool = listFilterOf('tool', query.tool);
      const tenant = listFilterOf('tenant', query.tenant);
      const reply = (await runScript(
        redis,
        listScript,
        indexKeys,
        [
          ...auditArgs,
          afterTime,
          afterToken,
          String(limit),
          tool ?? '',
          tool === undefined ? '0' : '1',
          tenant ?? '',
          tenant === undefined ? '0' : '1',
        ],
        timeoutMs,
      )) as unknown[];
      const items: ApprovalRecord[] = [];
      for (let at = 3; at < reply.length; at += fieldCount + 1) {
        const record = recordOf(text(reply, at), reply, at + 1);
        if (record !== undefined) items.push(record);
      }
      // The index's own score and token, so a record kept before `createdAt` was pages on too.
      return num(reply, 0) === 1 ? { items, cursor: `${text(reply, 1)}:${text(reply, 2)}` } : { items };
    },
    async audit(query: ApprovalAuditQuery = {}): Promise<ApprovalAuditPage> {
      const limit = pageLimitOf(query.limit);
      const { token, cursor } = query;
      if (token !== undefined) {
        if (typeof token !== 'string') throw new TypeError(`token must be a string, got ${String(token)}`);
        const reply = await runScript(redis, auditOneScript, [`${prefix}:ap:h:${token}`], [], timeoutMs);
        const one = auditRecordOf([reply]);
        return { items: one === undefined ? [] : [one] };
      }
      if (cursor !== undefined && (typeof cursor !== 'string' || !/^[0-9]{1,20}-[0-9]{1,20}$/.test(cursor))) {
        throw new TypeError(`cursor must be one a page of this store gave, got ${String(cursor)}`);
      }
      const reply = (await runScript(
        redis,
        auditPageScript,
        [indexKeys[3] as string],
        [cursor === undefined ? '-' : `(${cursor}`, String(limit + 1)],
        timeoutMs,
      )) as unknown[];
      const items: ApprovalAuditRecord[] = [];
      let lastId = '';
      for (let at = 0; at < reply.length && items.length < limit; at += 2) {
        const record = auditRecordOf([reply[at + 1]]);
        if (record !== undefined) items.push(record);
        lastId = text(reply, at);
      }
      return reply.length / 2 > limit ? { items, cursor: lastId } : { items };
    },
  };
  if (redis.subscribe !== undefined) {
    const hub = hubFor(redis, channel);
    store.subscribe = (listener) => {
      if (typeof listener !== 'function') throw new TypeError('listener must be a function');
      return hub.listen(
        (message) => {
          const decided = auditRecordOf([message]);
          if (decided === undefined) return;
          try {
            listener(decided);
          } catch {
            // A listener's failure is its own; the decision stands.
          }
        },
        () => {},
      );
    };
  }
  return store;
}

/** One request's audit record. KEYS: its audit key. Reply: its JSON, or nil. */
const auditOneScript = defineScript('approval audit one', `return redis.call('GET', KEYS[1])`);

/**
 * A page of the audit stream. KEYS: the stream. ARGV: the start ('-', or '(' and the last id
 * read), the count. Reply: {id, json, id, json, …}.
 */
const auditPageScript = defineScript(
  'approval audit page',
  `
local entries = redis.call('XRANGE', KEYS[1], ARGV[1], '+', 'COUNT', ARGV[2])
local out = {}
for _, entry in ipairs(entries) do
  out[#out + 1] = entry[1]
  out[#out + 1] = entry[2][2]
end
return out
`,
);

// A list cursor: the creation time and token of the last request a page held.
function listCursorOf(cursor: unknown): [string, string] {
  if (cursor === undefined) return ['', ''];
  const parts = typeof cursor === 'string' ? /^([0-9]{1,16}):(.{1,512})$/s.exec(cursor) : null;
  if (parts === null)
    throw new TypeError(`cursor must be one a page of this store gave, got ${String(cursor)}`);
  return [parts[1] as string, parts[2] as string];
}

// An audit record as JSON text (from the stream, a token's key or the channel), read back; one
// this version cannot read is skipped.
function auditRecordOf(reply: unknown): ApprovalAuditRecord | undefined {
  const json = text(reply, 0);
  if (json === '') return undefined;
  try {
    const record = JSON.parse(json) as ApprovalAuditRecord;
    return typeof record?.token === 'string' && typeof record.decision === 'string' ? record : undefined;
  } catch {
    return undefined;
  }
}

// A settlement as the record keeps it: S and the result ('u', or 'j' and its JSON), U and why it
// could not be kept, I and the window, or X to release the run.
function settled(settlement: ApprovalSettlement, maxResultBytes: number): [string, string] {
  if (settlement.state === 'released') return ['X', ''];
  if (settlement.state === 'in_doubt') return ['I', settlement.window];
  const { result } = settlement;
  if (result === undefined) return ['S', 'u'];
  let json: string | undefined;
  try {
    json = JSON.stringify(result) as string | undefined;
  } catch (error) {
    return ['U', `not serialisable (${(error as Error)?.message ?? String(error)})`];
  }
  if (json === undefined) return ['U', `a ${typeof result} is not JSON`];
  if (json.length > maxResultBytes / 3 && Buffer.byteLength(json) > maxResultBytes) {
    return ['U', `over maxResultBytes (${maxResultBytes})`];
  }
  return ['S', `j${json}`];
}

function redemptionOf(state: string, value: string): ApprovalRedemption | undefined {
  switch (state) {
    case 'claimed':
      return claimed;
    case 'running':
      return running;
    case 'S':
      if (value === 'u') return { state: 'succeeded', result: undefined };
      if (!value.startsWith('j'))
        return { state: 'unshareable', reason: 'kept in a form this process cannot read' };
      try {
        return { state: 'succeeded', result: JSON.parse(value.slice(1)) };
      } catch (error) {
        return { state: 'unshareable', reason: `unreadable (${(error as Error)?.message ?? String(error)})` };
      }
    case 'U':
      return { state: 'unshareable', reason: value };
    case 'I':
      return {
        state: 'in_doubt',
        window: value as Extract<ApprovalRedemption, { state: 'in_doubt' }>['window'],
      };
    default:
      return undefined;
  }
}

function recordOf(token: string, reply: unknown, at: number): ApprovalRecord | undefined {
  const status = statuses[text(reply, at) as keyof typeof statuses];
  if (status === undefined) return undefined;
  const record: Record<string, unknown> = {
    token,
    tool: text(reply, at + 1),
    fingerprint: text(reply, at + 2),
    key: text(reply, at + 4) === '1' ? text(reply, at + 3) : null,
    callId: text(reply, at + 5),
    reason: text(reply, at + 6),
    expiresAt: num(reply, at + 7),
    status,
  };
  if (status === 'approved') record.approvedBy = text(reply, at + 8);
  if (status === 'denied') record.deniedReason = text(reply, at + 9);
  // Kept since the console's fields arrived; a record stored before has none of them.
  const optional: [string, number, 'text' | 'number'][] = [
    ['tenant', 10, 'text'],
    ['preview', 11, 'text'],
    ['createdAt', 12, 'number'],
    ['editedFrom', 13, 'text'],
    ['channel', 14, 'text'],
    ['decidedAt', 15, 'number'],
  ];
  for (const [name, offset, kind] of optional) {
    const item = (reply as unknown[])[at + offset];
    if (item === null || item === undefined || item === false) continue;
    record[name] = kind === 'number' ? Number(item) : String(item);
  }
  return record as unknown as ApprovalRecord;
}
