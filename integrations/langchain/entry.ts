/**
 * The run-time face of `tool-dispatcher/langchain` (package.json's `default`; its types are
 * index.ts's): index.ts, imported so that without `langchain` or `@langchain/core` the import fails
 * with one line saying how to install it instead of Node's resolver stack.
 * @module
 */

import { importBesidePeers } from '../peers.js';

export const { dispatcherMiddleware, toLangChainTools } = await importBesidePeers(
  'tool-dispatcher/langchain',
  ['langchain', '@langchain/core'],
  () => import('./index.js'),
);
