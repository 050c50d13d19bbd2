/**
 * The run-time face of `tool-dispatcher/restate` (package.json's `default`; its types are
 * index.ts's): index.ts, imported so that without `@restatedev/restate-sdk` the import fails with
 * one line saying how to install it instead of Node's resolver stack.
 * @module
 */

import { importBesidePeers } from '../peers.js';

export const { restateRun } = await importBesidePeers(
  'tool-dispatcher/restate',
  ['@restatedev/restate-sdk'],
  () => import('./index.js'),
);
