/**
 * The autopilot's concurrency controller: a per-tool limit moved by the gradient between the
 * tool's minimum round trip and its sampled median (Envoy's adaptive-concurrency controller), so a
 * tool's slots follow what its backend can take.
 * @module
 */

import type { Clock } from '../../src/clock.js';
import { systemClock } from '../../src/clock.js';
import {
  optionKeys,
  optionsObject,
  requireClock,
  requireFunction,
  requireInteger,
  requireNumber,
} from '../kit.js';

/** Why the limit moved. */
export type GradientLimitChange = 'gradient' | 'probe_start' | 'probe_end';

/** Options for `GradientLimit`. */
export interface GradientLimitOptions {
  /** The lowest limit. @default 1 */
  min?: number;
  /** The highest limit. @default 64 */
  max?: number;
  /** The limit before anything is learnt, restored after the first probe. @default 8, clamped to [min, max] */
  initialLimit?: number;
  /** How long a sample window lasts, in milliseconds, before its quantile moves the limit. @default 1_000 */
  windowMs?: number;
  /** The fewest samples a window needs before it closes (it stays open until it has them). @default 5 */
  minWindowSamples?: number;
  /** The quantile of a window's round trips compared with the minimum round trip. @default 0.5 */
  quantile?: number;
  /** Latency tolerated above the minimum round trip, as a share of it, before the limit falls. @default 0.25 */
  minRttBuffer?: number;
  /** How often the minimum round trip is probed again, in milliseconds (plus jitter). @default 60_000 */
  probeIntervalMs?: number;
  /** The most a probe's interval is lengthened at random, as a share of it (fleets do not probe in step). @default 0.15 */
  probeJitter?: number;
  /** The limit while the minimum round trip is probed. @default 3, clamped to [min, max] */
  probeLimit?: number;
  /** Round trips a probe measures (only of calls started once it began). @default 50 */
  probeSamples?: number;
  /**
   * Probe on quiet calls instead of lowering the limit: a probe takes the round trips of calls
   * that ended with at most `probeLimit` in flight (as `record`'s `inFlight` says), which measure
   * the minimum as well without holding every other call back, for as long as it takes them to
   * come (answers slower than the minimum allows lower the limit meanwhile, and the calls it then
   * lets through are quiet). Until the first probe has them, the lowest `quantile` of a window
   * stands for the minimum. `false`: every probe holds the limit at `probeLimit` (Envoy's).
   * @default false
   */
  probeQuietCalls?: boolean;
  /** Random numbers in [0, 1) for the jitter and the window's reservoir. @default Math.random */
  random?: () => number;
  /** The time source. @default systemClock */
  clock?: Pick<Clock, 'now'>;
  /** Called when the limit moves, with the new limit and why (an `autopilot.decision` to report). */
  onChange?: (limit: number, reason: GradientLimitChange) => void;
}

const gradientLimitOptionKeys = optionKeys<GradientLimitOptions>({
  min: true,
  max: true,
  initialLimit: true,
  windowMs: true,
  minWindowSamples: true,
  quantile: true,
  minRttBuffer: true,
  probeIntervalMs: true,
  probeJitter: true,
  probeLimit: true,
  probeSamples: true,
  probeQuietCalls: true,
  random: true,
  clock: true,
  onChange: true,
});

// Envoy's bounds on one window's gradient: the limit at most halves or doubles per window.
const minGradient = 0.5;
const maxGradient = 2;
// A window keeps at most this many round trips (a uniform reservoir past it): bounded memory.
const maxWindowSamples = 1_024;

/** The settings of a `GradientLimit`, checked. */
interface GradientSettings {
  readonly min: number;
  readonly max: number;
  readonly windowMs: number;
  readonly minWindowSamples: number;
  readonly quantile: number;
  readonly minRttBuffer: number;
  readonly probeIntervalMs: number;
  readonly probeJitter: number;
  readonly probeLimit: number;
  readonly probeSamples: number;
  readonly probeQuietCalls: boolean;
  readonly random: () => number;
  readonly clock: Pick<Clock, 'now'>;
  readonly onChange: ((limit: number, reason: GradientLimitChange) => void) | undefined;
}

