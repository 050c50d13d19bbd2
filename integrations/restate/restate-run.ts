/**
 * `restateRun`: a dispatch as a Restate `ctx.run` step, keyed by the invocation id and the
 * step's name, its failures mapped to Restate's retryable and terminal errors.
 * @module
 */

import { type Context, RetryableError, TerminalError } from '@restatedev/restate-sdk';
import type { DispatchError, Dispatcher, Outcome } from '../../index.js';
import { engineVerdict } from '../durable/engine-verdict.js';
import {
  checkStepOptions,
  dispatchStep,
  journaledSuccess,
  type CheckedStepOptions,
  type DurableStepOptions,
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
  const checked = checkStepOptions(dispatcher, tool, options);
  requireRestateContext(ctx);
  const request = ctx.request();
  const key = `restate:${request.id}:${checked.name}`;
  const journaled = await ctx.run(checked.name, async () => {
    const outcome = await dispatchStep(dispatcher, checked, args, key, request.attemptCompletedSignal);
    return journaledOrThrown(outcome, checked);
  });
  if (checked.failures === 'return') return journaled;
  return (journaled as JournaledOutcome & { ok: true }).result;
}

function requireRestateContext(ctx: unknown): asserts ctx is Context {
  const candidate = ctx as Partial<Context> | null | undefined;
  if (typeof candidate?.run !== 'function' || typeof candidate.request !== 'function') {
    throw new TypeError(
      'ctx must be the Restate handler context (restateRun runs only inside a Restate handler)',
    );
  }
}

// What the step journals: the success, or a final failure as data; anything else is thrown.
function journaledOrThrown(outcome: Outcome, checked: CheckedStepOptions): JournaledOutcome {
  if (outcome.ok) return journaledSuccess(outcome);
  const verdict = engineVerdict(outcome, checked.toolRef);
  if (verdict.retry) {
    // No cause: Restate logs it, and the handler's own error may hold what nobody asked to record.
    throw new RetryableError(`${outcome.kind}: ${outcome.message}`, {
      ...(verdict.afterMs === undefined ? {} : { retryAfter: verdict.afterMs }),
    });
  }
  if (checked.failures === 'return') return outcome.toJSON();
  throw terminal(outcome);
}

function terminal(envelope: DispatchError): TerminalError {
  return new TerminalError(`${envelope.kind}: ${envelope.message}`, {
    errorCode: statusByCode[envelope.jsonrpcCode] ?? 500,
    metadata: { kind: envelope.kind, attempts: String(envelope.attempts) },
  });
}
