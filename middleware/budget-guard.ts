/**
 * Budget guard: fails fast when the caller's tool-call budget is already spent.
 * @module
 */

import type { DispatchError } from '../src/errors.js';
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
  return createBudgetGuard().layer;
}

/**
 * The budget guard and its check, for the default stack's fast runner.
 * @internal
 */
export function createBudgetGuard(): { layer: Middleware; check: typeof checkBudget } {
  const layer = trusted(function budgetGuard(ctx: DispatchContext, next: Next): Promise<void> {
    const problem = checkBudget(ctx);
    return problem === undefined ? next() : Promise.reject(problem);
  });
  return { layer, check: checkBudget };
}

function checkBudget(ctx: DispatchContext): DispatchError | undefined {
  return ctx.budget !== undefined && !(ctx.budget.remaining >= 1) ? budgetExceeded(ctx) : undefined;
}