function checkedSettings(options: GradientLimitOptions | undefined): GradientSettings & { initial: number } {
  const given = optionsObject('GradientLimit', options, gradientLimitOptionKeys);
  const min = requireInteger('min', given.min ?? 1, 1);
  const max = requireInteger('max', given.max ?? 64, 1);
  if (min > max) throw new TypeError(`min must be <= max, got min ${min} and max ${max}`);
  const clamp = (value: number) => Math.min(max, Math.max(min, value));
  const initial = requireNumber('initialLimit', given.initialLimit ?? clamp(8), 1);
  if (initial < min || initial > max) {
    throw new TypeError(`initialLimit must be within [min, max] = [${min}, ${max}], got ${initial}`);
  }
  const quantile = requireNumber('quantile', given.quantile ?? 0.5, 0, { exclusive: true });
  if (quantile >= 1) throw new TypeError(`quantile must be a number in (0, 1), got ${quantile}`);
  const probeJitter = requireNumber('probeJitter', given.probeJitter ?? 0.15, 0);
  if (probeJitter > 1) throw new TypeError(`probeJitter must be a number in [0, 1], got ${probeJitter}`);
  const probeQuietCalls = given.probeQuietCalls ?? false;
  if (typeof probeQuietCalls !== 'boolean') {
    throw new TypeError(`probeQuietCalls must be a boolean, got ${String(probeQuietCalls)}`);
  }
  const clock = given.clock ?? systemClock;
  requireClock(clock, ['now']);
  if (given.onChange !== undefined) requireFunction('onChange', given.onChange);
  return {
    min,
    max,
    initial,
    windowMs: requireNumber('windowMs', given.windowMs ?? 1_000, 0, { exclusive: true }),
    minWindowSamples: requireInteger('minWindowSamples', given.minWindowSamples ?? 5, 1),
    quantile,
    minRttBuffer: requireNumber('minRttBuffer', given.minRttBuffer ?? 0.25, 0),
    probeIntervalMs: requireNumber('probeIntervalMs', given.probeIntervalMs ?? 60_000, 0, {
      exclusive: true,
    }),
    probeJitter,
    probeLimit: clamp(requireInteger('probeLimit', given.probeLimit ?? 3, 1)),
    probeSamples: requireInteger('probeSamples', given.probeSamples ?? 50, 1),
    probeQuietCalls,
    random: requireFunction('random', given.random ?? Math.random),
    clock,
    onChange: given.onChange,
  };
}

/** The `q` quantile of `samples` by nearest rank (sorts them in place). */
function quantileOf(samples: number[], q: number): number {
  samples.sort((a, b) => a - b);
  return samples[Math.max(0, Math.ceil(q * samples.length) - 1)] as number;
}

/**
 * An adaptive concurrency limit for one tool, of Envoy's shape. It starts by probing the minimum
 * round trip: the limit drops to `probeLimit` until `probeSamples` calls started in the probe have
 * answered, and their `quantile` is the minimum round trip. With `probeQuietCalls`, a probe
 * lowers nothing: it takes the round trips of calls that ended with at most `probeLimit` in
 * flight (no queue of ours), and until the first has them the lowest window stands for the
 * minimum. Envoy's probe holds every call of a busy tool behind three slots until its slowest
 * calls drain, which on a tool at 25 calls a second tripled its p99. Then every window (`windowMs`, at least
 * `minWindowSamples` round trips) sets
 * `limit = clamp(limit × g + √(limit × g), min, max)` with
 * `g = clamp(minRtt × (1 + minRttBuffer) / quantile of the window, 0.5, 2)`: while calls answer near
 * the minimum the limit grows by its square root, and once a backend queues them it falls. Every
 * `probeIntervalMs` (lengthened by up to `probeJitter` at random) the probe runs again, so a
 * backend that got slower for good gets a new minimum and not a limit squeezed to `min`.
 * `record` does the work: no timer, nothing to close.
 *
 * @example
 * const limit = new GradientLimit({ min: 1, max: 64 });
 * const slots = new LimitSemaphore(() => limit.limit);
 * const release = await slots.acquire(signal);
 * const startedAt = clock.now();
 * try { await callTool(); limit.record(clock.now() - startedAt); } finally { release(); }
 */
export class GradientLimit {
  readonly #settings: GradientSettings;
  #estimate: number;
  #minRttMs: number | undefined;
  /** A probe is under way: waiting for quiet round trips, or (`#lowered`) at `probeLimit`. */
  #probing = true;
  #lowered: boolean;
  /** Whether `#minRttMs` is a probe's (not the lowest window's, standing in until one ends). */
  #measured = false;
  #probeStartedAt: number;
  #nextProbeAt = Infinity;
  #windowStartedAt: number;
  #windowSeen = 0;
  #samples: number[] = [];
  #probeSamples: number[] = [];

  constructor(options?: GradientLimitOptions) {
    const { initial, ...settings } = checkedSettings(options);
    this.#settings = settings;
    this.#estimate = initial;
    this.#lowered = !settings.probeQuietCalls;
    this.#probeStartedAt = settings.clock.now();
    this.#windowStartedAt = this.#probeStartedAt;
  }

