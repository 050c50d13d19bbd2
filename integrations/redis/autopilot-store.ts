/**
 * The autopilot's store on Redis: retry budgets shared by a fleet (deposits batched in this
 * process, one round trip per retry) and tools' latency windows merged across it.
 * @module
 */

import type { AutopilotStore, LatencySketchData, RetryBudgetWindow } from '../../middleware/index.js';
import { optionKeys } from '../../middleware/index.js';
import { num, runScript, text } from './call.js';
import type { StoreClient } from './client.js';
import {
  budgetBalanceScript,
  budgetDepositScript,
  budgetWithdrawScript,
  sketchExchangeScript,
} from './autopilot-scripts.js';
import { requireMs, requireOptions, requirePrefix } from './options.js';

/** Options for `redisAutopilotStore`. */
export interface RedisAutopilotStoreOptions {
  /** The Redis client (`fromNodeRedis(client)` or `fromIoredis(client)`). */
  client: StoreClient;
  /**
   * The key namespace: processes with the same prefix share budgets and latency windows.
   * @default 'td'
   */
  prefix?: string;
  /**
   * Each store call's own deadline, in milliseconds.
   * @default 1_000
   */
  storeTimeoutMs?: number;
  /**
   * How long first attempts' deposits wait in this process before they are sent on their own
   * (a withdrawal sends them at once), in milliseconds.
   * @default 100
   */
  flushEveryMs?: number;
  /**
   * The least time between two exchanges of one tool's latency window, in milliseconds: calls
   * in between keep their counts for the next and answer the fleet's window as last read.
   * @default 1_000
   */
  exchangeEveryMs?: number;
}

const redisAutopilotStoreOptionKeys = optionKeys<RedisAutopilotStoreOptions>({
  client: true,
  prefix: true,
  storeTimeoutMs: true,
  flushEveryMs: true,
  exchangeEveryMs: true,
});

/** The autopilot's store on Redis, with a way to send the deposits it holds now. */
export interface RedisAutopilotStore extends AutopilotStore {
  /** Sends every deposit held in this process now (at shutdown, say); never rejects. */
  flush(): Promise<void>;
  /** Sends this process's counts for `tool` and answers the fleet's window (see `AutopilotStore`). */
  exchangeSketch(
    tool: string,
    delta: LatencySketchData,
    window: { readonly windowMs: number; readonly subWindows: number },
  ): Promise<LatencySketchData>;
}

// Deposits of one budget key not sent yet.
interface Tally {
  units: number;
  window: RetryBudgetWindow;
}

// One tool's exchange: counts not sent yet, and the fleet's window as last read.
interface Exchange {
  readonly pending: Map<number, number>;
  pendingZeros: number;
  answer: LatencySketchData | undefined;
  sentAt: number;
  inFlight: Promise<LatencySketchData> | undefined;
}

// Tools whose exchanges are remembered at most; the oldest is forgotten past it.
const maxExchanges = 10_000;

/**
 * The `AutopilotStore` on Redis.
 * @internal
 */
