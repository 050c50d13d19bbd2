/**
 * The approval gate's in-memory store: requests in this process, answered synchronously.
 * @module
 */

import { systemClock, type Clock } from '../../src/clock.js';
import { optionsObject, requireClock, requireInteger, optionKeys } from '../kit.js';
import { listFilterOf, listStatusOf, pageLimitOf } from '../internal-kit.js';
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
} from './store.js';

/** Options for `memoryApprovalStore`. */
export interface MemoryApprovalStoreOptions {
  /**
   * The most requests kept; the oldest goes first beyond it.
   * @default 10_000
   */
  maxEntries?: number;
  /**
   * The time source for expiry.
   * @default systemClock
   */
  clock?: Pick<Clock, 'now'>;
  /**
   * The most audit records kept (one per decision); the oldest goes first beyond it.
   * @default 10_000
   */
  maxAuditEntries?: number;
}

const memoryApprovalStoreOptionKeys = optionKeys<MemoryApprovalStoreOptions>({
  maxEntries: true,
  clock: true,
  maxAuditEntries: true,
});

/**
 * An approval store in this process's memory: for one process, and for tests.
 *
 * @example
 * const gate = approvalGate({ registry, store: memoryApprovalStore() });
 */
export function memoryApprovalStore(options?: MemoryApprovalStoreOptions): ApprovalStore {
  const {
    maxEntries = 10_000,
    clock = systemClock,
    maxAuditEntries = 10_000,
  } = optionsObject('memoryApprovalStore', options, memoryApprovalStoreOptionKeys);
  requireInteger('maxEntries', maxEntries, 1);
  requireInteger('maxAuditEntries', maxAuditEntries, 1);
  requireClock(clock, ['now']);
  return new MemoryApprovalStore(maxEntries, clock, maxAuditEntries);
}

interface Entry {
  record: ApprovalRecord;
  readonly callKey: string;
  /** The claim holding the token's run, and how the run ended once settled. */
  redemption?: {
    readonly claim: string;
    settled?: Exclude<ApprovalRedemption, { state: 'claimed' | 'running' }>;
  };
}

const claimed: ApprovalRedemption = Object.freeze({ state: 'claimed' });
const running: ApprovalRedemption = Object.freeze({ state: 'running' });

// A cursor is the sequence number of the last item a page held, as decimal text.
function cursorOf(cursor: unknown): number {
  if (cursor === undefined) return 0;
  if (typeof cursor !== 'string' || !/^[0-9]{1,15}$/.test(cursor)) {
    throw new TypeError(`cursor must be one a page of this store gave, got ${String(cursor)}`);
  }
  return Number(cursor);
}

