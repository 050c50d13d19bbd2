/**
 * The run-time face of `tool-dispatcher/mcp` (package.json's `import`; its types are index.ts's):
 * index.ts, imported so that without `@modelcontextprotocol/sdk` the import fails with one line
 * saying how to install it instead of Node's resolver stack.
 * @module
 */

import { importBesidePeers } from '../peers.js';

export const {
  createMcpServer,
  registerMcpTools,
  toMcpTools,
  toCallToolResult,
  importMcpTools,
  registryNameOf,
  approvalMetaKey,
  errorMetaKey,
  idempotencyKeyMetaKey,
  createMcpProxy,
} = await importBesidePeers('tool-dispatcher/mcp', ['@modelcontextprotocol/sdk'], () => import('./index.js'));
