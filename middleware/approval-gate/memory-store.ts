/**
 * The approval gate's in-memory store: requests in this process, answered synchronously.
 * @module
 */

import { systemClock, type Clock } from '../../src/clock.js';
import { optionsObject, requireClock, requireInteger } from '../kit.js';
import type { ApprovalAnswer, ApprovalRecord, ApprovalRequest, ApprovalStore } from './store.js';

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

/**
 * An approval store in this process's memory: for one process, and for tests.
 *
 * @example
 * const gate = approvalGate({ registry, store: memoryApprovalStore() });
 */
export function memoryApprovalStore(options?: MemoryApprovalStoreOptions): ApprovalStore {
  const { maxEntries = 10_000, clock = systemClock } = optionsObject('memoryApprovalStore', options);
  requireInteger('maxEntries', maxEntries, 1);
  requireClock(clock, ['now']);
  return new MemoryApprovalStore(maxEntries, clock);
}

class MemoryApprovalStore implements ApprovalStore {
  readonly #byToken = new Map<string, ApprovalRecord>();
  readonly #pendingByCall = new Map<string, string>();

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
    this.#byToken.set(record.token, record);
    this.#pendingByCall.delete(request.callKey);
    this.#pendingByCall.set(request.callKey, record.token);
    if (this.#pendingByCall.size > this.maxEntries)
      this.#pendingByCall.delete(this.#pendingByCall.keys().next().value as string);
    return { record, created: true };
  }

  get(token: string): ApprovalRecord | undefined {
    const record = this.#byToken.get(token);
    if (record === undefined) return undefined;
    if (record.expiresAt > this.clock.now()) return record;
    this.#byToken.delete(token);
    return undefined;
  }

  answer(token: string, answer: ApprovalAnswer): boolean {
    const record = this.get(token);
    if (record === undefined) return false;
    const status = answer.action === 'approve' ? 'approved' : 'denied';
    if (record.status !== 'pending') return record.status === status;
    this.#byToken.set(
      token,
      answer.action === 'approve'
        ? { ...record, status, approvedBy: answer.by }
        : { ...record, status, deniedReason: answer.reason },
    );
    return true;
  }

  #evictOldest(): void {
    const oldest = this.#byToken.keys().next().value;
    if (oldest !== undefined) this.#byToken.delete(oldest);
  }
}
