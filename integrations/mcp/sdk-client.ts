/**
 * One face over the two MCP client lines an import may be given: the v2 `Client`
 * (`@modelcontextprotocol/client`) and v1's (`@modelcontextprotocol/sdk`), and one reading of
 * what either throws.
 * @module
 */

import {
  Client,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  type CallToolResult,
  type Progress,
  type Tool as McpTool,
} from '@modelcontextprotocol/client';
import { v1, type V1Client } from './v1-sdk.js';

/** A connected MCP client of either SDK line. */
export type McpClient = Client | V1Client;

/** The request options a call passes on. */
export interface CallOptions {
  signal: AbortSignal;
  timeout: number;
  onprogress?: (progress: Progress) => void;
  /** Whether each progress report restarts `timeout` (an idle timeout). */
  resetTimeoutOnProgress?: boolean;
  /** The longest the request may run, progress or not, in milliseconds. */
  maxTotalTimeout?: number;
  /** Hands an `input_required` answer back instead of fulfilling it (v2, 2026-07-28). */
  allowInputRequired?: boolean;
}

/** The `tools/call` params an import sends. */
export interface CallParams {
  name: string;
  arguments: Record<string, unknown>;
  _meta?: Record<string, unknown>;
  /** A 2026-07-28 retry's answers to the previous round's input requests. */
  inputResponses?: Record<string, unknown>;
  /** A 2026-07-28 retry's echo of the previous round's opaque state. */
  requestState?: string;
}

/**
 * Whether `value` is a client of either line (v1 only when its package is installed).
 *
 * @example
 * if (!isMcpClient(client)) throw new TypeError('needs a Client');
 */
export function isMcpClient(value: unknown): value is McpClient {
  return value instanceof Client || (v1 !== undefined && value instanceof v1.Client);
}

/**
 * One page of `tools/list` (a v2 client without a cursor walks every page itself).
 *
 * @example
 * const page = await listTools(client, undefined);
 */
export async function listTools(
  client: McpClient,
  cursor: string | undefined,
): Promise<{ tools: McpTool[]; nextCursor?: string | undefined }> {
  const params = cursor === undefined ? undefined : { cursor };
  if (client instanceof Client) return client.listTools(params);
  return (await client.listTools(params)) as { tools: McpTool[]; nextCursor?: string };
}

/**
 * Runs `tools/call` on either line.
 *
 * @example
 * const result = await callTool(client, { name: 'echo', arguments: {} }, { signal, timeout: 5_000 });
 */
export async function callTool(
  client: McpClient,
  params: CallParams,
  options: CallOptions,
): Promise<CallToolResult> {
  if (client instanceof Client) return client.callTool(params, options);
  const schemas = (v1 as NonNullable<typeof v1>).schemas;
  return (await client.callTool(params, schemas.CallToolResultSchema, options)) as CallToolResult;
}

/**
 * Sets (or with `undefined`, removes) the client's `notifications/tools/list_changed` handler.
 *
 * @example
 * onToolListChanged(client, () => void imported.refresh());
 */
export function onToolListChanged(client: McpClient, handler: (() => void) | undefined): void {
  if (handler === undefined) return client.removeNotificationHandler('notifications/tools/list_changed');
  if (client instanceof Client)
    return client.setNotificationHandler('notifications/tools/list_changed', handler);
  const schemas = (v1 as NonNullable<typeof v1>).schemas;
  client.setNotificationHandler(schemas.ToolListChangedNotificationSchema, handler);
}

/** An open `subscriptions/listen` stream: `close()` ends it (idempotent). */
export interface ListSubscription {
  close(): Promise<void>;
}

/**
 * Opens a `subscriptions/listen` stream for `tools/list_changed` when the client speaks
 * 2026-07-28 to a server that announces tool list changes: on that revision nothing is sent
 * unsolicited, so a handler alone never hears of a change. Resolves to `undefined` where the
 * old delivery applies (a v1 client, a 2025-11-25 connection) or the server announces nothing.
 *
 * @example
 * const subscription = await listenToolListChanged(client);
 * await subscription?.close();
 */
export async function listenToolListChanged(client: McpClient): Promise<ListSubscription | undefined> {
  if (!(client instanceof Client) || client.getProtocolEra() !== 'modern') return undefined;
  if (client.getServerCapabilities()?.tools?.listChanged !== true) return undefined;
  return client.listen({ toolsListChanged: true });
}

/** What a failed request means, read the same way from either SDK line's errors. */
export type RequestFailure =
  | { type: 'closed' | 'timeout' | 'malformed' | 'transport'; message: string }
  | { type: 'session_lost'; message: string }
  | { type: 'protocol'; code: number | string; message: string }
  | { type: 'rpc'; code: number; message: string };

/**
 * JSON-RPC codes of the 2026-07-28 protocol errors: header mismatch, missing client capability,
 * unsupported protocol version. Retrying any of them gets the same answer.
 */
export const protocolErrorCodes: ReadonlySet<number> = new Set([-32020, -32021, -32022]);

const closedCodes = new Set<unknown>([SdkErrorCode.ConnectionClosed, -32000]);
const timeoutCodes = new Set<unknown>([SdkErrorCode.RequestTimeout, -32001]);
const protocolSdkCodes = new Set<unknown>([
  SdkErrorCode.EraNegotiationFailed,
  SdkErrorCode.UnsupportedResultType,
]);

/**
 * Reads an error a client request rejected with.
 *
 * @example
 * const failure = requestFailure(error, client.transport?.sessionId !== undefined);
 */
export function requestFailure(error: unknown, hasSession: boolean): RequestFailure {
  const message = messageOf(error);
  if (error instanceof SdkHttpError || (v1 !== undefined && error instanceof v1.StreamableHTTPError)) {
    const status =
      error instanceof SdkHttpError ? (error.data as { status?: unknown } | undefined)?.status : error.code;
    if (status === 404 && hasSession) return { type: 'session_lost', message };
    return { type: 'transport', message };
  }
  const code = codeOf(error);
  if (code !== undefined) {
    if (closedCodes.has(code)) return { type: 'closed', message };
    if (timeoutCodes.has(code)) return { type: 'timeout', message };
    if (protocolSdkCodes.has(code) || protocolErrorCodes.has(code as number)) {
      return { type: 'protocol', code, message };
    }
    if (typeof code === 'number') return { type: 'rpc', code, message };
  }
  if (error instanceof Error && (error.name === 'ZodError' || error.name === '$ZodError')) {
    return { type: 'malformed', message };
  }
  return { type: 'transport', message };
}

function codeOf(error: unknown): number | string | undefined {
  if (error instanceof ProtocolError || error instanceof SdkError) return error.code;
  if (v1 !== undefined && error instanceof v1.schemas.McpError) return error.code;
  return undefined;
}

/**
 * An error's message without the v1 SDK's `MCP error <code>: ` prefixes.
 *
 * @example
 * messageOf(new Error('MCP error -32602: bad')); // 'bad'
 */
export function messageOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.replace(/^(MCP error -?\d+: )+/, '');
}
