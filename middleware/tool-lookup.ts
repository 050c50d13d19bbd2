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
  if (typeof registry?.get !== 'function') {
    throw new TypeError('toolLookup() needs a registry with a get(name) method');
  }
  return trusted(function toolLookup(ctx: DispatchContext, next: Next): Promise<void> {
    const tool = typeof ctx.toolName === 'string' ? registry.get(ctx.toolName) : undefined;
    if (tool === undefined) {
      return Promise.reject(
        new DispatchError('not_found', `No tool named ${JSON.stringify(String(ctx.displayName))}`),
      );
    }
    ctx.tool = tool;
    return tool.outputSchema === undefined ? next() : keepsContract(ctx, next);
  });
}

// The one place a success is held to its tool's output schema.
async function keepsContract(ctx: DispatchContext, next: Next): Promise<void> {
  await next();
  const broken = await checkContract(ctx);
  if (broken !== undefined) throw broken;
}
