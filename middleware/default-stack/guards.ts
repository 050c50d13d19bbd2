/**
 * The default stack's per-attempt guards on its fast path: every `rateLimit` and `windowedBudget`
 * taken at once with no promise, or none of them (the call then runs through their layers).
 * @module
 */

import type { DispatchContext } from '../../src/types.js';
import type { RateLimitParts, RateTicket } from '../rate-limit/index.js';
import type { WindowedBudgetParts, WindowTicket } from '../windowed-budget/index.js';

/** What one attempt holds from the guards. */
export interface Held {
  readonly rates: readonly RateTicket[];
  readonly windows: ReadonlyArray<WindowTicket | null>;
}

const nothingHeld: Held = Object.freeze({ rates: [], windows: [] });

/** The guards of one default stack, in their layers' order. */
export class AttemptGuards {
  readonly #rateLimits: readonly RateLimitParts[];
  readonly #budgets: readonly WindowedBudgetParts[];
  readonly #none: boolean;

  constructor(rateLimits: readonly RateLimitParts[], budgets: readonly WindowedBudgetParts[]) {
    this.#rateLimits = rateLimits;
    this.#budgets = budgets;
    this.#none = rateLimits.length === 0 && budgets.length === 0;
  }

  /** Takes every guard's share for an attempt that may start now; `undefined` (nothing held) otherwise. */
  enter(ctx: DispatchContext): Held | undefined {
    if (this.#none) return nothingHeld;
    const rates: RateTicket[] = [];
    for (const limiter of this.#rateLimits) {
      const ticket = limiter.tryTake(ctx);
      if (ticket === undefined) return this.#undo(ctx, rates, []);
      rates.push(ticket);
    }
    const windows: Array<WindowTicket | null> = [];
    for (const budget of this.#budgets) {
      const ticket = budget.tryReserve(ctx);
      if (ticket === undefined) return this.#undo(ctx, rates, windows);
      windows.push(ticket);
    }
    return { rates, windows };
  }

  /** The attempt ended: settles the budgets, and lets a failure's wait reach the limiters. */
  ended(ctx: DispatchContext, held: Held, failed: boolean, error: unknown, ran: boolean): void {
    if (held === nothingHeld) return;
    this.#budgets.forEach((budget, index) => {
      const ticket = held.windows[index];
      if (ticket != null) budget.ended(ctx, ticket, !failed, ran);
    });
    if (!failed) return;
    this.#rateLimits.forEach((limiter, index) => {
      const ticket = held.rates[index];
      if (ticket !== undefined) limiter.failed(ctx, ticket, error);
    });
  }

  // One guard cannot answer at once: what the others took goes back, as if never asked.
  #undo(ctx: DispatchContext, rates: RateTicket[], windows: Array<WindowTicket | null>): undefined {
    rates.forEach((ticket, index) => this.#rateLimits[index]?.untake(ticket));
    windows.forEach((ticket, index) => {
      if (ticket !== null) this.#budgets[index]?.ended(ctx, ticket, false, false);
    });
    return undefined;
  }
}
