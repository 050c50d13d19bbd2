/**
 * Autopilot: per-tool policies that tune themselves from what the tools do (a timeout from each
 * tool's live latency quantile, a retry budget), and say on every outcome what they did.
 * @module
 */

import { systemClock } from '../../src/clock.js';
import { trusted } from '../../src/internal/trusted.js';
import type { DeadlineClock, DispatchContext, Middleware, Next } from '../../src/types.js';
import {
  declareOutcomeField,
  optionKeys,
  optionsObject,
  requireClock,
  requireFunction,
  requireInteger,
  requireNumber,
} from '../kit.js';
import { hedgeScarceQuantile } from './hedge.js';
import { type HedgeSettings, ToolHedging } from './hedger.js';
import { memoryAutopilotStore } from './memory-store.js';
import { Pilot, type PilotSettings, type StaticDeadline, type TimeoutSettings } from './pilot.js';
import { type RetryBudget, type RetryBudgetOptions, retryBudget, storeRetryBudget } from './retry-budget.js';
import type { AutopilotStore } from './store.js';
import { type ConcurrencySettings, ToolSlots } from './tool-slots.js';
import { toolStats } from './tool-stats.js';

export type { AutopilotKnob, OutcomePolicy, PolicyBudgetState } from './policy.js';

declareOutcomeField('policy');

/** The timeout knob: `clamp(factor × quantile, minMs, the tool's timeoutMs)` once a tool has `minSamples`. */
export interface AutopilotTimeoutOptions {
  /** The latency quantile of successful attempts the timeout follows, in (0, 1). @default 0.999 */
  quantile?: number;
  /** What the quantile is multiplied by; at least 1. @default 1.5 */
  factor?: number;
  /** The shortest timeout the autopilot sets, in milliseconds. @default 50 */
  minMs?: number;
  /** Successful attempts in a tool's window before its timeout follows them. @default 200 */
  minSamples?: number;
}

/**
 * The hedge knob: for a tool declared `idempotent` or `readOnlyHint: true` (never any other), one
 * more attempt beside an attempt that has run past the tool's live `quantile`, within a budget.
 */
export interface AutopilotHedgeOptions {
  /** The latency quantile past which a hedge starts, in (0, 1). @default 0.95 */
  quantile?: number;
  /** The most extra attempts hedges may add, as a share of calls, in [0, 1]. @default 0.05 */
  maxExtraLoad?: number;
  /** Successful attempts in a tool's window before it is hedged. @default 200 */
  minSamples?: number;
}

/** The concurrency knob: a gradient controller per tool moves its limit between `min` and `max`. */
export interface AutopilotConcurrencyOptions {
  /** The lowest limit, an integer ≥ 1. @default 1 */
  min?: number;
  /** The highest limit, an integer ≥ `min`. @default 64 */
  max?: number;
}

/** The retry budget's options when the autopilot makes it: one budget per tool, in the autopilot's store. */
export type AutopilotRetryBudgetOptions = Pick<
  RetryBudgetOptions,
  'ratio' | 'minPerSecond' | 'ttlMs' | 'throttle'
>;

/** Options for `autopilot`. */
export interface AutopilotOptions {
  /** `enforce` acts; `shadow` decides and reports (events, `outcome.policy`) and changes nothing. @default 'enforce' */
  mode?: 'enforce' | 'shadow';
  /** The timeout knob, or `false` to leave every timeout static. @default {} (its defaults) */
  timeout?: AutopilotTimeoutOptions | false;
  /** Hedging of repeatable tools, or `false`. @default false */
  hedge?: AutopilotHedgeOptions | false;
  /** Adaptive concurrency per tool, or `false`. @default false */
  concurrency?: AutopilotConcurrencyOptions | false;
  /**
   * The retry budget the preset's `retry` draws from: options (a budget per tool, kept in
   * `store`), one `retryBudget()` shared by every tool, or `false`. @default { ratio: 0.2, minPerSecond: 10 }
   */
  retryBudget?: AutopilotRetryBudgetOptions | RetryBudget | false;
  /** Where the per-tool retry budgets keep their ledgers (a fleet shares one). @default memoryAutopilotStore({ clock }) */
  store?: AutopilotStore;
  /** The time source and timers: latencies, windows and the timeouts it sets. @default systemClock */
  clock?: DeadlineClock;
  /** Random numbers in [0, 1): the jitter of the concurrency probes. @default Math.random */
  random?: () => number;
}

