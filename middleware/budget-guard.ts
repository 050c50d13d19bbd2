/**
 * Budget guard: fails fast when the caller's tool-call budget is already spent.
 * @module
 */

import { budgetExceeded } from './kit.js';
import { trusted } from '../src/internal/trusted.js';
import type { DispatchContext, Middleware, Next } from '../src/types.js';

/**
 * Fails with `budget_exceeded` and 0 attempts, before any attempt, when the call's budget has no
 * whole unit left.
 *
 * @example
 * const budget = createBudget(10);
 * await dispatcher.dispatch('search.web', { query: 'x' }, { budget });
 */
export function budgetGuard(): Middleware {
  return trusted(function budgetGuard(ctx: DispatchContext, next: Next): Promise<void> {
    const { budget } = ctx;
    return budget !== undefined && !(budget.remaining >= 1) ? Promise.reject(budgetExceeded(ctx)) : next();
  });
}
