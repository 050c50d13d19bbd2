/**
 * The run-time face of `tool-dispatcher/mcp` (package.json's `default`; its types are index.ts's):
 * index.ts, imported so that a missing v2 MCP package (a dependency, so only a broken install
 * lacks it) fails with one line saying how to install it instead of Node's resolver stack. The v1
 * SDK (`@modelcontextprotocol/sdk`) is optional: without it only v1 objects are refused.
 * @module
 */

import { importBesidePeers } from '../peers.js';

export const {
  createMcpServer,
  createMcpServerFactory,
  registerMcpTools,
  toMcpTools,
  toCallToolResult,
  importMcpTools,
  registryNameOf,
  approvalMetaKey,
  errorMetaKey,
  idempotencyKeyMetaKey,
  receiptMetaKey,
  memoryTaskStore,
  listenMcp,
  createMcpProxy,
  mcpProxyConfigSchema,
} = await importBesidePeers(
  'tool-dispatcher/mcp',
  ['@modelcontextprotocol/server', '@modelcontextprotocol/client'],
  () => import('./index.js'),
);
