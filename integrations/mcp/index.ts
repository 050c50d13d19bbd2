/**
 * tool-dispatcher/mcp: serve a registry as an MCP server, import an MCP server's tools into a
 * registry, and (through the `tool-dispatcher mcp-proxy` command) put the dispatcher in front of
 * any MCP server. Needs the optional peer `@modelcontextprotocol/sdk` ^1.32.
 * @module
 */

export { createMcpServer, registerMcpTools, toMcpTools, toCallToolResult } from './server.js';
export type {
  CallToolResultOptions,
  CreateMcpServerOptions,
  McpToolHints,
  McpToolsOptions,
  RegisterMcpToolsOptions,
} from './server.js';
export { importMcpTools, registryNameOf } from './client.js';
export type { ImportedMcpTools, ImportedToolSettings, ImportMcpToolsOptions } from './client.js';
export { approvalMetaKey, errorMetaKey, idempotencyKeyMetaKey } from './envelope.js';
export { createMcpProxy } from './proxy.js';
export type { McpProxy, McpProxyConfig, McpProxyOptions, McpProxyToolConfig, McpUpstream } from './proxy.js';
