/**
 * The run-time face of `tool-dispatcher/otel` (package.json's `default`; its types are index.ts's):
 * index.ts, imported so that without `@opentelemetry/api` the import fails with one line saying how
 * to install it instead of Node's resolver stack.
 * @module
 */

import { importBesidePeers } from '../peers.js';

export const { otelTracing, otelMetrics, metricNames } = await importBesidePeers(
  'tool-dispatcher/otel',
  ['@opentelemetry/api'],
  () => import('./index.js'),
);
