/**
 * MCP Tasks on the serving side (2026-07-28, the `io.modelcontextprotocol/tasks` extension): a
 * long call answers with a handle stored before it returns, runs on, and is read by `tasks/get`
 * and stopped by `tasks/cancel`.
 * @module
 */

import { createHash } from 'node:crypto';
import {
  MissingRequiredClientCapabilityError,
  ProtocolError,
  type CallToolResult,
} from '@modelcontextprotocol/server';
import type { IdempotencyStore } from '../../index.js';
import { optionKeys, rejectUnknownKeys } from '../../middleware/index.js';
import { isIdempotencyStore, taskStoreOn } from './idempotency-task-store.js';
import { memoryTaskStore, type McpTaskRecord, type McpTaskStore } from './task-store.js';

/** The extension's identifier, in client and server capabilities. */
export const tasksExtension = 'io.modelcontextprotocol/tasks';

/** Options for serving Tasks (`tasks` of `createMcpServer` and `createMcpServerFactory`). */
export interface McpTasksOptions {
  /**
   * Where tasks are kept; every process that may receive a poll must share it. An idempotency
   * store (`memoryIdempotencyStore()`, `redisIdempotencyStore(redis)`, a PostgreSQL one) keeps
   * them under `mcp-task:<taskId>` keys beside the calls it dedupes; an `McpTaskStore` is used
   * as it is.
   * @default memoryTaskStore() (this process only)
   */
  store?: McpTaskStore | IdempotencyStore;
  /**
   * Tools whose timeout is longer than this answer with a task (tools with `task: true` always).
   * @default 60_000
   */
  thresholdMs?: number;
  /**
   * The poll interval the handle asks clients to keep to.
   * @default 1_000
   */
  pollIntervalMs?: number;
  /**
   * How long a task is kept after it was created.
   * @default 3_600_000
   */
  ttlMs?: number;
}

const tasksOptionKeys = optionKeys<McpTasksOptions>({
  store: true,
  thresholdMs: true,
  pollIntervalMs: true,
  ttlMs: true,
});

/** What `tasks/get` answers: the task with `resultType: 'complete'`. */
export type TaskAnswer = Omit<McpTaskRecord, 'argsDigest'> & { resultType: 'complete' };

/** A `tools/call` answer that is a handle. */
export type TaskHandle = Omit<McpTaskRecord, 'result' | 'error' | 'argsDigest'> & { resultType: 'task' };

/**
 * The serving side of Tasks for one set of options: shared by every server a factory makes, so a
 * poll reaches the same store whichever connection or request it comes on.
 */
export class McpTasks {
  readonly store: McpTaskStore;
  readonly thresholdMs: number;
  readonly pollIntervalMs: number;
  readonly ttlMs: number;
  // Runs of this process by task id: a cancel that lands here stops the handler at once.
  readonly #running = new Map<string, AbortController>();

  constructor(options: McpTasksOptions) {
    if (typeof options !== 'object' || options === null) throw new TypeError('tasks must be an object');
    rejectUnknownKeys('tasks options', options, tasksOptionKeys);
    const {
      store = memoryTaskStore(),
      thresholdMs = 60_000,
      pollIntervalMs = 1_000,
      ttlMs = 3_600_000,
    } = options;
    for (const [name, value] of [
      ['thresholdMs', thresholdMs],
      ['pollIntervalMs', pollIntervalMs],
      ['ttlMs', ttlMs],
    ] as const) {
      if (!Number.isInteger(value) || value <= 0) {
        throw new TypeError(`tasks.${name} must be a positive integer, got ${String(value)}`);
      }
    }
    const tasks = isIdempotencyStore(store) ? taskStoreOn(store) : store;
    if (
      typeof tasks !== 'object' ||
      tasks === null ||
      typeof tasks.create !== 'function' ||
      typeof tasks.get !== 'function' ||
      typeof tasks.settle !== 'function'
    ) {
      throw new TypeError(
        'tasks.store must be an IdempotencyStore or an McpTaskStore (create, get and settle methods)',
      );
    }
    this.store = tasks;
    this.thresholdMs = thresholdMs;
    this.pollIntervalMs = pollIntervalMs;
    this.ttlMs = ttlMs;
  }

  /** Whether a call of a tool with these settings, from a client with these capabilities, is a task. */
  wants(
    tool: { timeoutMs: number | undefined; timeout?: { totalMs: number }; task?: true },
    capabilities: unknown,
  ): boolean {
    if (!declaresTasks(capabilities)) return false;
    // A tool with an idle timeout may run for its total.
    const longestMs = tool.timeoutMs ?? tool.timeout?.totalMs;
    return tool.task === true || (longestMs !== undefined && longestMs > this.thresholdMs);
  }