class FleetAutopilotStore implements RedisAutopilotStore {
  readonly #client: StoreClient;
  readonly #prefix: string;
  readonly #timeoutMs: number;
  readonly #flushEveryMs: number;
  readonly #exchangeEveryMs: number;
  readonly #tallies = new Map<string, Tally>();
  readonly #exchanges = new Map<string, Exchange>();
  #flushTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(settings: {
    client: StoreClient;
    prefix: string;
    timeoutMs: number;
    flushEveryMs: number;
    exchangeEveryMs: number;
  }) {
    this.#client = settings.client;
    this.#prefix = settings.prefix;
    this.#timeoutMs = settings.timeoutMs;
    this.#flushEveryMs = settings.flushEveryMs;
    this.#exchangeEveryMs = settings.exchangeEveryMs;
  }

  deposit(key: string, units: number, window: RetryBudgetWindow): void {
    const tally = this.#tallies.get(key);
    if (tally === undefined) this.#tallies.set(key, { units, window });
    else {
      tally.units += units;
      tally.window = window;
    }
    if (this.#flushTimer === undefined) {
      this.#flushTimer = setTimeout(() => {
        this.#flushTimer = undefined;
        void this.flush();
      }, this.#flushEveryMs);
      this.#flushTimer.unref?.();
    }
  }

  async withdraw(key: string, units: number, window: RetryBudgetWindow & { readonly id: string }) {
    const pending = this.#take(key);
    const reply = await runScript(
      this.#client,
      budgetWithdrawScript,
      [this.#ledgerKey(key), `${this.#ledgerKey(key)}:w:${window.id}`],
      [String(window.ttlMs), String(window.reserve), String(units), String(pending)],
      this.#timeoutMs,
    );
    return num(reply, 0) === 1;
  }

  async balance(key: string, window: RetryBudgetWindow): Promise<number> {
    const reply = await runScript(
      this.#client,
      budgetBalanceScript,
      [this.#ledgerKey(key)],
      [String(window.ttlMs), String(window.reserve)],
      this.#timeoutMs,
    );
    // Deposits still held here count too: they are this fleet's, only not sent yet.
    return Number(reply) + (this.#tallies.get(key)?.units ?? 0);
  }

  async flush(): Promise<void> {
    const sends = [...this.#tallies.keys()].map((key) => {
      const window = (this.#tallies.get(key) as Tally).window;
      const units = this.#take(key);
      return runScript(
        this.#client,
        budgetDepositScript,
        [this.#ledgerKey(key)],
        [String(window.ttlMs), String(units)],
        this.#timeoutMs,
      ).then(
        () => undefined,
        // Deposits Redis may not have taken are not sent again: a budget a little short for a
        // window is safer than one counted twice.
        () => undefined,
      );
    });
    await Promise.all(sends);
  }

  exchangeSketch(
    tool: string,
    delta: LatencySketchData,
    window: { readonly windowMs: number; readonly subWindows: number },
  ): Promise<LatencySketchData> {
    const exchange = this.#exchangeOf(tool);
    delta.counts.forEach((count, index) => {
      if (count > 0)
        exchange.pending.set(delta.offset + index, (exchange.pending.get(delta.offset + index) ?? 0) + count);
    });
    exchange.pendingZeros += delta.zeros;
    if (exchange.inFlight !== undefined) return exchange.inFlight;
    if (exchange.answer !== undefined && performance.now() - exchange.sentAt < this.#exchangeEveryMs) {
      return Promise.resolve(exchange.answer);
    }
    const sending = this.#sendSketch(tool, exchange, delta.relativeAccuracy, window).finally(() => {
      exchange.inFlight = undefined;
    });
    exchange.inFlight = sending;
    return sending;
  }

  async #sendSketch(
    tool: string,
    exchange: Exchange,
    relativeAccuracy: number,
    window: { readonly windowMs: number; readonly subWindows: number },
  ): Promise<LatencySketchData> {
    const args = [
      String(Math.ceil(window.windowMs)),
      String(window.subWindows),
      String(exchange.pendingZeros),
    ];
    for (const [bucket, count] of exchange.pending) args.push(String(bucket), String(count));
    // Sent once: counts Redis may not have taken are dropped, never counted twice.
    exchange.pending.clear();
    exchange.pendingZeros = 0;
    exchange.sentAt = performance.now();
    // Sketches merge only at one relative accuracy: each has its own window.
    const key = `${this.#prefix}:sk:{${tool}}:${relativeAccuracy}`;
    const reply = (await runScript(
      this.#client,
      sketchExchangeScript,
      [key],
      args,
      this.#timeoutMs,
    )) as unknown[];
    exchange.answer = sketchOf(reply, relativeAccuracy);
    return exchange.answer;
  }

  #exchangeOf(tool: string): Exchange {
    let exchange = this.#exchanges.get(tool);
    if (exchange === undefined) {
      if (this.#exchanges.size >= maxExchanges)
        this.#exchanges.delete(this.#exchanges.keys().next().value as string);
      exchange = { pending: new Map(), pendingZeros: 0, answer: undefined, sentAt: 0, inFlight: undefined };
      this.#exchanges.set(tool, exchange);
    }
    return exchange;
  }

  // The deposits held for `key`, now on their way (0 when none).
  #take(key: string): number {
    const tally = this.#tallies.get(key);
    if (tally === undefined) return 0;
    this.#tallies.delete(key);
    return tally.units;
  }

  #ledgerKey(key: string): string {
    return `${this.#prefix}:rb:{${key}}`;
  }
}

// The script's flat reply (zeros, then bucket and count pairs) as dense sketch data.
function sketchOf(reply: unknown[], relativeAccuracy: number): LatencySketchData {
  const zeros = num(reply, 0);
  const buckets = new Map<number, number>();
  for (let index = 1; index + 1 < reply.length; index += 2) {
    buckets.set(Number(text(reply, index)), num(reply, index + 1));
  }
  if (buckets.size === 0) return { relativeAccuracy, offset: 0, counts: [], zeros };
  const keys = [...buckets.keys()];
  const offset = Math.min(...keys);
  const counts = new Array<number>(Math.max(...keys) - offset + 1).fill(0);
  for (const [bucket, count] of buckets) counts[bucket - offset] = count;
  return { relativeAccuracy, offset, counts, zeros };
}

/**
 * Makes the autopilot's store on Redis: every process with the same `prefix` shares each retry
 * budget and each tool's latency window. A first attempt's deposit is tallied here and sent with
 * the next withdrawal of its budget or within `flushEveryMs` (no round trip on a first attempt);
 * a retry's withdrawal is one script (the tally, then the check and the take); a tool's window is
 * exchanged at most every `exchangeEveryMs`. Time is the server's. When Redis cannot answer, a
 * call rejects with `store_unavailable` and the autopilot runs that call on its static policy.
 *
 * @example
 * const pilot = autopilot({ store: redisAutopilotStore({ client: fromNodeRedis(client) }) });
 */
export function redisAutopilotStore(options: RedisAutopilotStoreOptions): RedisAutopilotStore {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('redisAutopilotStore: options must be an object with a client');
  }
  requireOptions(options, 'redisAutopilotStore', redisAutopilotStoreOptionKeys);
  if (typeof (options.client as StoreClient | undefined)?.evalScript !== 'function') {
    throw new TypeError(
      'redisAutopilotStore: client must be a StoreClient (use fromNodeRedis or fromIoredis)',
    );
  }
  return new FleetAutopilotStore({
    client: options.client,
    prefix: requirePrefix(options.prefix ?? 'td'),
    timeoutMs: requireMs('storeTimeoutMs', options.storeTimeoutMs ?? 1_000),
    flushEveryMs: requireMs('flushEveryMs', options.flushEveryMs ?? 100),
    exchangeEveryMs: requireMs('exchangeEveryMs', options.exchangeEveryMs ?? 1_000, 0),
  });
}
