/**
 * The run-time face of `tool-dispatcher/dbos` (package.json's `default`; its types are index.ts's):
 * index.ts, imported so that without `@dbos-inc/dbos-sdk` the import fails with one line saying
 * how to install it instead of Node's resolver stack.
 * @module
 */

import { importBesidePeers } from '../peers.js';

export const { dbosStep } = await importBesidePeers(
  'tool-dispatcher/dbos',
  ['@dbos-inc/dbos-sdk'],
  () => import('./index.js'),
);