const autopilotOptionKeys = optionKeys<AutopilotOptions>({
  mode: true,
  timeout: true,
  hedge: true,
  concurrency: true,
  retryBudget: true,
  store: true,
  clock: true,
  random: true,
});
const timeoutOptionKeys = optionKeys<AutopilotTimeoutOptions>({
  quantile: true,
  factor: true,
  minMs: true,
  minSamples: true,
});
const hedgeOptionKeys = optionKeys<AutopilotHedgeOptions>({
  quantile: true,
  maxExtraLoad: true,
  minSamples: true,
});
const concurrencyOptionKeys = optionKeys<AutopilotConcurrencyOptions>({ min: true, max: true });
const retryBudgetOptionKeys = optionKeys<AutopilotRetryBudgetOptions>({
  ratio: true,
  minPerSecond: true,
  ttlMs: true,
  throttle: true,
});

/** What the autopilot knows of one tool now. */
export interface AutopilotSnapshot {
  /** Successful attempts in the tool's window. */
  readonly samples: number;
  /** Latency quantiles of those attempts, in milliseconds (NaN with none). */
  readonly p50: number;
  /** The 95th percentile, in ms (NaN with none). */
  readonly p95: number;
  /** The 99th percentile, in ms (NaN with none). */
  readonly p99: number;
  /** The 99.9th percentile, in ms (NaN with none). */
  readonly p999: number;
  /** The timeout the autopilot sets now, in ms; `undefined` while the tool is static (too few samples, or at its cap). */
  readonly timeoutMs: number | undefined;
  /** When a hedge starts beside an attempt, in ms; `undefined` with hedging off, before `minSamples`, or for a tool that may not be hedged. */
  readonly hedgeAfterMs: number | undefined;
  /** The tool's concurrency limit now; `undefined` with the concurrency knob off or a tool not seen. */
  readonly concurrency: number | undefined;
  /** The tool's retry budget, when there is one: retries it allows now (`undefined` while a remote store answers later). */
  readonly retryBudget:
    | {
        /** Retries the budget allows now, in tokens; `undefined` while a remote store answers later. */
        readonly balance: number | undefined;
      }
    | undefined;
}

/** What the autopilot hands to `retry({ budget })`: its budget, told which call draws on it. */
export interface AutopilotRetryBudget {
  /**
   * Nothing: the autopilot layer pays into the tool's budget itself as a call's first attempt
   * passes it, on the clock reading it takes for the attempt. `retry` calls it for every call.
   */
  deposit(ctx: DispatchContext): void;
  /** Takes one retry's token for the call's tool; `false` when spent (enforce mode). */
  tryWithdraw(ctx: DispatchContext): Promise<boolean>;
}

/**
 * The autopilot layer (place it inside `retry`, after the rate limits, right outside `timeout`;
 * `defaultStack({ autopilot })` puts it in the timeout's place, giving the static deadline itself), with what it knows of each tool and the retry budget it
 * hands to `retry`.
 */
export interface Autopilot extends Middleware {
  /** `enforce` or `shadow`. */
  readonly mode: 'enforce' | 'shadow';
  /** The budget to give `retry({ budget })`, or `undefined` with `retryBudget: false`. */
  readonly retryBudget: AutopilotRetryBudget | undefined;
  /** What the autopilot knows of `tool` now. */
  snapshot(tool: string): AutopilotSnapshot;
}

/**
 * Makes the autopilot: per tool, a sliding window of successful attempt latencies (±1 %) and
 * outcomes; from it, each attempt's timeout (`clamp(factor × quantile, minMs, cap)`, only ever
 * tighter than the caller's or the tool's `timeoutMs`) and a retry budget (Finagle's: 20 % of
 * calls plus 10 a second) for the preset's `retry`. Every outcome it saw carries `policy`; a knob
 * that moves emits `autopilot.decision`; in `shadow` mode nothing changes and both say what would
 * have. With `hedge`, an attempt of an idempotent or read-only tool that outlives the tool's live
 * quantile gets one more attempt beside it (the first success wins, within `maxExtraLoad` of
 * calls); with `concurrency`, each tool's calls in flight follow a gradient controller's limit.
 *
 * @example
 * const pilot = autopilot({
 *   timeout: { quantile: 0.999, factor: 1.5, minMs: 50, minSamples: 200 },
 *   hedge: { quantile: 0.95, maxExtraLoad: 0.05, minSamples: 200 },
 *   concurrency: { min: 1, max: 64 },
 * });
 * const dispatcher = createDispatcher(defaultStack({ registry, autopilot: pilot }));
 * pilot.snapshot('search.web'); // { samples, p50, …, timeoutMs, retryBudget: { balance } }
 */
