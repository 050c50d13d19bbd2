/**
 * The run-time face of `tool-dispatcher/openai-agents` (package.json's `default`; its types are
 * index.ts's): index.ts, imported so that without `@openai/agents` the import fails with one line
 * saying how to install it instead of Node's resolver stack.
 * @module
 */

import { importBesidePeers } from '../peers.js';

export const { toAgentsTools } = await importBesidePeers(
  'tool-dispatcher/openai-agents',
  ['@openai/agents'],
  () => import('./index.js'),
);
