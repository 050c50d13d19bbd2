/**
 * The run-time face of `tool-dispatcher/ai-sdk` (package.json's `default`; its types are
 * index.ts's): index.ts, imported so that without `ai` the import fails with one line saying how to
 * install it instead of Node's resolver stack.
 * @module
 */

import { importBesidePeers } from '../peers.js';

export const { aiSdkToolApproval, toAiSdkTools, ToolCallFailed } = await importBesidePeers(
  'tool-dispatcher/ai-sdk',
  ['ai'],
  () => import('./index.js'),
);
