/**
 * The approval store on Redis: requests by token, one pending request per call, answered once,
 * expiring on the server's clock.
 * @module
 */

import type {
  ApprovalAnswer,
  ApprovalRecord,
  ApprovalRequest,
  ApprovalStore,
} from '../../middleware/index.js';
import { num, runScript, text } from './call.js';
import { defineScript, type StoreClient } from './client.js';
import { optionKeys } from '../../middleware/index.js';
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
}

const redisApprovalStoreOptionKeys = optionKeys<RedisApprovalStoreOptions>({
  prefix: true,
  storeTimeoutMs: true,
});

const serverTime = `
local clock = redis.call('TIME')
local nowMs = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
`;

// The fields of a record, in the order every reply lists them after its status.
const fields = "'s', 'tool', 'fp', 'key', 'hk', 'cid', 'why', 'exp', 'by', 'dr'";

/**
 * Opens a request. KEYS: the call's key, the new token's record. ARGV: token, tool, fingerprint,
 * key, has key (1/0), call id, reason, ttl ms, the token the call key may replace ('' for none).
 * Reply: {'created', ...record} | {'exists', token}. Sent again, it finds its own record.
 */
const openScript = defineScript(
  'approval open',
  `${serverTime}
local mine = redis.call('HMGET', KEYS[2], ${fields})
if mine[1] then return {'created', unpack(mine)} end
local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[9] then return {'exists', current} end
local exp = nowMs + tonumber(ARGV[8])
redis.call('HSET', KEYS[2], 's', 'P', 'tool', ARGV[2], 'fp', ARGV[3], 'key', ARGV[4], 'hk', ARGV[5],
  'cid', ARGV[6], 'why', ARGV[7], 'exp', exp)
redis.call('PEXPIRE', KEYS[2], ARGV[8])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[8])
return {'created', 'P', ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], tostring(exp), false, false}
`,
);

/** Reads a record. KEYS: the record. Reply: {status, ...} ({false, …} when gone). */
const getScript = defineScript('approval get', `return redis.call('HMGET', KEYS[1], ${fields})`);

/**
 * Answers a request once. KEYS: the record. ARGV: status (A/D), who or why. Reply: 1 when it now
 * stands so (sent again, still 1), 0 when gone or answered the other way.
 */
const answerScript = defineScript(
  'approval answer',
  `
local s = redis.call('HGET', KEYS[1], 's')
if not s then return 0 end
if s == ARGV[1] then return 1 end
if s ~= 'P' then return 0 end
if ARGV[1] == 'A' then redis.call('HSET', KEYS[1], 's', 'A', 'by', ARGV[2])
else redis.call('HSET', KEYS[1], 's', 'D', 'dr', ARGV[2]) end
return 1
`,
);

const statuses = { P: 'pending', A: 'approved', D: 'denied' } as const;

/**
 * Makes an approval store on Redis, shared by every process using the same prefix: a token
 * approved on one worker is redeemed on any. Each change is one Lua script, safe to send again;
 * tokens expire on the server's clock.
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
  const recordKey = (token: string) => `${prefix}:ap:${token}`;
  const get = async (token: string): Promise<ApprovalRecord | undefined> =>
    recordOf(token, await runScript(redis, getScript, [recordKey(token)], [], timeoutMs), 0);

  const openAs = (request: ApprovalRequest, replacing: string) =>
    runScript(
      redis,
      openScript,
      [`${prefix}:ac:${request.callKey}`, recordKey(request.token)],
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
      ],
      timeoutMs,
    );

  return {
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
      const [status, detail] = answer.action === 'approve' ? ['A', answer.by] : ['D', answer.reason];
      return (
        Number(await runScript(redis, answerScript, [recordKey(token)], [status, detail], timeoutMs)) === 1
      );
    },
  };
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
  return record as unknown as ApprovalRecord;
}
