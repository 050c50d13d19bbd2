/**
 * The circuit store on Redis: versioned records and failure windows on the server, a local mirror kept fresh by pub/sub.
 * @module
 */

import type { CircuitRecord, CircuitStore, CircuitStoreState, CircuitView } from '../../index.js';
import { num, runScript, text } from './call.js';
import type { StoreClient } from './client.js';
import { hubFor } from './events.js';
import { optionKeys } from '../../middleware/index.js';
import { newToken, requireClient, requireMs, requireOptions, requirePrefix } from './options.js';
import { casCircuitScript, failureScript, readCircuitScript } from './scripts.js';

/** Options for `redisCircuitStore`. */
export interface RedisCircuitStoreOptions {
  /**
   * The key namespace.
   * @default 'td'
   */
  prefix?: string;
  /**
   * How old a mirrored circuit may be before a read refreshes it in the background, in
   * milliseconds; without a subscriber, a read older than this waits for Redis instead.
   * Bounds staleness when pub/sub messages are lost.
   * @default 1_000
   */
  mirrorTtlMs?: number;
  /**
   * How long an idle circuit's record stays in Redis, in milliseconds (every write renews it).
   * @default 86_400_000
   */
  idleTtlMs?: number;
  /**
   * Each store call's own deadline, in milliseconds.
   * @default 1_000
   */
  storeTimeoutMs?: number;
  /**
   * The most circuits mirrored in this process.
   * @default 10_000
   */
  maxMirrored?: number;
}

const redisCircuitStoreOptionKeys = optionKeys<RedisCircuitStoreOptions>({
  prefix: true,
  mirrorTtlMs: true,
  idleTtlMs: true,
  storeTimeoutMs: true,
  maxMirrored: true,
});

interface Mirrored {
  view: CircuitView;
  /** performance.now() when `view.now` was the server's time. */
  at: number;
  generation: number;
  refreshing: boolean;
}

const states: ReadonlySet<string> = new Set(['closed', 'open', 'half_open']);

function recordOf(
  state: string,
  failures: number,
  openedAt: number,
  probe: string,
  probeUntil: number,
): CircuitRecord | undefined {
  if (!states.has(state)) return undefined;
  return { state: state as CircuitStoreState, failures, openedAt, probe, probeUntil };
}

function viewOf(reply: unknown): CircuitView {
  return {
    record:
      num(reply, 1) === 1
        ? recordOf(text(reply, 2), num(reply, 3), num(reply, 4), text(reply, 5), num(reply, 6))
        : undefined,
    version: num(reply, 7),
    failures: num(reply, 8),
    now: num(reply, 9),
  };
}

/**
 * Makes a circuit store on Redis, shared by every process using the same prefix. Reads are
 * answered from a local mirror (no round trip while a circuit is closed and healthy); every
 * write and failure publishes the new record, so an opened circuit reaches every process's
 * mirror within a few ms. Time is the server's.
 *
 * @example
 * const breaker = circuitBreaker({ store: redisCircuitStore(redis) });
 */
