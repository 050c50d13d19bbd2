/**
 * Windowed budget: a ledger per key (a tenant) of the units attempts cost, in fixed windows,
 * reserved before each attempt and settled after it, never spent past its limit.
 * @module
 */

import { DispatchError, isDispatchError } from '../../src/errors.js';
import { trusted } from '../../src/internal/trusted.js';
import { systemClock, type Clock } from '../../src/clock.js';
import type { WindowReservation, WindowStore } from './store.js';
import type { MaybePromise } from '../../src/stores.js';
import type { DispatchContext, Middleware, Next } from '../../src/types.js';
import {
  cancelled,
  optionKeys,
  optionsObject,
  raceAbort,
  requireClock,
  requireFunction,
  requireNumber,
  storeUnavailable,
} from '../kit.js';
import { answeredAtOnce, attemptCost, callNext, neverFitsWindow, noop } from '../internal-kit.js';
import { MemoryWindowStore } from './memory-store.js';
import { settledCost } from './tool-fields.js';

// The layer's events, merged into the core's DispatchEventDetails (kept in its declaration files).
export type {} from './events.js';

/** Options for `windowedBudget`. */
export interface WindowedBudgetOptions {
  /**
   * Whose ledger an attempt is charged to, e.g. `(ctx) => ctx.options.tenant`; a call whose key
   * answers `undefined` is not counted here.
   * @default one ledger for every call
   */
  key?: (ctx: DispatchContext) => string | undefined;
  /** Units a key may spend per window (the tools' `cost` units). */
  limit: number;
  /** The window, in milliseconds; windows start at multiples of it on the store's clock. */
  windowMs: number;
  /**
   * Where the ledgers live: this process (`memoryWindowStore`), or a fleet (`redisWindowStore`).
   * A store that cannot answer fails the attempt `store_unavailable` (a budget fails closed).
   * @default a memory store of this layer's own
   */
  store?: WindowStore;
  /**
   * The memory store's clock.
   * @default systemClock
   */
  clock?: Pick<Clock, 'now'>;
}

const windowedBudgetOptionKeys = optionKeys<WindowedBudgetOptions>({
  key: true,
  limit: true,
  windowMs: true,
  store: true,
  clock: true,
});

/** What one attempt reserved in a ledger. */
// The units a call asked the store for, and its answer (at once, or later).
interface Asked {
  readonly key: string;
  readonly units: number;
  readonly answer: MaybePromise<WindowReservation>;
}

interface WindowTicket {
  readonly key: string;
  readonly window: number;
  readonly units: number;
  readonly id: string;
}

/**
 * Charges each attempt's `cost` (the tool's; 1 by default) to its key's ledger for the current
 * window, before the handler runs: a call that does not fit fails `budget_exceeded` with
 * `retryAfterMs` (the time to the window's end), other keys untouched; one costing more than
 * `limit` fails `budget_exceeded` without `retryAfterMs` (no window will hold it). After a success, the
 * tool's `settle` gives back what was reserved beyond the actual cost; an overrun is charged and
 * emitted as `budget.overrun`. A failed attempt keeps its reservation; one whose handler never
 * started gives it back. Sits inside `retry` and `rateLimit`.
 *
 * @example
 * windowedBudget({ key: (ctx) => ctx.options.tenant, limit: 10_000, windowMs: 86_400_000 });
 */
export function windowedBudget(options: WindowedBudgetOptions): Middleware {
  const given = optionsObject('windowedBudget', options, windowedBudgetOptionKeys);
  const { key, limit, windowMs, store, clock = systemClock } = given;
  if (key !== undefined) requireFunction('key', key);
  requireNumber('limit', limit, 0, { allowInfinity: true });
  requireNumber('windowMs', windowMs, 0, { exclusive: true });
  requireClock(clock, ['now']);
  if (store !== undefined && (typeof store?.reserve !== 'function' || typeof store?.settle !== 'function')) {
    throw new TypeError('store must be a WindowStore (reserve, settle)');
  }
  const ledger = new Ledger(key, limit, windowMs, store ?? new MemoryWindowStore(clock));
  return trusted(function windowedBudget(ctx: DispatchContext, next: Next): Promise<void> {
    return ledger.run(ctx, next);
  });
}

let budgets = 0;

class Ledger {
  readonly #prefix = `w${++budgets}.${Math.random().toString(36).slice(2, 10)}.`;
  #attempts = 0;

  constructor(
    readonly keyOf: ((ctx: DispatchContext) => string | undefined) | undefined,
    readonly limit: number,
    readonly windowMs: number,
    readonly store: WindowStore,
  ) {}