class MemoryApprovalStore implements ApprovalStore {
  readonly edits = true;
  readonly #byToken = new Map<string, Entry>();
  // Pending tokens in the order they were opened, each with its sequence number (the cursor).
  readonly #pending = new Map<string, number>();
  #opened = 0;
  readonly #audit: { readonly seq: number; readonly record: ApprovalAuditRecord }[] = [];
  #audited = 0;
  readonly #listeners = new Set<(decided: ApprovalAuditRecord) => void>();
  readonly #pendingByCall = new Map<string, string>();
  // Tokens oldest first, read from #head on: evicting the oldest never walks the deleted ones.
  #order: string[] = [];
  #head = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly clock: Pick<Clock, 'now'>,
    private readonly maxAuditEntries: number,
  ) {}

  open(request: ApprovalRequest): { record: ApprovalRecord; created: boolean } {
    const pendingToken = this.#pendingByCall.get(request.callKey);
    const pending = pendingToken === undefined ? undefined : this.get(pendingToken);
    if (pending?.status === 'pending') return { record: pending, created: false };
    if (this.#byToken.size >= this.maxEntries) this.#evictOldest();
    const now = this.clock.now();
    const record: ApprovalRecord = {
      token: request.token,
      tool: request.tool,
      fingerprint: request.fingerprint,
      key: request.key,
      callId: request.callId,
      reason: request.reason,
      expiresAt: now + request.ttlMs,
      status: 'pending',
      createdAt: now,
      ...(typeof request.tenant === 'string' ? { tenant: request.tenant } : {}),
      ...(typeof request.preview === 'string' ? { preview: request.preview } : {}),
    };
    this.#byToken.set(record.token, { record, callKey: request.callKey });
    this.#opened += 1;
    this.#pending.set(record.token, this.#opened);
    this.#order.push(record.token);
    // Tokens forgotten on expiry stay in the queue; drop them before it outgrows the store.
    if (this.#order.length - this.#head > 2 * this.maxEntries) {
      this.#order = this.#order.slice(this.#head).filter((token) => this.#byToken.has(token));
      this.#head = 0;
    }
    this.#pendingByCall.set(request.callKey, record.token);
    return { record, created: true };
  }

  get(token: string): ApprovalRecord | undefined {
    const entry = this.#byToken.get(token);
    if (entry === undefined) return undefined;
    if (entry.record.expiresAt > this.clock.now()) return entry.record;
    this.#forget(token, entry);
    return undefined;
  }

  answer(token: string, answer: ApprovalAnswer): boolean {
    const record = this.get(token);
    if (record === undefined) return false;
    const status = answer.action === 'approve' ? 'approved' : 'denied';
    const edit = answer.action === 'approve' ? answer.edit : undefined;
    if (record.status !== 'pending') {
      // Sent again, an approval stands only for the same args: an edit is not a plain approval.
      if (record.status !== status) return false;
      return (
        status === 'denied' ||
        record.fingerprint === (edit?.fingerprint ?? record.editedFrom ?? record.fingerprint)
      );
    }
    const at = this.clock.now();
    const channel = answer.channel ?? 'api';
    let decided: ApprovalRecord;
    if (answer.action === 'deny') {
      decided = { ...record, status, deniedReason: answer.reason, channel, decidedAt: at };
    } else if (edit === undefined) {
      decided = { ...record, status, approvedBy: answer.by, channel, decidedAt: at };
    } else {
      decided = {
        ...record,
        status,
        approvedBy: answer.by,
        channel,
        decidedAt: at,
        fingerprint: edit.fingerprint,
        editedFrom: record.fingerprint,
      };
      if (typeof edit.preview === 'string') decided = { ...decided, preview: edit.preview };
      else delete (decided as { preview?: string }).preview;
    }
    (this.#byToken.get(token) as Entry).record = decided;
    this.#pending.delete(token);
    this.#record(auditOf(decided, answer.action === 'deny' ? (answer.by ?? 'a reviewer') : answer.by, at));
    return true;
  }

  list(query: ApprovalListQuery = {}): ApprovalPage {
    listStatusOf(query.status);
    const limit = pageLimitOf(query.limit);
    const after = cursorOf(query.cursor);
    const tool = listFilterOf('tool', query.tool);
    const tenant = listFilterOf('tenant', query.tenant);
    const items: ApprovalRecord[] = [];
    let last = 0;
    for (const [token, seq] of [...this.#pending]) {
      if (seq <= after) continue;
      // Reading it forgets (and audits) an expired one.
      const record = this.get(token);
      if (record?.status !== 'pending') continue;
      if ((tool !== undefined && record.tool !== tool) || (tenant !== undefined && record.tenant !== tenant))
        continue;
      if (items.length === limit) return { items, cursor: String(last) };
      items.push(record);
      last = seq;
    }
    return { items };
  }

  audit(query: ApprovalAuditQuery = {}): ApprovalAuditPage {
    const limit = pageLimitOf(query.limit);
    const after = cursorOf(query.cursor);
    const { token } = query;
    const items: ApprovalAuditRecord[] = [];
    let last = 0;
    for (const { seq, record } of this.#audit) {
      if (seq <= after || (token !== undefined && record.token !== token)) continue;
      if (items.length === limit) return { items, cursor: String(last) };
      items.push(record);
      last = seq;
    }
    return { items };
  }

  subscribe(listener: (decided: ApprovalAuditRecord) => void): () => void {
    if (typeof listener !== 'function') throw new TypeError('listener must be a function');
    // A listener added twice is heard twice, and each unsubscribe removes its own.
    const own = (decided: ApprovalAuditRecord) => listener(decided);
    this.#listeners.add(own);
    return () => {
      this.#listeners.delete(own);
    };
  }

  #record(decided: ApprovalAuditRecord): void {
    this.#audited += 1;
    this.#audit.push({ seq: this.#audited, record: decided });
    if (this.#audit.length > this.maxAuditEntries) this.#audit.shift();
    for (const listener of [...this.#listeners]) {
      try {
        listener(decided);
      } catch {
        // A listener's failure is its own; the decision stands.
      }
    }
  }

  redeem(token: string, claim: string): ApprovalRedemption | undefined {
    const record = this.get(token);
    if (record?.status !== 'approved') return undefined;
    const entry = this.#byToken.get(token) as Entry;
    const { redemption } = entry;
    if (redemption === undefined) {
      entry.redemption = { claim };
      return claimed;
    }
    if (redemption.settled !== undefined) return redemption.settled;
    return redemption.claim === claim ? claimed : running;
  }

  settle(token: string, claim: string, settlement: ApprovalSettlement): void {
    const entry = this.#byToken.get(token);
    const redemption = entry?.redemption;
    if (redemption === undefined || redemption.claim !== claim || redemption.settled !== undefined) return;
    if (settlement.state === 'released') delete (entry as Entry).redemption;
    else redemption.settled = settlement;
  }

  #forget(token: string, entry: Entry, evicted = false): void {
    this.#byToken.delete(token);
    if (this.#pending.delete(token) && !evicted) {
      this.#record({
        ...auditOf(entry.record, 'store', entry.record.expiresAt),
        decision: 'expired',
        channel: 'store',
      });
    }
    if (this.#pendingByCall.get(entry.callKey) === token) this.#pendingByCall.delete(entry.callKey);
  }

  #evictOldest(): void {
    const order = this.#order;
    while (this.#head < order.length) {
      const token = order[this.#head] as string;
      this.#head += 1;
      const entry = this.#byToken.get(token);
      if (entry !== undefined) {
        this.#forget(token, entry, true);
        break;
      }
    }
    if (this.#head * 2 > order.length) {
      this.#order = order.slice(this.#head);
      this.#head = 0;
    }
  }
}

// The audit record of a decided (or expiring) request.
function auditOf(record: ApprovalRecord, by: string, at: number): ApprovalAuditRecord {
  const decision =
    record.status === 'denied' ? 'denied' : record.editedFrom !== undefined ? 'edited' : 'approved';
  return {
    token: record.token,
    tool: record.tool,
    decision,
    by,
    channel: record.channel ?? 'api',
    at,
    fingerprint: record.fingerprint,
    ...(record.editedFrom === undefined ? {} : { editedFrom: record.editedFrom }),
    ...(record.deniedReason === undefined ? {} : { reason: record.deniedReason }),
    ...(record.tenant === undefined ? {} : { tenant: record.tenant }),
  };
}