export function autopilot(options?: AutopilotOptions): Autopilot {
  const given = optionsObject('autopilot', options, autopilotOptionKeys);
  const mode = given.mode ?? 'enforce';
  if (mode !== 'enforce' && mode !== 'shadow') {
    throw new TypeError(`mode must be 'enforce' or 'shadow', got ${String(mode)}`);
  }
  const clock = given.clock ?? systemClock;
  requireClock(clock, ['now', 'setTimeout', 'clearTimeout']);
  const random = requireFunction('random', given.random ?? Math.random);
  const timeout = timeoutSettingsOf(given.timeout);
  const hedge = hedgeSettingsOf(given.hedge, timeout === undefined ? 0 : 1);
  const concurrency = concurrencySettingsOf(given.concurrency);
  if (given.store !== undefined) requireStore(given.store);
  const quantiles: number[] = [];
  if (timeout !== undefined) quantiles.push(timeout.quantile);
  // The hedge's live quantile, and right after it the one it waits for when its budget runs dry.
  if (hedge !== undefined) quantiles.push(hedge.quantile, hedgeScarceQuantile(hedge.quantile));
  const settings: PilotSettings = {
    mode,
    clock,
    timeout,
    hedge,
    stats: toolStats({
      clock,
      quantiles,
      // A fleet's store merges tools' windows: every worker tunes on every worker's calls.
      ...(given.store?.exchangeSketch === undefined
        ? {}
        : { exchange: given.store.exchangeSketch.bind(given.store) }),
    }),
    budget: budgetSettingsOf(given.retryBudget, given.store, clock),
  };
  const pilot = new Pilot(settings, {
    ...(hedge === undefined ? {} : { hedging: new ToolHedging(hedge, settings.stats, mode, clock) }),
    ...(concurrency === undefined ? {} : { concurrency: new ToolSlots(concurrency, clock, random) }),
  });
  const layer = trusted(function autopilot(ctx: DispatchContext, next: Next): Promise<void> {
    return pilot.run(ctx, next);
  });
  const budget: AutopilotRetryBudget | undefined =
    settings.budget === undefined
      ? undefined
      : { deposit: noDeposit, tryWithdraw: (ctx) => pilot.tryWithdraw(ctx) };
  const made: Autopilot = Object.assign(layer, {
    mode,
    retryBudget: budget,
    snapshot: (tool: string): AutopilotSnapshot => {
      const known = pilot.snapshot(tool);
      const balance = known.budget?.balance();
      // A remote store's answer comes later and is not waited for: its failure is nobody's.
      if (typeof balance === 'object') balance.catch(() => undefined);
      return {
        samples: known.samples,
        p50: known.p50,
        p95: known.p95,
        p99: known.p99,
        p999: known.p999,
        timeoutMs: known.timeoutMs,
        hedgeAfterMs: known.hedgeAfterMs,
        concurrency: known.concurrency,
        retryBudget:
          known.budget === undefined
            ? undefined
            : { balance: typeof balance === 'number' ? balance : undefined },
      };
    },
  });
  pilots.set(made, pilot);
  return made;
}

// What each `autopilot()` runs on, for `autopilotInTimeoutPlace`.
const pilots = new WeakMap<Autopilot, Pilot>();

const noDeposit = (): void => undefined;

/**
 * `pilot` in the timeout layer's place, as `defaultStack` puts it: the same autopilot (its windows,
 * budgets and snapshot), which also gives every attempt the timeout layer's static deadline (the
 * call's or the tool's `timeoutMs`, else `deadline.defaultMs`, a tool's idle timeout as the timeout
 * layer gives it) and tightens it to the tool's own once it has one. An attempt then runs under
 * one deadline, not two: the timeout layer's limit was a third of a bare dispatch, and the
 * autopilot's under it as much again.
 * @internal
 */
export function autopilotInTimeoutPlace(pilot: Autopilot, deadline: StaticDeadline): Middleware {
  const own = pilots.get(pilot);
  if (own === undefined) throw new TypeError('defaultStack() autopilot must be an autopilot()');
  return trusted(function autopilot(ctx: DispatchContext, next: Next): Promise<void> {
    return own.run(ctx, next, deadline);
  });
}

