// A chaos tool fixture: a handler that injects faults, latency, hangs and late settlements, and counts what ran.

import { TransientError, type ToolContext, type ToolHandler } from '../../index.js';

/** What one handler attempt does. */
export type FaultKind =
  /** Resolves (after `delayMs`) with the wrapped handler's result. */
  | 'ok'
  /** Rejects (after `delayMs`) with a `TransientError`: the retry layer retries it. */
  | 'transient'
  /** Rejects (after `delayMs`) with a plain `Error`: `internal`, never retried. */
  | 'error'
  /** Rejects (after `delayMs`) with something that is not an `Error` (a string by default). */
  | 'throw-value'
  /** Throws synchronously, before returning anything (a plain `Error` by default). */
  | 'sync-throw'
  /** Never settles and ignores its signal, like a stuck socket. */
  | 'hang';

/** One injected fault. */
export interface Fault {
  /** What the attempt does. */
  kind: FaultKind;
  /**
   * Milliseconds before the attempt settles; a delay past the attempt's timeout is a late
   * settlement (the handler ignores its signal unless `honorSignal`). Ignored by `sync-throw`
   * and `hang`. When omitted, the fixture's `delayMs` applies.
   */
  delayMs?: number;
  /**
   * Reject with `signal.reason` as soon as the attempt's signal aborts, as `fetch` does.
   * @default false (the handler ignores its signal)
   */
  honorSignal?: boolean;
  /** What `throw-value` and `sync-throw` throw. */
  value?: unknown;
  /** `retryAfterMs` of the `TransientError` a `transient` fault throws. */
  retryAfterMs?: number;
}

/** What a schedule function is told about the attempt it decides. */
export interface ChaosCall<Args = unknown> {
  /** The parsed args. */
  args: Args;
  /** The handler's context: signal, attempt, idempotency key, call id. */
  ctx: ToolContext;
  /** 0-based index of this attempt among all attempts of this fixture. */
  index: number;
}

/** The probability of each fault kind per attempt; the rest of the mass is `ok`. */
export type FaultRates = Partial<Record<Exclude<FaultKind, 'ok'>, number>>;

/** Options for `chaos`. */
export interface ChaosOptions<Args = unknown, Result = unknown> {
  /**
   * The real handler to wrap: an `ok` attempt returns what it returns.
   * @default a receipt `{ callId, attempt, key }`
   */
  handler?: ToolHandler<Args, Result>;
  /**
   * An explicit plan: faults consumed in attempt order (then `ok`), or a function choosing
   * the fault of each attempt. Takes precedence over `rates`.
   */
  schedule?: readonly Fault[] | ((call: ChaosCall<Args>) => Fault);
  /** Fault probabilities per attempt, drawn with `random`. */
  rates?: FaultRates;
  /**
   * The random source for `rates`; inject a seeded one for reproducible runs.
   * @default Math.random
   */
  random?: () => number;
  /**
   * Default latency of an attempt in milliseconds, or a function of the attempt.
   * @default 0 (settles on a microtask, no timer)
   */
  delayMs?: number | ((call: ChaosCall<Args>) => number);
  /**
   * How the fixture waits `ms > 0`. The default uses the global `setTimeout`, looked up on each
   * call, so `vi.useFakeTimers()` drives it; pass `() => new Promise(r => setImmediate(r))` for
   * real-timer soak runs.
   */
  wait?: (ms: number) => Promise<void>;
  /**
   * Keep a `ChaosRecord` of every attempt in `records` (for invariant checks after a run).
   * Off by default so long runs hold no memory per attempt.
   * @default false
   */
  record?: boolean;
  /**
   * The time stamped on records.
   * @default Date.now
   */
  now?: () => number;
  /**
   * Called at each attempt's entry, after the counters moved. Whatever it throws becomes that
   * attempt's failure, so record violations here and assert on them after the run.
   */
  onEnter?: (call: ChaosCall<Args>, stats: ChaosStats) => void;
}

/** Counters of a chaos fixture. */
export interface ChaosStats {
  /** Handler attempts started. */
  entries: number;
  /** Handler attempts that settled (returned, resolved, rejected or threw), late ones included. */
  exits: number;
  /** `entries - exits`: handlers still running in reality (hung and late ones included). */
  running: number;
  /** The highest `running` seen. */
  maxRunning: number;
  /**
   * Attempts the dispatcher still considers running: entered, not settled, signal not aborted.
   * This is what a concurrency cap bounds, since a timed-out attempt frees its slot.
   */
  open: number;
  /** The highest `open` seen. */
  maxOpen: number;
  /** Attempts per fault kind. */
  faults: Record<FaultKind, number>;
}