  run(ctx: DispatchContext, next: Next): Promise<void> {
    const id = this.#prefix + ++this.#attempts;
    let asked: Asked | undefined;
    try {
      asked = this.#reserve(ctx, id);
    } catch (error) {
      return Promise.reject(error);
    }
    if (asked === undefined) return callNext(next);
    const { key, units, answer } = asked;
    const now = answeredAtOnce(answer);
    // Units a memory store reserves at once let the attempt start in the same turn.
    if (now === undefined || ctx.signal.aborted) return this.#reserveLater(ctx, next, key, units, id, answer);
    let ticket: WindowTicket;
    try {
      ticket = this.#charged(ctx, key, units, id, now);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#attempt(ctx, next, ticket);
  }

  async #reserveLater(
    ctx: DispatchContext,
    next: Next,
    counted: string,
    units: number,
    id: string,
    pending: MaybePromise<WindowReservation>,
  ): Promise<void> {
    const answer = Promise.resolve(pending);
    const { signal } = ctx;
    let abandoned = false;
    let reserved: WindowReservation;
    try {
      reserved = await raceAbort(answer, signal, () => {
        abandoned = true;
        // Units reserved for a caller who has left go back.
        answer.then((late) => {
          if (late.ok) void this.#settle({ key: counted, window: late.window, units, id }, -units);
        }, noop);
        return cancelled(ctx, signal);
      });
    } catch (error) {
      throw abandoned ? error : this.#unavailable(error, counted);
    }
    await this.#attempt(ctx, next, this.#charged(ctx, counted, units, id, reserved));
  }

  // What the store answered: a refusal, or the ticket the attempt holds.
  #charged(
    ctx: DispatchContext,
    key: string,
    units: number,
    id: string,
    reserved: WindowReservation,
  ): WindowTicket {
    if (!reserved.ok) {
      ctx.emit('budget.refused', { key, units });
      throw exceeded(ctx, key, reserved.retryAfterMs);
    }
    ctx.emit('budget.charged', { key, units });
    return { key, window: reserved.window, units, id };
  }

  // Runs the attempt holding `ticket` and settles the ticket as it ends.
  #attempt(ctx: DispatchContext, next: Next, ticket: WindowTicket): Promise<void> {
    const before = ctx.attempt;
    return callNext(next).then(
      () => this.#ended(ctx, ticket, true, true),
      (error: unknown) => {
        this.#ended(ctx, ticket, false, ctx.attempt > before);
        throw error;
      },
    );
  }

  // Asks the store for the attempt's units; undefined for a call this ledger does not count.
  #reserve(ctx: DispatchContext, id: string): Asked | undefined {
    let key: string | undefined;
    try {
      key = this.#key(ctx);
      if (key === undefined) return undefined;
      const units = attemptCost(ctx);
      // No window will ever hold it: refused as such, with no wait that would not help.
      if (units > this.limit) {
        ctx.emit('budget.refused', { key, units });
        throw windowTooSmall(ctx, key, units, this.limit, this.windowMs);
      }
      const options = { limit: this.limit, windowMs: this.windowMs, id };
      return { key, units, answer: this.store.reserve(key, units, options) };
    } catch (error) {
      throw this.#unavailable(error, key);
    }
  }

  // The attempt holding `ticket` ended; `ran` says whether its handler started.
  #ended(ctx: DispatchContext, ticket: WindowTicket, succeeded: boolean, ran: boolean): void {
    let delta = 0;
    if (!succeeded) {
      // A failed attempt keeps its reservation: its handler may have spent it. One never started did not.
      if (ran) return;
      delta = -ticket.units;
      ctx.emit('budget.returned', { key: ticket.key, units: ticket.units });
    } else {
      const outcome = ctx.outcome;
      const actual = outcome?.ok === true ? settledCost(ctx, outcome.result) : undefined;
      if (actual === undefined || actual === ticket.units) return;
      delta = actual - ticket.units;
      if (delta > 0) ctx.emit('budget.overrun', { key: ticket.key, units: delta });
      else ctx.emit('budget.returned', { key: ticket.key, units: -delta });
    }
    void this.#settle(ticket, delta);
  }

  async #settle(ticket: WindowTicket, delta: number): Promise<void> {
    try {
      await this.store.settle(ticket.key, ticket.window, delta, { windowMs: this.windowMs, id: ticket.id });
    } catch {
      // A settlement that cannot be written leaves the reservation standing: the safe side.
    }
  }

  #key(ctx: DispatchContext): string | undefined {
    if (this.keyOf === undefined) return 'all';
    const key: unknown = this.keyOf(ctx);
    if (key === undefined || (typeof key === 'string' && key.length > 0)) return key;
    throw new DispatchError(
      'internal',
      `windowedBudget key must answer a non-empty string, got ${String(key)}`,
      {
        attempts: ctx.attempt,
      },
    );
  }

  #unavailable(error: unknown, key: string | undefined): DispatchError {
    if (isDispatchError(error)) return error;
    return storeUnavailable(`The budget "${key ?? '?'}" could not be charged`, { cause: error });
  }
}

function exceeded(ctx: DispatchContext, key: string, retryAfterMs: number): DispatchError {
  return new DispatchError(
    'budget_exceeded',
    `The budget "${key}" is spent for this window; "${ctx.displayName}" was not run`,
    { attempts: ctx.attempt, retryAfterMs },
  );
}

// A call whose cost is above the whole `limit`: waiting for the next window would not help, so its
// envelope carries no `retryAfterMs`.
function windowTooSmall(
  ctx: DispatchContext,
  key: string,
  units: number,
  limit: number,
  windowMs: number,
): DispatchError {
  return new DispatchError(
    'budget_exceeded',
    `${neverFitsWindow} "${key}" (${limit} units per ${windowMs} ms) holds the ${units} units "${ctx.displayName}" costs; it was not run`,
    { attempts: ctx.attempt },
  );
}