function timeoutSettingsOf(given: AutopilotTimeoutOptions | false | undefined): TimeoutSettings | undefined {
  if (given === false) return undefined;
  const options = optionsObject('autopilot() timeout', given, timeoutOptionKeys);
  const quantile = requireQuantile('timeout.quantile', options.quantile ?? 0.999);
  const factor = requireNumber('timeout.factor', options.factor ?? 1.5, 1);
  const minMs = requireNumber('timeout.minMs', options.minMs ?? 50, 0, { exclusive: true });
  const minSamples = requireInteger('timeout.minSamples', options.minSamples ?? 200, 1);
  return { quantile, factor, minMs, minSamples };
}

function requireQuantile(name: string, value: unknown): number {
  if (typeof value !== 'number' || !(value > 0 && value < 1)) {
    throw new TypeError(`${name} must be a number in (0, 1), got ${String(value)}`);
  }
  return value;
}

function hedgeSettingsOf(
  given: AutopilotHedgeOptions | false | undefined,
  at: number,
): HedgeSettings | undefined {
  if (given === undefined || given === false) return undefined;
  if (typeof given !== 'object' || given === null) {
    throw new TypeError(`hedge must be an options object or false, got ${String(given)}`);
  }
  const options = optionsObject('autopilot() hedge', given, hedgeOptionKeys);
  const quantile = requireQuantile('hedge.quantile', options.quantile ?? 0.95);
  const maxExtraLoad = options.maxExtraLoad ?? 0.05;
  if (typeof maxExtraLoad !== 'number' || !(maxExtraLoad >= 0 && maxExtraLoad <= 1)) {
    throw new TypeError(`hedge.maxExtraLoad must be a number in [0, 1], got ${String(maxExtraLoad)}`);
  }
  const minSamples = requireInteger('hedge.minSamples', options.minSamples ?? 200, 1);
  return { quantile, maxExtraLoad, minSamples, at };
}

function concurrencySettingsOf(
  given: AutopilotConcurrencyOptions | false | undefined,
): ConcurrencySettings | undefined {
  if (given === undefined || given === false) return undefined;
  if (typeof given !== 'object' || given === null) {
    throw new TypeError(`concurrency must be an options object or false, got ${String(given)}`);
  }
  const options = optionsObject('autopilot() concurrency', given, concurrencyOptionKeys);
  const min = requireInteger('concurrency.min', options.min ?? 1, 1);
  const max = requireInteger('concurrency.max', options.max ?? 64, 1);
  if (min > max) throw new TypeError(`concurrency.min must be at most concurrency.max, got ${min} > ${max}`);
  return { min, max };
}

function requireStore(store: unknown): void {
  for (const method of ['deposit', 'withdraw', 'balance'] as const) {
    if (typeof (store as Record<string, unknown> | null)?.[method] !== 'function') {
      throw new TypeError(`store must be an AutopilotStore (missing ${method})`);
    }
  }
}

function budgetSettingsOf(
  given: AutopilotRetryBudgetOptions | RetryBudget | false | undefined,
  store: AutopilotStore | undefined,
  clock: DeadlineClock,
): PilotSettings['budget'] {
  if (given === false) return undefined;
  if (typeof given === 'object' && given !== null && 'tryWithdraw' in given) {
    for (const method of ['deposit', 'tryWithdraw', 'balance'] as const) {
      if (typeof given[method] !== 'function') {
        throw new TypeError(
          `retryBudget must be retryBudget() options, a retryBudget() or false (missing ${method})`,
        );
      }
    }
    if (store !== undefined) {
      throw new TypeError('store is for the budgets autopilot makes: give a retryBudget() its own store');
    }
    return { shared: given };
  }
  const options = optionsObject('autopilot() retryBudget', given, retryBudgetOptionKeys);
  const ledger = store ?? memoryAutopilotStore({ clock });
  // The autopilot's clock times each budget's throttle window (and the memory ledger's).
  const shape: RetryBudgetOptions = {
    clock,
    store: ledger,
    ratio: options.ratio ?? 0.2,
    minPerSecond: options.minPerSecond ?? 10,
  };
  if (options.ttlMs !== undefined) shape.ttlMs = options.ttlMs;
  if (options.throttle !== undefined) shape.throttle = options.throttle;
  // Checked once here, so a bad value fails at autopilot(), not at a tool's first retry.
  retryBudget({ ...shape, key: 'retry' });
  return { perTool: (tool) => storeRetryBudget({ ...shape, key: `retry:${tool}` }) };
}
