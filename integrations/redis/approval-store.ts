/**
 * The approval store on Redis: requests by token, one pending request per call, answered once,
 * expiring on the server's clock.
 * @module
 */

import type {
  ApprovalAnswer,
  ApprovalRecord,
  ApprovalRedemption,
  ApprovalRequest,
  ApprovalSettlement,
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
  /**
   * The largest serialised result of an approved token's run that is kept, in bytes. A larger
   * one (or one that is not JSON) is returned to its own caller but kept as "ran, unshareable":
   * later deliveries fail with `idempotency_result_unavailable` and never run it again.
   * @default 1_048_576
   */
  maxResultBytes?: number;
}

const redisApprovalStoreOptionKeys = optionKeys<RedisApprovalStoreOptions>({
  prefix: true,
  storeTimeoutMs: true,
  maxResultBytes: true,
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
    async redeem(token: string, claim: string) {
      const reply = await runScript(redis, redeemScript, [recordKey(token)], [claim], timeoutMs);
      return redemptionOf(text(reply, 0), text(reply, 1));
    },
    async settle(token: string, claim: string, settlement: ApprovalSettlement) {
      const [state, value] = settled(settlement, maxResultBytes);
      await runScript(redis, settleScript, [recordKey(token)], [claim, state, value], timeoutMs);
    },
  };
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
  return record as unknown as ApprovalRecord;
}
