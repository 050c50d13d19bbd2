// The innermost step of every dispatcher: one attempt of the resolved tool's handler.

import { DispatchError, isDispatchError, toDispatchError } from './errors.js';
import { raceAbort } from './internal/abort.js';
import { budgetExceeded, cancelled } from './internal/failures.js';
import type { DispatchContext, ToolHandler } from './types.js';

/**
 * Runs one attempt: takes a budget unit, counts the attempt, emits `dispatch.attempt`, calls the
 * handler with the current signal and records a success in `ctx.outcome`. A handler failure is
 * thrown as an envelope (`transient` for a `TransientError`, otherwise `internal`); an abort of
 * the signal ends the attempt at once and the handler's late outcome is ignored.
 */
export async function runAttempt(ctx: DispatchContext): Promise<void> {
  const { tool, signal } = ctx;
  if (tool === undefined) {
    throw new DispatchError(
      'internal',
      'No tool was resolved for this call: the stack needs toolLookup(registry)',
      { attempts: ctx.attempt },
    );
  }
  if (signal.aborted) throw cancelled(ctx, signal);
  if (ctx.budget !== undefined && !ctx.budget.tryConsume(1)) throw budgetExceeded(ctx);
  const attempt = ++ctx.attempt;
  ctx.emit('dispatch.attempt');
  const handler = tool.handler as ToolHandler<unknown>;
  let returned: unknown;
  try {
    returned = handler(ctx.args, {
      signal,
      attempt,
      idempotencyKey: ctx.options.idempotencyKey,
      callId: ctx.callId,
    });
  } catch (error) {
    throw handlerFailure(error, attempt);
  }
  if (returned instanceof Promise || isObjectLike(returned)) {
    // Promise.resolve adopts any thenable, and turns a throwing `then` into a rejection.
    const settled = Promise.resolve(returned).then(undefined, (error: unknown) => {
      throw handlerFailure(error, attempt);
    });
    returned = await raceAbort(settled, signal, () => cancelled(ctx, signal));
  }
  ctx.outcome = { ok: true, result: returned, attempts: attempt };
}

function isObjectLike(value: unknown): boolean {
  return (typeof value === 'object' && value !== null) || typeof value === 'function';
}

// Whatever a handler throws is its own failure: even a DispatchError of kind "timeout" it made
// itself is `internal`, never mistaken for a timeout of this dispatcher.
function handlerFailure(error: unknown, attempts: number): DispatchError {
  return isDispatchError(error)
    ? new DispatchError('internal', error.message, { attempts, cause: error })
    : toDispatchError(error, attempts);
}