  /**
   * Stores the task for `key` and starts `run` once; a key seen before gets its task back and
   * runs nothing, or `'conflict'` when that task was made for other `args`.
   */
  async start(
    wireName: string,
    key: string,
    run: (signal: AbortSignal, taskId: string) => Promise<CallToolResult>,
  ): Promise<TaskHandle>;
  async start(
    wireName: string,
    key: string,
    run: (signal: AbortSignal, taskId: string) => Promise<CallToolResult>,
    args: unknown,
  ): Promise<TaskHandle | 'conflict'>;
  async start(
    wireName: string,
    key: string,
    run: (signal: AbortSignal, taskId: string) => Promise<CallToolResult>,
    args?: unknown,
  ): Promise<TaskHandle | 'conflict'> {
    const now = new Date().toISOString();
    const argsDigest = args === undefined ? undefined : digestOf(args);
    const fresh: McpTaskRecord = {
      taskId: taskIdOf(wireName, key),
      status: 'working',
      createdAt: now,
      lastUpdatedAt: now,
      ttlMs: this.ttlMs,
      pollIntervalMs: this.pollIntervalMs,
      ...(argsDigest === undefined ? {} : { argsDigest }),
    };
    const { created, record: stored } = await this.store.create(fresh);
    if (created) this.#run(fresh, run);
    else if (stored.argsDigest !== undefined && stored.argsDigest !== argsDigest) return 'conflict';
    const { result: _result, error: _error, argsDigest: _digest, ...task } = stored;
    return { ...task, resultType: 'task' };
  }

  /** `tasks/get`: the task, or -32602 for an id this store does not know. */
  async get(taskId: string, capabilities: unknown): Promise<TaskAnswer> {
    requireTasks(capabilities, 'tasks/get');
    const record = await this.store.get(taskId);
    if (record === undefined) throw new ProtocolError(-32602, `Unknown task: ${taskId}`);
    const { argsDigest: _digest, ...task } = record;
    return { ...task, resultType: 'complete' };
  }

  /** `tasks/cancel`: stops the run (here, or on the process whose poll settles it) and acks. */
  async cancel(taskId: string, capabilities: unknown): Promise<{ resultType: 'complete' }> {
    requireTasks(capabilities, 'tasks/cancel');
    const record = await this.store.get(taskId);
    if (record === undefined) throw new ProtocolError(-32602, `Unknown task: ${taskId}`);
    if (record.status === 'working') {
      await this.store.settle(taskId, {
        ...record,
        status: 'cancelled',
        lastUpdatedAt: new Date().toISOString(),
      });
      this.#running.get(taskId)?.abort(new Error('The task was cancelled (tasks/cancel)'));
    }
    return { resultType: 'complete' };
  }

  #run(task: McpTaskRecord, run: (signal: AbortSignal, taskId: string) => Promise<CallToolResult>): void {
    const controller = new AbortController();
    this.#running.set(task.taskId, controller);
    // A cancel that lands on another process of the fleet is seen here at the poll interval.
    const watch = setInterval(() => {
      Promise.resolve(this.store.get(task.taskId))
        .then((record) => {
          if (record?.status === 'cancelled') {
            controller.abort(new Error('The task was cancelled (tasks/cancel)'));
          }
        })
        .catch(() => {
          // A store that cannot answer now is asked again at the next interval.
        });
    }, this.pollIntervalMs);
    watch.unref();
    const settle = (final: Partial<McpTaskRecord>) =>
      this.store.settle(task.taskId, { ...task, ...final, lastUpdatedAt: new Date().toISOString() });
    run(controller.signal, task.taskId)
      .then(
        (result) => settle({ status: 'completed', result }),
        (error: unknown) =>
          settle({
            status: 'failed',
            error: {
              code:
                typeof (error as { code?: unknown })?.code === 'number'
                  ? (error as { code: number }).code
                  : -32603,
              message: error instanceof Error ? error.message : String(error),
            },
          }),
      )
      .catch(() => {
        // A store that cannot record the end leaves the task working until its ttl; polls say so.
      })
      .finally(() => {
        clearInterval(watch);
        this.#running.delete(task.taskId);
      });
  }
}

/**
 * The task id of a call: bound to its tool and idempotency key, so a re-issue with the key finds
 * the same task on any process.
 *
 * @example
 * taskIdOf('report.build', 'order-42'); // 'task-3f1c…'
 */
export function taskIdOf(wireName: string, key: string): string {
  return `task-${createHash('sha256').update(`${wireName}\0${key}`).digest('hex').slice(0, 32)}`;
}

// A digest of a call's wire arguments (plain JSON, object keys in any order); `undefined` for
// arguments too deep to render, which then are not compared.
function digestOf(args: unknown): string | undefined {
  let text: string | undefined;
  try {
    text = JSON.stringify(args, (_key, value: unknown) =>
      typeof value === 'object' && value !== null && !Array.isArray(value)
        ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
        : value,
    );
  } catch {
    return undefined;
  }
  if (text === undefined) return undefined;
  return createHash('sha256').update(text).digest('base64url');
}

/**
 * Whether a request's client capabilities declare the Tasks extension.
 *
 * @example
 * declaresTasks({ extensions: { 'io.modelcontextprotocol/tasks': {} } }); // true
 */
export function declaresTasks(capabilities: unknown): boolean {
  const extensions = (capabilities as { extensions?: unknown } | undefined)?.extensions;
  return typeof extensions === 'object' && extensions !== null && tasksExtension in extensions;
}

function requireTasks(capabilities: unknown, method: string): void {
  if (declaresTasks(capabilities)) return;
  throw new MissingRequiredClientCapabilityError(
    { requiredCapabilities: { extensions: { [tasksExtension]: {} } } as never },
    `${method} needs the ${tasksExtension} client capability`,
  );
}
