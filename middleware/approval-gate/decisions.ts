/**
 * The reviewer's side of the approval gate: approve (as asked, or with edited args validated and
 * fingerprinted anew), deny, and hear every decision made anywhere.
 * @module
 */

import { DispatchError } from '../../src/errors.js';
import type { DispatchEventDetails } from '../../src/types.js';
import { rejectUnknownKeys } from '../kit.js';
import { describeIssue } from '../internal-kit.js';
import { printOf, type ApprovalLoop, type GatePolicy, type ToolSource } from './gate.js';
import { previewOf } from './preview.js';
import type { ApprovalAuditRecord, ApprovalRecord } from './store.js';

/** Options for `gate.approve`. */
export interface ApproveOptions {
  /**
   * Who approves, as the record and its audit record keep it.
   * @default 'a reviewer'
   */
  by?: string;
  /**
   * Through which channel: `console`, `host`, `mcp`, `api`, or a name of your own (1 to 64 characters).
   * @default 'api'
   */
  channel?: string;
  /**
   * Edit, then approve: these args instead of the ones asked for. They are validated against the
   * tool's input schema (a `schema` envelope is thrown when they fail it) and fingerprinted anew;
   * the token then runs only them, once (`dispatch(name, editedArgs, { approval: token })`), and
   * the original args can no longer run on it. Needs the gate's `registry` and a store whose
   * `edits` is `true` (both built-in stores).
   */
  args?: unknown;
}

/** Options for `gate.deny`. */
export interface DenyOptions {
  /**
   * Who denies.
   * @default 'a reviewer'
   */
  by?: string;
  /**
   * Through which channel.
   * @default 'api'
   */
  channel?: string;
}

/**
 * A decision as `gate.subscribe` delivers it: the store's audit record as the `approval.decided`
 * event (heard outside any dispatch, so without a call's id or attempt).
 */
export type ApprovalDecidedEvent = {
  /** Always `'approval.decided'`. */
  readonly type: 'approval.decided';
} & DispatchEventDetails['approval.decided'];

const approveKeys = ['by', 'channel', 'args'] as const;
const denyKeys = ['by', 'channel'] as const;

/** The reviewer's API over one gate's policy. */
export interface Decisions {
  approve(token: string, options?: ApproveOptions): Promise<boolean>;
  deny(token: string, reason?: string, options?: DenyOptions): Promise<boolean>;
  subscribe(listener: (decided: ApprovalDecidedEvent) => void): () => void;
}

/** Makes the gate's `approve`, `deny` and `subscribe`. */
export function decisionsOf(
  policy: GatePolicy,
  loop: ApprovalLoop,
  registry: ToolSource | undefined,
): Decisions {
  const { store } = policy;
  // Without a store that publishes decisions, this gate's own are heard (in this process).
  const local = new Set<(decided: ApprovalAuditRecord) => void>();
  const heardLocally = async (token: string, answered: boolean) => {
    if (!answered || local.size === 0 || typeof store.subscribe === 'function') return answered;
    const decided = (await store.audit?.({ token }))?.items.at(-1) ?? auditFromRecord(await store.get(token));
    if (decided !== undefined) for (const listener of [...local]) listenSafely(listener, decided);
    return answered;
  };

  const approve = async (token: string, options: ApproveOptions = {}): Promise<boolean> => {
    if (typeof token !== 'string') return false;
    rejectUnknownKeys('approve', options, approveKeys);
    const by = String(options.by ?? 'a reviewer');
    const channel = channelOf(options.channel);
    if (!('args' in options)) {
      return heardLocally(token, await store.answer(token, { action: 'approve', by, channel }));
    }
    if (registry === undefined) throw new TypeError('approve({ args }) needs the gate made with a registry');
    if (store.edits !== true) {
      throw new TypeError(
        'approve({ args }) needs a store that takes edits (edits: true); this one does not',
      );
    }
    const record = await store.get(token);
    if (record === undefined) return false;
    const tool = registry.get(record.tool);
    if (tool === undefined) {
      throw new DispatchError(
        'not_found',
        `The registry has no tool "${record.tool}" to check the edited args against`,
      );
    }
    const parsed = await tool.inputSchema['~standard'].validate(options.args);
    if (parsed.issues !== undefined) {
      throw new DispatchError(
        'schema',
        `Invalid edited args for "${record.tool}": ${parsed.issues.map(describeIssue).join('; ')}`,
      );
    }
    const preview = previewOf(parsed.value, loop.redactorFor(), policy.previewChars);
    const edit = {
      fingerprint: printOf({ tool, args: parsed.value }),
      ...(preview === undefined ? {} : { preview }),
    };
    return heardLocally(token, await store.answer(token, { action: 'approve', by, channel, edit }));
  };

  const deny = async (token: string, reason = 'a reviewer denied it', options: DenyOptions = {}) => {
    if (typeof token !== 'string') return false;
    rejectUnknownKeys('deny', options, denyKeys);
    const by = String(options.by ?? 'a reviewer');
    const channel = channelOf(options.channel);
    // A reviewer's words are stored and shown: redacted like the rest.
    const why = loop.redactorFor().redact(String(reason));
    return heardLocally(token, await store.answer(token, { action: 'deny', reason: why, by, channel }));
  };

  const subscribe = (listener: (decided: ApprovalDecidedEvent) => void): (() => void) => {
    if (typeof listener !== 'function') throw new TypeError('listener must be a function');
    const own = (decided: ApprovalAuditRecord) =>
      listener({ type: 'approval.decided', ...decided } as ApprovalDecidedEvent);
    if (typeof store.subscribe === 'function') return store.subscribe(own);
    local.add(own);
    return () => {
      local.delete(own);
    };
  };
  return { approve, deny, subscribe };
}

function channelOf(channel: unknown): string {
  if (channel === undefined) return 'api';
  if (typeof channel !== 'string' || channel.length === 0 || channel.length > 64) {
    throw new TypeError(`channel must be a string of 1 to 64 characters, got ${String(channel)}`);
  }
  return channel;
}

function listenSafely(listener: (decided: ApprovalAuditRecord) => void, decided: ApprovalAuditRecord): void {
  try {
    listener(decided);
  } catch {
    // A listener's failure is its own; the decision stands.
  }
}

// A store that keeps no audit log: the decision as its record tells it.
function auditFromRecord(record: ApprovalRecord | undefined): ApprovalAuditRecord | undefined {
  if (record === undefined || record.status === 'pending') return undefined;
  const denied = record.status === 'denied';
  return {
    token: record.token,
    tool: record.tool,
    decision: denied ? 'denied' : record.editedFrom === undefined ? 'approved' : 'edited',
    by: denied ? 'a reviewer' : (record.approvedBy ?? 'a reviewer'),
    channel: record.channel ?? 'api',
    at: record.decidedAt ?? Date.now(),
    fingerprint: record.fingerprint,
    ...(denied && record.deniedReason !== undefined ? { reason: record.deniedReason } : {}),
  };
}