  /** The number of calls allowed at once now (the probe's limit while a probe holds it there). */
  get limit(): number {
    return this.#lowered ? this.#settings.probeLimit : Math.floor(this.#estimate);
  }

  /**
   * The measured minimum round trip in milliseconds, or `undefined` before the first probe ends
   * (with `probeQuietCalls`, the lowest window's `quantile` until then).
   */
  get minRttMs(): number | undefined {
    return this.#minRttMs;
  }

  /** Whether the minimum round trip is being probed (waiting for quiet calls, or at `probeLimit`). */
  get probing(): boolean {
    return this.#probing;
  }

  /**
   * Takes the round trip of a call that just answered (a success: a failure's latency says little
   * of the backend's queue), and closes the window or the probe when it is complete. `now` is the
   * clock's reading, for a caller that has just taken it; `inFlight`, the calls in flight as it
   * ended (itself included), lets a probe use it without lowering the limit (see `probeQuietCalls`).
   */
  record(rttMs: number, now?: number, inFlight?: number): void {
    if (typeof rttMs !== 'number' || !Number.isFinite(rttMs) || rttMs < 0) return;
    if (now === undefined) now = this.#settings.clock.now();
    if (this.#probing) {
      this.#recordProbe(rttMs, now, inFlight);
      // At `probeLimit` the calls are the probe's alone.
      if (this.#probing && this.#lowered) return;
    }
    this.#keep(rttMs);
    const { windowMs, minWindowSamples } = this.#settings;
    if (now - this.#windowStartedAt < windowMs || this.#samples.length < minWindowSamples) return;
    this.#closeWindow(now);
  }

  #recordProbe(rttMs: number, now: number, inFlight: number | undefined): void {
    const { probeLimit, probeSamples, quantile } = this.#settings;
    // A call started before the probe ran at the old limit: its queueing is no minimum. Without
    // the limit lowered, only a call that ended with few in flight ran without a queue of ours.
    const quiet = this.#lowered || (inFlight !== undefined && inFlight <= probeLimit);
    if (!quiet || now - rttMs < this.#probeStartedAt) return;
    this.#probeSamples.push(rttMs);
    if (this.#probeSamples.length < probeSamples) return;
    const wasLowered = this.#lowered;
    this.#minRttMs = quantileOf(this.#probeSamples, quantile);
    this.#measured = true;
    this.#probeSamples = [];
    this.#probing = false;
    this.#lowered = false;
    const { probeIntervalMs, probeJitter, random } = this.#settings;
    this.#nextProbeAt = now + probeIntervalMs * (1 + probeJitter * random());
    if (wasLowered) {
      this.#startWindow(now);
      this.#settings.onChange?.(this.limit, 'probe_end');
    }
  }

  // A uniform reservoir once the window is full, so a busy tool's window stays bounded.
  #keep(rttMs: number): void {
    this.#windowSeen++;
    if (this.#samples.length < maxWindowSamples) {
      this.#samples.push(rttMs);
      return;
    }
    const slot = Math.floor(this.#settings.random() * this.#windowSeen);
    if (slot < maxWindowSamples) this.#samples[slot] = rttMs;
  }

  #closeWindow(now: number): void {
    const { min, max, minRttBuffer, quantile } = this.#settings;
    const sampled = quantileOf(this.#samples, quantile);
    if (!this.#measured) {
      // Until a probe has measured it, the best window yet stands for the minimum (the first only sets it).
      const first = this.#minRttMs === undefined;
      this.#minRttMs = Math.min(this.#minRttMs ?? Infinity, sampled);
      if (first) return this.#startWindow(now);
    }
    const target = (this.#minRttMs as number) * (1 + minRttBuffer);
    // A window of instant answers (0 ms) is as good as it gets: the limit may grow.
    const gradient =
      sampled === 0 ? maxGradient : Math.min(maxGradient, Math.max(minGradient, target / sampled));
    const before = this.limit;
    const scaled = this.#estimate * gradient;
    // The square root is the headroom: it lets the limit climb while latency stays at the minimum.
    this.#estimate = Math.min(max, Math.max(min, scaled + Math.sqrt(scaled)));
    this.#startWindow(now);
    if (!this.#probing && now >= this.#nextProbeAt) {
      this.#probing = true;
      this.#probeStartedAt = now;
      this.#lowered = !this.#settings.probeQuietCalls;
    }
    if (this.#lowered) this.#settings.onChange?.(this.limit, 'probe_start');
    else if (this.limit !== before) this.#settings.onChange?.(this.limit, 'gradient');
  }

  #startWindow(now: number): void {
    this.#samples = [];
    this.#windowSeen = 0;
    this.#windowStartedAt = now;
  }
}
