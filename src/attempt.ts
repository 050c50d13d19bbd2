// The innermost step of every dispatcher: one attempt of the resolved tool's handler.

import { DispatchError, isDispatchError, toDispatchError } from './errors.js';
import { neverAborted, raceAbort } from './internal/abort.js';
import { AttemptAbort, abortSourceOf } from './internal/attempt-abort.js';
import { budgetExceeded, cancelled } from './internal/failures.js';
import type { DispatchContext, ToolContext, ToolHandler } from './types.js';

/**
 * Runs one attempt: takes a budget unit, counts the attempt, emits `dispatch.attempt`, calls the
 * handler with the current signal and records a success in `ctx.outcome`. A handler failure is
 * rejected as an envelope (`transient` for a `TransientError`, otherwise `internal`); an abort
 * ends the attempt at once and the handler's late outcome is ignored.
 */
export function runAttempt(ctx: DispatchContext): Promise<void> {
  const { tool } = ctx;
  if (tool === undefined) {
    return Promise.reject(
      new DispatchError(
        'internal',
        'No tool was resolved for this call: the stack needs toolLookup(registry)',
        { attempts: ctx.attempt },
      ),
    );
  }
  const source = abortSourceOf(ctx);
  if (source.aborted) return Promise.reject(cancelled(ctx, ctx.signal));
  if (ctx.budget !== undefined && !ctx.budget.tryConsume(1)) {
    return Promise.reject(budgetExceeded(ctx));
  }
  const attempt = ++ctx.attempt;
  ctx.emit('dispatch.attempt');
  const handler = tool.handler as ToolHandler<unknown>;
  let returned: unknown;
  try {
    returned = handler(ctx.args, toolContext(source, attempt, ctx));
  } catch (error) {
    return Promise.reject(handlerFailure(error, attempt));
  }
  if (!(returned instanceof Promise) && !isObjectLike(returned)) {
    ctx.outcome = { ok: true, result: returned, attempts: attempt };
    return Promise.resolve();
  }
  // Promise.resolve adopts any thenable, and turns a throwing `then` into a rejection.
  const settled = Promise.resolve(returned).then(undefined, (error: unknown) => {
    throw handlerFailure(error, attempt);
  });
  if (source instanceof AttemptAbort) {
    // The timeout layer that owns this abort settles the attempt itself when it fires; all that
    // is left here is not to record an outcome that came too late.
    return settled.then((result) => {
      if (!source.aborted) ctx.outcome = { ok: true, result, attempts: attempt };
    });
  }
  const raced = source === neverAborted ? settled : raceAbort(settled, source, () => cancelled(ctx, source));
  return raced.then((result) => {
    ctx.outcome = { ok: true, result, attempts: attempt };
  });
}

// The signal is read through a getter so that a lazy per-attempt abort is only materialised
// for handlers that look at it.
function toolContext(source: AbortSignal | AttemptAbort, attempt: number, ctx: DispatchContext): ToolContext {
  return {
    get signal() {
      return source instanceof AttemptAbort ? source.signal : source;
    },
    attempt,
    idempotencyKey: ctx.options.idempotencyKey,
    callId: ctx.callId,
  };
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
