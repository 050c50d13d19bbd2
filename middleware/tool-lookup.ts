/**
 * Tool lookup: resolves the requested name to a registered tool, or fails with `not_found`.
 * @module
 */

import { DispatchError } from '../src/errors.js';
import { trusted } from '../src/internal/trusted.js';
import type { ToolRegistry } from '../src/registry.js';
import type { DispatchContext, Middleware, Next } from '../src/types.js';
import { checkContract } from './output-contract.js';

/**
 * Finds `ctx.toolName` in `registry` and sets `ctx.tool` (an unknown name fails with `not_found`),
 * and holds a success to the tool's `outputSchema` (`tool_contract`).
 *
 * @param registry - Where tools are looked up, on every call (tools may be added later).
 * @throws TypeError when `registry` has no `get` method.
 * @example
 * createDispatcher([errorMapping(), toolLookup(registry)]);
 */
export function toolLookup(registry: Pick<ToolRegistry, 'get'>): Middleware {
  return createToolLookup(registry).layer;
}

/**
 * A lookup layer and its step, for the default stack's fast runner.
 * @internal
 */
export function createToolLookup(registry: Pick<ToolRegistry, 'get'>): {
  layer: Middleware;
  lookup: (ctx: DispatchContext) => DispatchError | undefined;
} {
  if (typeof registry?.get !== 'function') {
    throw new TypeError('toolLookup() needs a registry with a get(name) method');
  }
  const lookup = (ctx: DispatchContext): DispatchError | undefined => {
    const tool = typeof ctx.toolName === 'string' ? registry.get(ctx.toolName) : undefined;
    if (tool === undefined) {
      return new DispatchError('not_found', `No tool named ${JSON.stringify(String(ctx.displayName))}`);
    }
    ctx.tool = tool;
    return undefined;
  };
  const layer = trusted(function toolLookup(ctx: DispatchContext, next: Next): Promise<void> {
    const problem = lookup(ctx);
    if (problem !== undefined) return Promise.reject(problem);
    if (ctx.tool?.outputSchema === undefined) return next();
    return next()
      .then(() => checkContract(ctx))
      .then((broken) => {
        if (broken !== undefined) throw broken;
      });
  });
  return { layer, lookup };
}
