/**
 * Windowed budget: a ledger per key (a tenant) of the units attempts cost, in fixed windows,
 * reserved before each attempt and settled after it, never spent past its limit.
 * @module
 */

import { DispatchError, isDispatchError } from '../../src/errors.js';
import { trusted } from '../../src/internal/trusted.js';
import { systemClock, type Clock } from '../../src/clock.js';
import type { WindowReservation, WindowStore } from './store.js';
import type { DispatchContext, Middleware, Next } from '../../src/types.js';
import {
  attemptCost,
  cancelled,
  declareToolField,
  isThenable,
  noop,
  optionKeys,
  optionsObject,
  raceAbort,
  requireClock,
  requireFunction,
  requireNumber,
  storeUnavailable,
  windowTooSmall,
} from '../kit.js';
import { MemoryWindowStore } from './memory-store.js';
import { settledCost, settleField } from './tool-fields.js';

// The layer's events, merged into the core's DispatchEventDetails (kept in its declaration files).
export type {} from './events.js';

// Tools may declare their actual cost (`settle`) once this layer is loaded.
declareToolField(settleField);

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

/** What a fast runner reserved in one budget for one attempt. */
export interface WindowTicket {
  readonly key: string;
  readonly window: number;
  readonly units: number;
  readonly id: string;
}

/**
 * A `windowedBudget` layer's parts, for the default stack's fast runner.
 * @internal
 */
export interface WindowedBudgetParts {
  readonly layer: Middleware;
  /**
   * Reserves an attempt's units with no promise: a ticket, `null` when the call is not counted
   * here, `undefined` when the runner must go through the layer (nothing reserved).
   */
  tryReserve(ctx: DispatchContext): WindowTicket | null | undefined;
  /** The attempt holding `ticket` ended; `ran` says whether its handler started. */
  ended(ctx: DispatchContext, ticket: WindowTicket, succeeded: boolean, ran: boolean): void;
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
  return createWindowedBudget(options).layer;
}

let budgets = 0;

/**
 * A windowed-budget layer and its parts.
 * @internal
 */
export function createWindowedBudget(options: WindowedBudgetOptions): WindowedBudgetParts {
  const given = optionsObject('windowedBudget', options, windowedBudgetOptionKeys);
  const { key, limit, windowMs, store, clock = systemClock } = given;
  if (key !== undefined) requireFunction('key', key);
  requireNumber('limit', limit, 0, { allowInfinity: true });
  requireNumber('windowMs', windowMs, 0, { exclusive: true });
  requireClock(clock, ['now']);
  if (store !== undefined && (typeof store?.reserve !== 'function' || typeof store?.settle !== 'function')) {
    throw new TypeError('store must be a WindowStore (reserve, settle)');
  }
  const ledger = new Ledger(key, limit, windowMs, store ?? new MemoryWindowStore(clock), store === undefined);
  const layer = trusted(function windowedBudget(ctx: DispatchContext, next: Next): Promise<void> {
    return ledger.run(ctx, next);
  });
  return {
    layer,
    tryReserve: (ctx) => ledger.tryReserve(ctx),
    ended: (ctx, t, ok, ran) => ledger.ended(ctx, t, ok, ran),
  };
}

class Ledger {
  readonly #prefix = `w${++budgets}.${Math.random().toString(36).slice(2, 10)}.`;
  #attempts = 0;

  constructor(
    readonly keyOf: ((ctx: DispatchContext) => string | undefined) | undefined,
    readonly limit: number,
    readonly windowMs: number,
    readonly store: WindowStore,
    readonly synchronous: boolean,
  ) {}

  tryReserve(ctx: DispatchContext): WindowTicket | null | undefined {
    if (!this.synchronous) return undefined;
    let key: string | undefined;
    let units: number;
    try {
      key = this.#key(ctx);
      if (key === undefined) return null;
      units = attemptCost(ctx);
    } catch {
      return undefined;
    }
    if (units > this.limit) return undefined;
    const id = this.#prefix + ++this.#attempts;
    const answer = this.store.reserve(key, units, {
      limit: this.limit,
      windowMs: this.windowMs,
      id,
    }) as WindowReservation;
    return answer.ok ? { key, window: answer.window, units, id } : undefined;
  }

  run(ctx: DispatchContext, next: Next): Promise<void> {
    let key: string | undefined;
    let units: number;
    let answer: WindowReservation | Promise<WindowReservation>;
    const id = this.#prefix + ++this.#attempts;
    try {
      key = this.#key(ctx);
      if (key === undefined) return next();
      units = attemptCost(ctx);
      // No window will ever hold it: refused as such, with no wait that would not help.
      if (units > this.limit)
        return Promise.reject(windowTooSmall(ctx, key, units, this.limit, this.windowMs));
      answer = this.store.reserve(key, units, { limit: this.limit, windowMs: this.windowMs, id });
    } catch (error) {
      return Promise.reject(this.#unavailable(error, key));
    }
    const counted = key;
    const go = (reserved: WindowReservation): Promise<void> => {
      if (!reserved.ok) return Promise.reject(exceeded(ctx, counted, reserved.retryAfterMs));
      const ticket: WindowTicket = { key: counted, window: reserved.window, units, id };
      const before = ctx.attempt;
      return next().then(
        () => this.ended(ctx, ticket, true, true),
        (error: unknown) => {
          this.ended(ctx, ticket, false, ctx.attempt > before);
          throw error;
        },
      );
    };
    if (!isThenable(answer)) return go(answer);
    const answered = Promise.resolve(answer);
    const { signal } = ctx;
    let abandoned = false;
    const leave = () => {
      abandoned = true;
      // Units reserved for a caller who has left go back.
      answered.then((late) => {
        if (late.ok) this.ended(ctx, { key: counted, window: late.window, units, id }, false, false);
      }, noop);
      return cancelled(ctx, signal);
    };
    return raceAbort(answered, signal, leave).then(go, (error: unknown) => {
      throw abandoned ? error : this.#unavailable(error, counted);
    });
  }

  ended(ctx: DispatchContext, ticket: WindowTicket, succeeded: boolean, ran: boolean): void {
    let delta = 0;
    if (!succeeded) {
      // A failed attempt keeps its reservation: its handler may have spent it. One never started did not.
      if (ran) return;
      delta = -ticket.units;
    } else {
      const outcome = ctx.outcome;
      const actual = outcome?.ok === true ? settledCost(ctx, outcome.result) : undefined;
      if (actual === undefined || actual === ticket.units) return;
      delta = actual - ticket.units;
      if (delta > 0) ctx.emit('budget.overrun', { key: ticket.key, units: delta });
    }
    try {
      const done = this.store.settle(ticket.key, ticket.window, delta, {
        windowMs: this.windowMs,
        id: ticket.id,
      });
      if (isThenable(done)) done.then(undefined, noop);
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
