// What every fleet worker process does the same way: read its config, append to its log with
// fs.writeSync (so lines survive a SIGKILL), draw from a seeded random and connect to Redis.

import { closeSync, openSync, writeSync } from 'node:fs';
import { type Connected, connectIoredis, connectNodeRedis } from '../integrations/redis/clients.js';

/** The worker's config, JSON in the environment variable the runner set. */
export function workerConfig<T>(variable: string): T {
  return JSON.parse(process.env[variable] ?? '{}') as T;
}

/** A log file the worker appends lines to. */
export interface WorkerLog {
  /** Appends `text` and a newline, synchronously. */
  write(text: string): void;
  close(): void;
}

/** Opens `path` for appending. */
export function workerLog(path: string): WorkerLog {
  const fd = openSync(path, 'a');
  return {
    write: (text) => {
      writeSync(fd, `${text}\n`);
    },
    close: () => closeSync(fd),
  };
}

/** The wall clock in ms with sub-ms precision, comparable across the fleet's processes. */
export const now = (): number => performance.timeOrigin + performance.now();

/** What the runner tells every Redis fleet worker; each scenario's config adds its own fields. */
export interface FleetWorkerConfig {
  id: string;
  url: string;
  client: 'node-redis' | 'ioredis';
  prefix: string;
  logPath: string;
  seed: number;
}

/** Writes `text` to `log`, then (when given) the worker's id, then the time: `<text> [id] <ms>`. */
export function stampedLines(log: WorkerLog, id?: string): (text: string) => void {
  const suffix = id === undefined ? '' : ` ${id}`;
  return (text) => log.write(`${text}${suffix} ${now().toFixed(3)}`);
}

/** Resolves after `ms`. */
export const sleep = (ms: number): Promise<unknown> => new Promise((resolve) => setTimeout(resolve, ms));

/** A seeded generator of numbers in [0, 1) (mulberry32): the same seed draws the same run. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A copy of `items` in the order a Fisher–Yates shuffle with `rand` gives. */
export function shuffled<T>(items: readonly T[], rand: () => number): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}

/** How a worker connects to Redis. */
export interface ConnectOptions {
  /** Whether to connect a subscriber too. @default true */
  subscriber?: boolean;
  /** How many tries, 100 ms apart, before it gives up. @default 50 */
  attempts?: number;
}

/**
 * Connects the named client, trying again while Redis is down: a worker started while Redis
 * restarts (the restart run's replacements) connects once it is back, instead of dying before it
 * has logged anything.
 */
export async function connectOnceUp(
  client: 'node-redis' | 'ioredis',
  url: string,
  options: ConnectOptions = {},
): Promise<Connected> {
  const connect = client === 'ioredis' ? connectIoredis : connectNodeRedis;
  const given = options.subscriber === undefined ? undefined : { subscriber: options.subscriber };
  for (let attempt = 1; ; attempt++) {
    try {
      return await connect(url, given);
    } catch (error) {
      if (attempt >= (options.attempts ?? 50)) throw error;
      await sleep(100);
    }
  }
}

/** An error's stack (or the value) on one line, for a CRASH line. */
export const oneLine = (error: unknown): string =>
  String((error as Error)?.stack ?? error).replaceAll('\n', ' | ');