/** One attempt, as recorded when `record: true`. */
export interface ChaosRecord<Args = unknown> {
  /** 0-based attempt index in this fixture; also its order of entry. */
  index: number;
  /** A global sequence number for the entry, shared by every fixture (orders events across tools). */
  enterSeq: number;
  /** The dispatch's call id. */
  callId: string;
  /** The attempt number within its dispatch, 1-based. */
  attempt: number;
  /** The idempotency key, if any. */
  key: string | undefined;
  /** The parsed args. */
  args: Args;
  /** The fault injected. */
  fault: Fault;
  /** The signal the attempt received. */
  signal: AbortSignal;
  /** `now()` at entry. */
  enteredAt: number;
  /** `now()` when the handler settled; `undefined` while it runs (forever for `hang`). */
  exitedAt?: number;
  /** Global sequence number of the settlement. */
  exitSeq?: number;
  /** Whether the handler resolved (true) or threw/rejected (false). */
  resolved?: boolean;
  /** What it resolved to. */
  result?: unknown;
  /** `now()` when the attempt's signal aborted while the handler was still running. */
  abortedAt?: number;
  /** Global sequence number of that abort. */
  abortSeq?: number;
  /** The abort reason (the dispatcher's `timeout` envelope, or the caller's reason). */
  abortReason?: unknown;
}

/** A chaos fixture: register `handler` as a tool's handler and read `stats` and `records`. */
export interface ChaosTool<Args = unknown, Result = unknown> {
  /** The faulty handler. */
  readonly handler: ToolHandler<Args, Result>;
  /** A snapshot of the counters. */
  readonly stats: ChaosStats;
  /** Every attempt, when `record: true` (else empty). */
  readonly records: ReadonlyArray<ChaosRecord<Args>>;
  /** Zeroes the counters and forgets the records. */
  reset(): void;
}

let globalSeq = 0;

/** The next value of the sequence shared by every chaos fixture; stamp your own events with it. */
export function nextSeq(): number {
  return ++globalSeq;
}

const defaultWait = (ms: number): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, ms);
  });

/**
 * Makes a faulty tool handler. Each attempt gets a fault from `schedule`, else from `rates`
 * (drawn with `random`), else `ok`; it then waits its latency and settles accordingly, ignoring
 * its signal unless the fault says `honorSignal`.
 *
 * @example
 * const flaky = chaos({ rates: { transient: 0.2, hang: 0.05 }, random: mulberry32(42), delayMs: 5 });
 * registry.register({ name: 'search.web', inputSchema: z.object({ q: z.string() }), handler: flaky.handler });
 * // … dispatch …
 * expect(flaky.stats.maxOpen).toBeLessThanOrEqual(8);
 */
