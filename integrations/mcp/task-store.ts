/**
 * Where MCP Tasks (the `io.modelcontextprotocol/tasks` extension) are kept between the call that
 * creates one and the polls that read it: the store seam and its in-process default.
 * @module
 */

import type { CallToolResult } from '@modelcontextprotocol/server';

/** A task's state, as `tasks/get` reports it. */
export type McpTaskStatus = 'working' | 'completed' | 'failed' | 'cancelled';

/** One task as stored: the wire fields of the 2026-07-28 Tasks extension. */
export interface McpTaskRecord {
  /** Bound to the call's idempotency key: the same key gives the same id. */
  taskId: string;
  /** Where it is. */
  status: McpTaskStatus;
  /** ISO time it was created. */
  createdAt: string;
  /** ISO time its status last changed. */
  lastUpdatedAt: string;
  /** How long it is kept after creation, in milliseconds. */
  ttlMs: number;
  /** How often a client should poll, in milliseconds. */
  pollIntervalMs: number;
  /** The result of a `completed` task (a tool error is `completed` with `isError`). */
  result?: CallToolResult;
  /** The JSON-RPC error of a `failed` task. */
  error?: {
    /** The JSON-RPC error code. */
    code: number;
    /** The error message, as the client sees it. */
    message: string;
    /** The error's data: our envelope (`kind`, `retryable`, …) for a dispatcher failure. */
    data?: unknown;
  };
  /**
   * A digest of the call's arguments, kept (never sent) so that the same key with other
   * arguments is refused as `idempotency_conflict` instead of getting this task.
   */
  argsDigest?: string;
}

/** What `McpTaskStore.create` answers: whether this call created the task, and the task. */
export interface McpTaskCreation {
  /** `true` for the one create that stored the task; `false` when it was known already. */
  created: boolean;
  /** The task as stored. */
  record: McpTaskRecord;
}

/** Keeps task records; every process serving the same clients must share one. */
export interface McpTaskStore {
  /**
   * Stores `record` unless its `taskId` is known (atomically: of two creates of one id, one
   * gets `created: true`); resolves to the record now stored.
   */
  create(record: McpTaskRecord): McpTaskCreation | Promise<McpTaskCreation>;
  /** The record of `taskId`, or `undefined` when unknown or expired. */
  get(taskId: string): McpTaskRecord | undefined | Promise<McpTaskRecord | undefined>;
  /** Moves a `working` task to its final state; a task already final stays as it is. */
  settle(taskId: string, final: McpTaskRecord): void | Promise<void>;
}

/**
 * A task store in this process's memory: tasks live until their `ttlMs` ends, and only this
 * process sees them (use a shared store for a fleet).
 *
 * @param now - the clock, for tests.
 * @example
 * createMcpServerFactory({ registry, dispatcher, info, tasks: { store: memoryTaskStore() } });
 */
export function memoryTaskStore(now: () => number = Date.now): McpTaskStore {
  const records = new Map<string, { record: McpTaskRecord; expiresAt: number }>();
  const live = (taskId: string) => {
    const entry = records.get(taskId);
    if (entry === undefined) return undefined;
    if (entry.expiresAt > now()) return entry;
    records.delete(taskId);
    return undefined;
  };
  const sweep = () => {
    for (const taskId of records.keys()) live(taskId);
  };
  return {
    create(record) {
      const known = live(record.taskId);
      if (known !== undefined) return { created: false, record: known.record };
      // Expired tasks are dropped as new ones come, so the map never outgrows the live ones much.
      if (records.size > 0 && records.size % 1024 === 0) sweep();
      records.set(record.taskId, { record, expiresAt: now() + record.ttlMs });
      return { created: true, record };
    },
    get: (taskId) => live(taskId)?.record,
    settle(taskId, final) {
      const entry = live(taskId);
      if (entry === undefined || entry.record.status !== 'working') return;
      entry.record = final;
    },
  };
}
