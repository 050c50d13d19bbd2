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

/**
 * Args a host bridge refuses before any tool sees them (a reviewer's edit that is no edit of the
 * call, a malformed `_meta` field): the schema step answers the call with `schema` and `message`,
 * so that every layer outside it (logging, tracing, audit) sees the call and its outcome.
 */
export class RefusedArgs extends RawJsonArgs {
  constructor(private readonly message: string) {
    super('');
  }

  override parse(): DispatchError {
    return new DispatchError('schema', this.message);
  }

  // What a log or a span shows: the refusal, not the args it replaced.
  override toJSON(): string {
    return '[refused]';
  }
}

/**
 * Args for `dispatch` that the stack answers `schema` with `message` (at its schema step, or
 * the attempt step without one): for a host bridge that refuses a call, so the refusal goes
 * through every layer outside that step, as a call with bad args would.
 *
 * @example
 * dispatcher.dispatch(toolName, refusedArgs('The edit names another tool'), options);
 */
export function refusedArgs(message: string): unknown {
  return new RefusedArgs(message);
}