export function chaos<Args = unknown, Result = unknown>(
  options: ChaosOptions<Args, Result> = {},
): ChaosTool<Args, Result> {
  const {
    handler: wrapped,
    schedule,
    rates = {},
    random = Math.random,
    delayMs = 0,
    wait = defaultWait,
    record = false,
    now = Date.now,
    onEnter,
  } = options;
  const rateEntries = Object.entries(rates) as Array<[Exclude<FaultKind, 'ok'>, number]>;
  const rateTotal = rateEntries.reduce((sum, [, rate]) => sum + rate, 0);
  if (rateTotal > 1 || rateEntries.some(([, rate]) => !(rate >= 0))) {
    throw new TypeError('chaos(): rates must be >= 0 and sum to at most 1');
  }

  let stats = emptyStats();
  let records: Array<ChaosRecord<Args>> = [];
  // Attempts whose signal has not aborted and which have not settled; one token per attempt,
  // since attempts without a timeout may share a signal (the caller's, or none at all).
  let live = new Set<{ signal: AbortSignal }>();
  let planIndex = 0;

  const pick = (call: ChaosCall<Args>): Fault => {
    if (typeof schedule === 'function') return schedule(call);
    if (schedule !== undefined) return schedule[planIndex++] ?? { kind: 'ok' };
    if (rateTotal === 0) return { kind: 'ok' };
    let u = random();
    for (const [kind, rate] of rateEntries) {
      if (u < rate) return { kind };
      u -= rate;
    }
    return { kind: 'ok' };
  };

  const countOpen = (): number => {
    for (const token of live) if (token.signal.aborted) live.delete(token);
    return live.size;
  };

  const handler = (args: Args, ctx: ToolContext): Result | Promise<Result> => {
    const call: ChaosCall<Args> = { args, ctx, index: stats.entries };
    const fault = pick(call);
    stats.entries += 1;
    stats.faults[fault.kind] += 1;
    stats.running += 1;
    stats.maxRunning = Math.max(stats.maxRunning, stats.running);
    const token = { signal: ctx.signal };
    live.add(token);
    stats.open = countOpen();
    stats.maxOpen = Math.max(stats.maxOpen, stats.open);

    let entry: ChaosRecord<Args> | undefined;
    let onAbort: (() => void) | undefined;
    if (record) {
      entry = {
        index: call.index,
        enterSeq: nextSeq(),
        callId: ctx.callId,
        attempt: ctx.attempt,
        key: ctx.idempotencyKey,
        args,
        fault,
        signal: ctx.signal,
        enteredAt: now(),
      };
      records.push(entry);
      const stamped = entry;
      onAbort = () => {
        stamped.abortedAt = now();
        stamped.abortSeq = nextSeq();
        stamped.abortReason = ctx.signal.reason;
      };
      if (ctx.signal.aborted) onAbort();
      else ctx.signal.addEventListener('abort', onAbort, { once: true });
    }

    const exit = (resolved: boolean, result?: unknown) => {
      stats.exits += 1;
      stats.running -= 1;
      live.delete(token);
      stats.open = countOpen();
      if (entry !== undefined) {
        entry.exitedAt = now();
        entry.exitSeq = nextSeq();
        entry.resolved = resolved;
        if (resolved) entry.result = result;
        if (onAbort !== undefined) ctx.signal.removeEventListener('abort', onAbort);
      }
    };

    if (onEnter !== undefined) onEnter(call, snapshot(stats));

    if (fault.kind === 'sync-throw') {
      exit(false);
      throw fault.value ?? new Error(`chaos: synchronous throw in attempt ${ctx.attempt}`);
    }
    if (fault.kind === 'hang') return new Promise<Result>(() => {});

    const ms = fault.delayMs ?? (typeof delayMs === 'function' ? delayMs(call) : delayMs);
    const settle = async (): Promise<Result> => {
      await (ms > 0 ? wait(ms) : Promise.resolve());
      switch (fault.kind) {
        case 'transient':
          throw new TransientError(
            `chaos: transient failure in attempt ${ctx.attempt}`,
            fault.retryAfterMs === undefined ? {} : { retryAfterMs: fault.retryAfterMs },
          );
        case 'error':
          throw new Error(`chaos: failure in attempt ${ctx.attempt}`);
        case 'throw-value':
          throw 'value' in fault ? fault.value : `chaos: thrown string in attempt ${ctx.attempt}`;
        default:
          return wrapped === undefined ? (receipt(ctx) as Result) : await wrapped(args, ctx);
      }
    };
    let settled = settle();
    if (fault.honorSignal === true) settled = honor(settled, ctx.signal);
    return settled.then(
      (result) => {
        exit(true, result);
        return result;
      },
      (error: unknown) => {
        exit(false);
        throw error;
      },
    );
  };

  return {
    handler,
    get stats() {
      stats.open = countOpen();
      return snapshot(stats);
    },
    get records() {
      return records;
    },
    reset() {
      stats = emptyStats();
      records = [];
      live = new Set();
      planIndex = 0;
    },
  };
}

/** What a default `ok` attempt resolves to: which call and attempt produced it. */
export interface Receipt {
  callId: string;
  attempt: number;
  key: string | undefined;
}

function receipt(ctx: ToolContext): Receipt {
  return { callId: ctx.callId, attempt: ctx.attempt, key: ctx.idempotencyKey };
}

function honor<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener('abort', abort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', abort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', abort);
        reject(error);
      },
    );
  });
}

function emptyStats(): ChaosStats {
  return {
    entries: 0,
    exits: 0,
    running: 0,
    maxRunning: 0,
    open: 0,
    maxOpen: 0,
    faults: { ok: 0, transient: 0, error: 0, 'throw-value': 0, 'sync-throw': 0, hang: 0 },
  };
}

function snapshot(stats: ChaosStats): ChaosStats {
  return { ...stats, faults: { ...stats.faults } };
}

/**
 * A small seeded random source in [0, 1) (mulberry32), for reproducible `rates` and retry jitter.
 *
 * @example
 * retry({ random: mulberry32(7) });
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
