/**
 * Error mapping: the outermost layer, turning anything thrown inside into the one envelope.
 * @module
 */

import { toDispatchError } from '../src/errors.js';
import { trusted } from '../src/internal/trusted.js';
import type { DispatchContext, Middleware, Next } from '../src/types.js';

/**
 * Records whatever the inner layers throw as a `DispatchError` in `ctx.outcome`; never rethrows.
 *
 * @example
 * const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), schemaValidation()]);
 */
export function errorMapping(): Middleware {
  const layer = trusted(function errorMapping(ctx: DispatchContext, next: Next): Promise<void> {
    return next().then(undefined, (error: unknown) => {
      ctx.outcome = toDispatchError(error, ctx.attempt);
    });
  });
  return layer;
}
