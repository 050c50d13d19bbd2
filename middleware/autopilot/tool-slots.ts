/**
 * The autopilot's adaptive concurrency: per tool, a `GradientLimit` and the slots it sizes, so a
 * tool's calls in flight follow what its backend can take.
 * @module
 */

import type { Clock } from '../../src/clock.js';
import { isDispatchError } from '../../src/errors.js';
import type { DispatchContext } from '../../src/types.js';
import { cancelled } from '../kit.js';
import { GradientLimit, type GradientLimitChange } from './gradient.js';
import { LimitSemaphore } from './limit-semaphore.js';

/** The concurrency knob's settings, checked. */
export interface ConcurrencySettings {
  readonly min: number;
  readonly max: number;
}

/** How a tool's limit moved. */
export interface LimitMove {
  readonly from: number;
  readonly to: number;
  readonly reason: string;
}

/** One tool's limit and slots; the pilot holds it beside the tool's other state. */
export interface ToolLimit {
  readonly limit: GradientLimit;
  readonly slots: LimitSemaphore;
  /** Attempts in flight in shadow mode, where no slot is taken. */
  shadowInFlight: number;
  /** Why the limit last moved, as its `onChange` said. */
  moved: GradientLimitChange | undefined;
}

const moveReasons: Readonly<Record<GradientLimitChange, string>> = {
  gradient: 'latency against the minimum round trip',
  probe_start: 'probing the minimum round trip',
  probe_end: 'minimum round trip measured',
};

/**
 * Per-tool limits and slots. Enforcing, an attempt waits for a slot (first in, first out; the
 * wait ends on its signal); in shadow, attempts are only counted, so whether one would have waited
 * can be said. A tool with nothing in flight is forgotten when the pilot forgets the tool.
 *
 * @example
 * const slots = new ToolSlots({ min: 1, max: 64 }, clock, Math.random);
 * const search = slots.of('search.web');
 * await slots.run(ctx, search, 'enforce', () => next());
 * slots.record(ctx, search, 212, 'enforce'); // may move the limit: autopilot.decision
 */
export class ToolSlots {
  readonly #tools = new Map<string, ToolLimit>();
  readonly #settings: ConcurrencySettings;
  readonly #clock: Pick<Clock, 'now'>;
  readonly #random: () => number;

  constructor(settings: ConcurrencySettings, clock: Pick<Clock, 'now'>, random: () => number) {
    this.#settings = settings;
    this.#clock = clock;
    this.#random = random;
  }

  /** `tool`'s limit now, or `undefined` for a tool not seen. */
  limitOf(tool: string): number | undefined {
    return this.#tools.get(tool)?.limit.limit;
  }

  /**
   * Runs `attempt` in one of the tool's slots (`entry`, from `of`): enforcing, after waiting for
   * one (the wait ends, as `cancelled`, when the call's signal aborts; the slot is released on
   * every path); in shadow, at once, counted, with an `autopilot.shadow` event when it would have
   * waited.
   */
  async run(
    ctx: DispatchContext,
    entry: ToolLimit,
    mode: 'enforce' | 'shadow',
    attempt: () => Promise<void>,
  ): Promise<void> {
    if (mode === 'shadow') {
      const entered = this.enter(entry);
      if (entered.wouldWait) {
        ctx.emit('autopilot.shadow', {
          knob: 'concurrency',
          action: 'queued',
          limit: entry.limit.limit,
        });
      }
      try {
        return await attempt();
      } finally {
        entered.leave();
      }
    }
    const { signal } = ctx;
    let release: () => void;
    try {
      release = await entry.slots.acquire(signal);
    } catch (error) {
      throw isDispatchError(error) ? error : cancelled(ctx, signal);
    }
    try {
      return await attempt();
    } finally {
      release();
    }
  }

  /**
   * Takes one of the tool's slots (`entry`) at once when one is free, nobody waits and `signal` has not
   * aborted: the slots to `give()` it back to, or `undefined` (then `run` waits as usual).
   */
  tryTake(entry: ToolLimit, signal: AbortSignal): LimitSemaphore | undefined {
    if (signal.aborted) return undefined;
    const { slots } = entry;
    return slots.tryTake() ? slots : undefined;
  }

  /** Counts a shadow attempt of the tool (`entry`) in flight; says whether it would have waited, and how to leave. */
  enter(entry: ToolLimit): { readonly wouldWait: boolean; readonly leave: () => void } {
    const wouldWait = entry.shadowInFlight >= entry.limit.limit;
    entry.shadowInFlight++;
    let held = true;
    return {
      wouldWait,
      leave: () => {
        if (!held) return;
        held = false;
        entry.shadowInFlight--;
      },
    };
  }

  /** Takes a successful attempt's round trip; a move of the limit is an `autopilot.decision`. */
  record(
    ctx: DispatchContext,
    entry: ToolLimit,
    rttMs: number,
    mode: 'enforce' | 'shadow',
    now?: number,
  ): void {
    const moved = this.move(entry, rttMs, now);
    if (moved === undefined) return;
    ctx.emit('autopilot.decision', {
      knob: 'concurrency',
      mode,
      from: moved.from,
      to: moved.to,
      source: moved.reason,
    });
  }

  /**
   * Takes a successful attempt's round trip (`now`: the clock's reading, if just taken); answers
   * how the limit moved, if it did.
   */
  move(entry: ToolLimit, rttMs: number, now?: number): LimitMove | undefined {
    const before = entry.limit.limit;
    entry.moved = undefined;
    entry.limit.record(rttMs, now, entry.slots.inFlight + entry.shadowInFlight);
    const after = entry.limit.limit;
    if (after === before || entry.moved === undefined) return undefined;
    // A higher limit lets waiters in now, not at the next release.
    if (after > before) entry.slots.admit();
    return { from: before, to: after, reason: moveReasons[entry.moved] };
  }

  /** Drops `tool` if nothing of it is in flight or waiting. */
  forget(tool: string): void {
    const entry = this.#tools.get(tool);
    if (entry === undefined) return;
    if (entry.slots.inFlight === 0 && entry.slots.queued === 0 && entry.shadowInFlight === 0) {
      this.#tools.delete(tool);
    }
  }

  /** `tool`'s limit and slots, made at its first attempt (the pilot keeps it with the tool). */
  of(tool: string): ToolLimit {
    let entry = this.#tools.get(tool);
    if (entry === undefined) {
      const { min, max } = this.#settings;
      const held: { entry?: ToolLimit } = {};
      const limit = new GradientLimit({
        min,
        max,
        // Envoy's probe holds a tool at 3 slots until its slowest calls drain, every minute: at
        // 25 calls a second with 3 % stragglers of seconds, twice the p99 of a fixed limit.
        probeQuietCalls: true,
        clock: this.#clock,
        random: this.#random,
        onChange: (_limit, why) => {
          if (held.entry !== undefined) held.entry.moved = why;
        },
      });
      entry = { limit, slots: new LimitSemaphore(() => limit.limit), shadowInFlight: 0, moved: undefined };
      held.entry = entry;
      this.#tools.set(tool, entry);
    }
    return entry;
  }
}
