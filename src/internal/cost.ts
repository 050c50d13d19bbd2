/**
 * What an attempt costs: the tool's `cost` for these args.
 * @module
 */

import { DispatchError, describeThrown } from '../errors.js';
import type { DispatchContext } from '../types.js';

function checked(ctx: DispatchContext, value: unknown, what: string): number {
  if (typeof value === 'number' && value >= 0 && Number.isFinite(value)) return value;
  throw new DispatchError(
    'internal',
    `The ${what} of "${ctx.displayName}" must answer a finite number >= 0, got ${String(value)}`,
    { attempts: ctx.attempt },
  );
}

/**
 * The units one attempt of the call's tool takes: its `cost` (a number, or a function of the
 * parsed args), 1 without one. Throws an `internal` envelope naming `cost` when it answers junk.
 */
export function attemptCost(ctx: DispatchContext): number {
  const cost = ctx.tool?.cost;
  if (cost === undefined) return 1;
  if (typeof cost === 'number') return cost;
  let value: unknown;
  try {
    value = (cost as (args: unknown) => unknown)(ctx.args);
  } catch (error) {
    throw new DispatchError('internal', `The cost of "${ctx.displayName}" failed: ${describeThrown(error)}`, {
      attempts: ctx.attempt,
      cause: error,
    });
  }
  return checked(ctx, value, 'cost');
}
