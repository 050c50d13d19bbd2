// A StoreClient wrapper that counts round trips (script runs) per script name: how tests and the bench hold each path to its budget.

import type { StoreClient } from '../../../integrations/redis/index.js';

/** A client that counts the scripts it runs. */
export interface CountingClient extends StoreClient {
  /** Round trips so far, per script name. */
  readonly counts: Map<string, number>;
  /** Round trips so far in all. */
  total(): number;
  /** Forgets the counts. */
  reset(): void;
}

/** Wraps `inner`, counting each `evalScript` as one round trip. */
export function countingClient(inner: StoreClient): CountingClient {
  const counts = new Map<string, number>();
  const client: CountingClient = {
    counts,
    total: () => [...counts.values()].reduce((sum, count) => sum + count, 0),
    reset: () => counts.clear(),
    evalScript: (script, keys, args) => {
      counts.set(script.name, (counts.get(script.name) ?? 0) + 1);
      return inner.evalScript(script, keys, args);
    },
  };
  if (inner.subscribe !== undefined) client.subscribe = inner.subscribe.bind(inner);
  return client;
}
