/**
 * MCP Tasks on the importing side (2026-07-28, `io.modelcontextprotocol/tasks`): a `tools/call`
 * that declares the extension, on our own JSON-RPC path (the SDK's client refuses a handle), and
 * when the server answers with a handle, `tasks/get` at the server's poll interval until the
 * task ends, and `tasks/cancel` when our deadline or the caller ends the wait first.
 * @module
 */

import {
  Client,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  type CallToolResult,
} from '@modelcontextprotocol/client';
import { RawRequests, type RawResult } from './raw-requests.js';
import type { CallParams, McpClient } from './sdk-client.js';
import { declaresTasks, tasksExtension } from './tasks.js';

/** How one task call waits: the caller's signal and our own timeout. */
export interface TaskCallOptions {
  /** Ends the call (and cancels the task) when aborted. */
  signal: AbortSignal;
  /** Milliseconds until the call times out (and cancels the task); at most 2^31−1. */
  timeoutMs: number;
}

/** What a task call came to: the tool's result, or the server's ask for input (MRTR). */
export type TaskCallAnswer = { result: CallToolResult } | { inputRequired: true };

// Used when a handle names no interval; a server's interval below the floor is kept to the floor.
const defaultPollMs = 1_000;
const floorPollMs = 10;
const cancelWaitMs = 5_000;
const capabilities = { extensions: { [tasksExtension]: {} } };

/**
 * Whether calls on `client` may run as Tasks: a v2 client on the 2026-07-28 era whose server
 * advertises the extension.
 *
 * @example
 * if (canRunAsTask(client)) answer = await callToolAsTask(client, params, options);
 */
export function canRunAsTask(client: McpClient): client is Client {
  return (
    client instanceof Client &&
    client.getProtocolEra() === 'modern' &&
    declaresTasks(client.getServerCapabilities())
  );
}

/**
 * Runs `tools/call` declaring the Tasks extension; a handle is polled with `tasks/get` (waiting
 * the server's `pollIntervalMs` before each poll, read again from every answer) until the task
 * completes (its `CallToolResult`), fails (a `ProtocolError` with its code) or is cancelled. Our
 * deadline or the caller's abort sends `tasks/cancel` and rejects.
 *
 * @example
 * const answer = await callToolAsTask(client, { name: 'report', arguments: {} }, { signal, timeoutMs: 30_000 });
 */
export async function callToolAsTask(
  client: Client,
  params: CallParams,
  options: TaskCallOptions,
): Promise<TaskCallAnswer> {
  const channel = RawRequests.of(client);
  const { signal, timeoutMs } = options;
  const controller = new AbortController();
  const forward = () => controller.abort(signal.reason);
  signal.addEventListener('abort', forward, { once: true });
  const timer = setTimeout(
    () => controller.abort(new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out')),
    timeoutMs,
  );
  let taskId: string | undefined;
  try {
    if (signal.aborted) throw signal.reason;
    const answer = await channel.request('tools/call', { ...params }, controller.signal, capabilities);
    if (answer['resultType'] === 'input_required') return { inputRequired: true };
    if (answer['resultType'] !== 'task') return { result: callToolResultOf(answer, params.name) };
    taskId = taskIdOf(answer, params.name);
    return { result: await pollTask(channel, answer, taskId, controller.signal, params.name) };
  } catch (error) {
    if (taskId !== undefined && controller.signal.aborted) cancelTask(channel, taskId);
    throw error;
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', forward);
  }
}

async function pollTask(
  channel: RawRequests,
  handle: RawResult,
  taskId: string,
  signal: AbortSignal,
  toolName: string,
): Promise<CallToolResult> {
  let task = handle;
  let polled = false;
  for (;;) {
    const status = task['status'];
    if (status === 'completed' && task['result'] !== undefined) {
      return callToolResultOf(task['result'], toolName);
    }
    if (status === 'failed') throw taskFailure(task['error'], toolName);
    if (status === 'cancelled') {
      throw new Error(`The MCP server cancelled the task running "${toolName}" (${taskId})`);
    }
    // A handle for a task that already ended carries no result: one poll fetches it.
    if (status === 'completed' && polled) {
      throw new SdkError(SdkErrorCode.InvalidResult, `The completed task ${taskId} carries no result`);
    }
    if (status !== 'completed') await sleep(pollIntervalOf(task), signal);
    task = await channel.request('tasks/get', { taskId }, signal, capabilities);
    polled = true;
  }
}

function cancelTask(channel: RawRequests, taskId: string): void {
  channel.request('tasks/cancel', { taskId }, AbortSignal.timeout(cancelWaitMs), capabilities).catch(() => {
    // The task runs on to its ttl: the server was gone or refused, and nobody waits for it.
  });
}

function taskIdOf(handle: RawResult, toolName: string): string {
  const taskId = handle['taskId'];
  if (typeof taskId !== 'string' || taskId === '') {
    throw new SdkError(SdkErrorCode.InvalidResult, `The task handle for "${toolName}" has no taskId`);
  }
  return taskId;
}

function pollIntervalOf(task: RawResult): number {
  const interval = task['pollIntervalMs'];
  if (typeof interval !== 'number' || !Number.isFinite(interval) || interval < 0) return defaultPollMs;
  return Math.max(floorPollMs, interval);
}

function taskFailure(error: unknown, toolName: string): Error {
  const { code, message, data } = (error ?? {}) as { code?: unknown; message?: unknown; data?: unknown };
  return ProtocolError.fromError(
    typeof code === 'number' ? code : -32603,
    typeof message === 'string' ? message : `The task running "${toolName}" failed`,
    data,
  );
}

function callToolResultOf(value: unknown, toolName: string): CallToolResult {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SdkError(SdkErrorCode.InvalidResult, `The result of "${toolName}" is not an object`);
  }
  const { resultType: _resultType, ...result } = value as Record<string, unknown>;
  const content = result['content'] ?? [];
  if (!Array.isArray(content)) {
    throw new SdkError(
      SdkErrorCode.InvalidResult,
      `The result of "${toolName}" has content that is not a list`,
    );
  }
  return { ...result, content } as CallToolResult;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