export function redisCircuitStore(redis: StoreClient, options: RedisCircuitStoreOptions = {}): CircuitStore {
  requireClient(redis, 'redisCircuitStore');
  requireOptions(options, 'redisCircuitStore', redisCircuitStoreOptionKeys);
  const prefix = requirePrefix(options.prefix ?? 'td');
  const mirrorTtlMs = requireMs('mirrorTtlMs', options.mirrorTtlMs ?? 1_000);
  const idleTtlMs = requireMs('idleTtlMs', options.idleTtlMs ?? 86_400_000);
  const timeoutMs = requireMs('storeTimeoutMs', options.storeTimeoutMs ?? 1_000);
  const maxMirrored = requireMs('maxMirrored', options.maxMirrored ?? 10_000);

  const channel = `${prefix}:ev`;
  const keys = (circuit: string) => [`${prefix}:b:${circuit}`, `${prefix}:bf:${circuit}`];
  const mirror = new Map<string, Mirrored>();
  const hub = hubFor(redis, channel);

  const remember = (circuit: string, view: CircuitView, at: number) => {
    const known = mirror.get(circuit);
    // Messages and replies race: keep the newest version (a failure count only with it).
    if (known !== undefined && known.view.version > view.version) return;
    if (known === undefined && mirror.size >= maxMirrored)
      mirror.delete(mirror.keys().next().value as string);
    mirror.set(circuit, { view, at, generation: hub.generation, refreshing: known?.refreshing ?? false });
  };

  hub.listen(
    (message) => {
      const at = performance.now();
      if (message.startsWith('b|')) {
        // b|version|state|failures|openedAt|probe|probeUntil|now|circuit
        const parts = message.split('|');
        if (parts.length < 9) return;
        const circuit = parts.slice(8).join('|');
        const [, version, state, failures, openedAt, probe, probeUntil, now] = parts as [string, ...string[]];
        remember(
          circuit,
          {
            record: recordOf(
              state ?? '',
              Number(failures),
              Number(openedAt),
              probe ?? '',
              Number(probeUntil),
            ),
            version: Number(version),
            failures: 0,
            now: Number(now),
          },
          at,
        );
      } else if (message.startsWith('f|')) {
        // f|version|failures|now|circuit
        const parts = message.split('|');
        if (parts.length < 5) return;
        const circuit = parts.slice(4).join('|');
        const known = mirror.get(circuit);
        const version = Number(parts[1]);
        if (known === undefined || known.view.version !== version) return;
        remember(circuit, { ...known.view, failures: Number(parts[2]), now: Number(parts[3]) }, at);
      }
    },
    () => {
      // Messages may have been missed: mirrored circuits are read afresh when next needed.
      for (const entry of mirror.values()) entry.generation = -1;
    },
  );

  const fetch = async (circuit: string): Promise<CircuitView> => {
    const reply = await runScript(redis, readCircuitScript, keys(circuit), [], timeoutMs);
    const view = viewOf(reply);
    remember(circuit, view, performance.now());
    return view;
  };

  // A mirrored view, its time moved on by the local monotonic clock since the server read it.
  const project = (entry: Mirrored, now: number): CircuitView => ({
    ...entry.view,
    now: entry.view.now + (now - entry.at),
  });

  const refreshInBackground = (circuit: string, entry: Mirrored) => {
    if (entry.refreshing) return;
    entry.refreshing = true;
    fetch(circuit).then(
      () => {
        const latest = mirror.get(circuit);
        if (latest !== undefined) latest.refreshing = false;
      },
      () => {
        entry.refreshing = false;
      },
    );
  };

  return {
    read: (circuit: string) => {
      const entry = mirror.get(circuit);
      if (entry === undefined) return fetch(circuit);
      const now = performance.now();
      const fresh = now - entry.at < mirrorTtlMs;
      const trusted = hub.listening && entry.generation === hub.generation;
      if (fresh) return project(entry, now);
      if (trusted) {
        refreshInBackground(circuit, entry);
        return project(entry, now);
      }
      return fetch(circuit);
    },
    compareAndSet: async (circuit: string, version: number, next: CircuitRecord | undefined) => {
      const args = [
        String(version),
        newToken(),
        next === undefined ? '0' : '1',
        next?.state ?? '',
        String(next?.failures ?? 0),
        String(next?.openedAt ?? 0),
        next?.probe ?? '',
        String(next?.probeUntil ?? 0),
        String(idleTtlMs),
        channel,
        circuit,
      ];
      const reply = await runScript(redis, casCircuitScript, keys(circuit), args, timeoutMs);
      const view = viewOf(reply);
      remember(circuit, view, performance.now());
      return { written: num(reply, 0) === 1, view };
    },
    addFailure: async (circuit: string, failureId: string, windowMs: number) => {
      const window = windowMs === Infinity ? 'inf' : String(Math.ceil(windowMs));
      const reply = await runScript(
        redis,
        failureScript,
        keys(circuit),
        [failureId, window, String(idleTtlMs), channel, circuit],
        timeoutMs,
      );
      const view = viewOf(reply);
      remember(circuit, view, performance.now());
      return view;
    },
    entries: () => {
      const now = performance.now();
      return [...mirror].map(([circuit, entry]) => [circuit, project(entry, now)] as const);
    },
  };
}
