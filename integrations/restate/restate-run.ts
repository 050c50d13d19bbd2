/**
 * `restateRun`: a dispatch as a Restate `ctx.run` step, keyed by the invocation id and the
 * step's name, its failures mapped to Restate's retryable and terminal errors.
 * @module
 */

import { type Context, RetryableError, TerminalError } from '@restatedev/restate-sdk';
import type { DispatchError, Dispatcher } from '../../index.js';
import {
  checkStepOptions,
  durableStepOptionKeys,
  runStepDispatch,
  stepResult,
  type DurableStepOptions,
  type EngineErrors,
  type JournaledOutcome,
  type StepTool,
} from '../durable/step.js';

/** Options for `restateRun`. */
export interface RestateRunOptions extends DurableStepOptions {}

/** The HTTP status a terminal failure carries to Restate's ingress, from its JSON-RPC code. */
const statusByCode: Readonly<Record<number, number>> = { [-32601]: 404, [-32602]: 400 };

/**
 * Runs `dispatcher.dispatch(tool, args)` inside `ctx.run(name)`: the journal dedupes a replay,
 * and the idempotency key `restate:<invocationId>:<name>` (remembered for `keyTtlMs`) dedupes
 * the window between the handler's side effect and the journal write. The dispatch ends when
 * the attempt does (`ctx.request().attemptCompletedSignal`). A failure `engineVerdict` gives to
 * the engine is thrown as `RetryableError` (with `retryAfter` when the envelope has one); any
 * other is a `TerminalError` whose message starts with the kind, or, with `failures: 'return'`,
 * the envelope's JSON journaled as the step's value.
 *
 * @param ctx - The Restate handler's context.
 * @param tool - The tool's name, or `registry.get(name)` so an idempotent tool's timeout is retried.
 * @throws TypeError naming `ctx`, `dispatcher`, `tool`, `name`, `keyTtlMs` or `failures` for bad input.
 * @example
 * const checkout = restate.service({ name: 'Checkout', handlers: {
 *   charge: async (ctx: restate.Context, order: Order) =>
 *     restateRun(ctx, dispatcher, 'payments.charge', order, { name: 'charge' }),
 * } });
 */
export function restateRun<Result = unknown>(
  ctx: Context,
  dispatcher: Dispatcher,
  tool: StepTool,
  args: unknown,
  options: RestateRunOptions & { failures?: 'throw' },
): Promise<Result>;
export function restateRun<Result = unknown>(
  ctx: Context,
  dispatcher: Dispatcher,
  tool: StepTool,
  args: unknown,
  options: RestateRunOptions & { failures: 'return' },
): Promise<JournaledOutcome<Result>>;
export async function restateRun(
  ctx: Context,
  dispatcher: Dispatcher,
  tool: StepTool,
  args: unknown,
  options: RestateRunOptions,
): Promise<unknown> {
  const checked = checkStepOptions(dispatcher, tool, options, 'restateRun', durableStepOptionKeys);
  requireRestateContext(ctx);
  const request = ctx.request();
  const key = `restate:${request.id}:${checked.name}`;
  const journaled = await ctx.run(checked.name, () =>
    runStepDispatch(dispatcher, checked, args, key, request.attemptCompletedSignal, restateErrors),
  );
  return stepResult(checked, journaled);
}

function requireRestateContext(ctx: unknown): asserts ctx is Context {
  const candidate = ctx as Partial<Context> | null | undefined;
  if (typeof candidate?.run !== 'function' || typeof candidate.request !== 'function') {
    throw new TypeError(
      'ctx must be the Restate handler context (restateRun runs only inside a Restate handler)',
    );
  }
}

// No cause on either: Restate logs it, and the handler's own error may hold what nobody asked to record.
const restateErrors: EngineErrors = {
  retryable: (envelope, afterMs) =>
    new RetryableError(`${envelope.kind}: ${envelope.message}`, {
      ...(afterMs === undefined ? {} : { retryAfter: afterMs }),
    }),
  terminal,
};

function terminal(envelope: DispatchError): TerminalError {
  return new TerminalError(`${envelope.kind}: ${envelope.message}`, {
    errorCode: statusByCode[envelope.jsonrpcCode] ?? 500,
    metadata: { kind: envelope.kind, attempts: String(envelope.attempts) },
  });
}
