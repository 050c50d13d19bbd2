/**
 * The approval gate's in-memory store: requests in this process, answered synchronously.
 * @module
 */

import { systemClock, type Clock } from '../../src/clock.js';
import { optionsObject, requireClock, requireInteger, optionKeys } from '../kit.js';
import type {
  ApprovalAnswer,
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
}

const memoryApprovalStoreOptionKeys = optionKeys<MemoryApprovalStoreOptions>({
  maxEntries: true,
  clock: true,
});

/**
 * An approval store in this process's memory: for one process, and for tests.
 *
 * @example
 * const gate = approvalGate({ registry, store: memoryApprovalStore() });
 */
export function memoryApprovalStore(options?: MemoryApprovalStoreOptions): ApprovalStore {
  const { maxEntries = 10_000, clock = systemClock } = optionsObject(
    'memoryApprovalStore',
    options,
    memoryApprovalStoreOptionKeys,
  );
  requireInteger('maxEntries', maxEntries, 1);
  requireClock(clock, ['now']);
  return new MemoryApprovalStore(maxEntries, clock);
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

class MemoryApprovalStore implements ApprovalStore {
  readonly #byToken = new Map<string, Entry>();
  readonly #pendingByCall = new Map<string, string>();
  // Tokens oldest first, read from #head on: evicting the oldest never walks the deleted ones.
  #order: string[] = [];
  #head = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly clock: Pick<Clock, 'now'>,
  ) {}

  open(request: ApprovalRequest): { record: ApprovalRecord; created: boolean } {
    const pendingToken = this.#pendingByCall.get(request.callKey);
    const pending = pendingToken === undefined ? undefined : this.get(pendingToken);
    if (pending?.status === 'pending') return { record: pending, created: false };
    if (this.#byToken.size >= this.maxEntries) this.#evictOldest();
    const record: ApprovalRecord = {
      token: request.token,
      tool: request.tool,
      fingerprint: request.fingerprint,
      key: request.key,
      callId: request.callId,
      reason: request.reason,
      expiresAt: this.clock.now() + request.ttlMs,
      status: 'pending',
    };
    this.#byToken.set(record.token, { record, callKey: request.callKey });
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
    if (record.status !== 'pending') return record.status === status;
    (this.#byToken.get(token) as Entry).record =
      answer.action === 'approve'
        ? { ...record, status, approvedBy: answer.by }
        : { ...record, status, deniedReason: answer.reason };
    return true;
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

  #forget(token: string, entry: Entry): void {
    this.#byToken.delete(token);
    if (this.#pendingByCall.get(entry.callKey) === token) this.#pendingByCall.delete(entry.callKey);
  }

  #evictOldest(): void {
    const order = this.#order;
    while (this.#head < order.length) {
      const token = order[this.#head] as string;
      this.#head += 1;
      const entry = this.#byToken.get(token);
      if (entry !== undefined) {
        this.#forget(token, entry);
        break;
      }
    }
    if (this.#head * 2 > order.length) {
      this.#order = order.slice(this.#head);
      this.#head = 0;
    }
  }
}
