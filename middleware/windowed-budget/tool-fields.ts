/**
 * The windowed budget's tool field, `settle` (a success's actual cost): merged into the core's
 * `ToolDefinition` and `Tool`, declared to the registry, and read by `settledCost`.
 * @module
 */

import type { StandardSchemaV1 } from '../../src/standard-schema.js';
import type { DispatchContext } from '../../src/types.js';
import { declareToolField, type ToolField } from '../kit.js';

declare module '../../src/types.js' {
  interface ToolDefinition<Schema extends StandardSchemaV1 = StandardSchemaV1, Result = unknown> {
    /** The actual cost of a success, from its result, for `windowedBudget`. @default the reserved cost */
    settle?: (result: Awaited<Result>, args: StandardSchemaV1.InferOutput<Schema>) => number;
  }
  interface Tool {
    /** The actual cost of a successful attempt, from its result; `undefined` when none. */
    readonly settle: ((result: never, args: never) => number) | undefined;
  }
}

/** `settle` as the windowed budget declares it to the registry. */
export const settleField: ToolField = {
  name: 'settle',
  check(value, tool) {
    if (typeof value !== 'function') {
      throw new TypeError(`settle of "${tool}" must be a function, got ${typeof value}`);
    }
  },
};

// Tools may declare their actual cost (`settle`) once this module is loaded: tool-dispatcher/
// middleware imports it for this effect, and package.json lists it in sideEffects so that no
// bundler drops it.
declareToolField(settleField);

/**
 * The actual cost of the call's successful attempt, by the tool's `settle`; `undefined` when the
 * tool has none, or when it throws or answers junk (the reservation then stands).
 *
 * @example
 * const actual = outcome?.ok === true ? settledCost(ctx, outcome.result) : undefined;
 */
export function settledCost(ctx: DispatchContext, result: unknown): number | undefined {
  const settle = ctx.tool?.settle;
  if (settle === undefined) return undefined;
  try {
    const value: unknown = (settle as (result: unknown, args: unknown) => unknown)(result, ctx.args);
    return typeof value === 'number' && value >= 0 && Number.isFinite(value) ? value : undefined;
  } catch {
    return undefined;
  }
}
