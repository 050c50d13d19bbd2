/**
 * Args that arrived as a JSON string (`dispatchJson`): parsed inside the stack, so that a parse
 * failure is a `schema` outcome every layer and observer sees.
 * @module
 */

import { DispatchError } from '../errors.js';
import type { DispatchContext } from '../types.js';

/**
 * Parses `ctx.args` in place when they are still `dispatchJson`'s text; returns the `schema`
 * envelope for text that is not JSON.
 */
export function parseJsonArgs(ctx: DispatchContext): DispatchError | undefined {
  const { args } = ctx;
  if (!(args instanceof RawJsonArgs)) return undefined;
  const parsed = args.parse(ctx.displayName);
  if (parsed instanceof DispatchError) return parsed;
  ctx.args = parsed.value;
  return undefined;
}

/** The raw JSON text of a call's args, until the schema layer parses it. */
export class RawJsonArgs {
  constructor(readonly json: string) {}

  /** The parsed value (`""` or whitespace is `{}`), or the `schema` envelope for bad JSON. */
  parse(toolName: string): { value: unknown } | DispatchError {
    if (this.json.trim() === '') return { value: {} };
    try {
      return { value: JSON.parse(this.json) as unknown };
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      return new DispatchError('schema', `Arguments for "${toolName}" are not valid JSON: ${reason}`, {
        cause: error,
      });
    }
  }

  // What a log or an inspection shows before parsing: the text itself.
  toJSON(): string {
    return this.json;
  }
}
