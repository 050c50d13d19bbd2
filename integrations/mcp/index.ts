/**
 * tool-dispatcher/mcp: serve a registry as an MCP server, import an MCP server's tools into a
 * registry, and (through the `tool-dispatcher mcp-proxy` command) put the dispatcher in front of
 * any MCP server, to 2025-11-25 and 2026-07-28 clients alike. Built on the v2 MCP packages
 * (`@modelcontextprotocol/server` and `client`, dependencies); v1 `Server` and `Client` objects
 * work when the optional peer `@modelcontextprotocol/sdk` ^1.32 is installed.
 * @module tool-dispatcher/mcp
 */

export {
  createMcpServer,
  createMcpServerFactory,
  registerMcpTools,
  toMcpTools,
  toCallToolResult,
} from './server.js';
export type {
  CallToolResultOptions,
  CreateMcpServerOptions,
  McpToolHints,
  McpToolsOptions,
  RegisterMcpToolsOptions,
} from './server.js';
export { importMcpTools, registryNameOf } from './client.js';
export type { ImportedMcpTools, ImportedToolSettings, ImportMcpToolsOptions } from './client.js';
export type { McpClient } from './sdk-client.js';
export { approvalMetaKey, errorMetaKey, idempotencyKeyMetaKey, receiptMetaKey } from './envelope.js';
export type { McpReceipt } from './envelope.js';
export { memoryTaskStore } from './task-store.js';
export type { McpTaskCreation, McpTaskRecord, McpTaskStatus, McpTaskStore } from './task-store.js';
export type { McpTasksOptions } from './tasks.js';
export { listenMcp } from './listener.js';
export type { ListenerMount, ListenMcpOptions, McpListener } from './listener.js';
export { createMcpProxy, mcpProxyConfigSchema } from './proxy.js';
export type {
  McpServerEntry,
  McpProxy,
  McpProxyConfig,
  McpProxyOptions,
  McpProxyStores,
  McpProxyTasksConfig,
  McpProxyToolConfig,
  McpUpstream,
} from './proxy.js';
