/**
 * `dbosStep`: a dispatch as a DBOS step, keyed by the workflow id and the step's id, retried by
 * DBOS only for the failures `engineVerdict` gives to the engine.
 * @module
 */

import { DBOS } from '@dbos-inc/dbos-sdk';
import { isDispatchError, type Dispatcher } from '../../index.js';
import { optionKeys } from '../../middleware/index.js';
import { engineVerdict } from '../durable/engine-verdict.js';
import {
  checkStepOptions,
  runStepDispatch,
  stepResult,
  withoutCause,
  type DurableStepOptions,
  type EngineErrors,
  type JournaledOutcome,
  type StepTool,
} from '../durable/step.js';

/** Options for `dbosStep`. */
export interface DbosStepOptions extends DurableStepOptions {
  /**
   * Runs of the step in total, the first included, for the failures DBOS retries; each run
   * makes the stack's own in-process attempts. Past it the workflow gets DBOS's
   * `DBOSMaxStepRetriesError`.
   * @default 3
   */
  maxAttempts?: number;
  /**
   * The wait before the step's second run, in seconds; DBOS doubles it before each further run.
   * @default 1
   */
  intervalSeconds?: number;
}

const dbosStepOptionKeys = optionKeys<DbosStepOptions>({
  name: true,
  keyTtlMs: true,
  failures: true,
  maxAttempts: true,
  intervalSeconds: true,
});

/**
 * Runs `dispatcher.dispatch(tool, args)` as the DBOS step `name` of the current workflow: DBOS
 * checkpoints its outcome in Postgres (a recovered workflow gets it back without running the
 * tool), and the key `dbos:<workflowID>:<stepID>` (remembered for `keyTtlMs`) covers the window
 * between the handler's side effect and the checkpoint. The dispatch ends when the workflow is
 * cancelled. DBOS retries the step (`shouldRetry`) only for the failures `engineVerdict` gives to
 * the engine; any other failure is recorded as the step's outcome and its envelope thrown from
 * the workflow, or, with `failures: 'return'`, recorded and returned as data.
 *
 * @param tool - The tool's name, or `registry.get(name)` so an idempotent tool's timeout is retried.
 * @throws TypeError naming `dispatcher`, `tool`, `name`, `keyTtlMs`, `failures`, `maxAttempts` or
 *   `intervalSeconds` for bad input, and when called outside a DBOS workflow.
 * @example
 * async function checkout(order: Order) {
 *   return dbosStep(dispatcher, 'payments.charge', order, { name: 'charge' });
 * }
 * const checkoutWorkflow = DBOS.registerWorkflow(checkout, { name: 'checkout' });
 */
export function dbosStep<Result = unknown>(
  dispatcher: Dispatcher,
  tool: StepTool,
  args: unknown,
  options: DbosStepOptions & { failures?: 'throw' },
): Promise<Result>;
export function dbosStep<Result = unknown>(
  dispatcher: Dispatcher,
  tool: StepTool,
  args: unknown,
  options: DbosStepOptions & { failures: 'return' },
): Promise<JournaledOutcome<Result>>;
export async function dbosStep(
  dispatcher: Dispatcher,
  tool: StepTool,
  args: unknown,
  options: DbosStepOptions,
): Promise<unknown> {
  const checked = checkStepOptions(dispatcher, tool, options, 'dbosStep', dbosStepOptionKeys);
  const { maxAttempts = 3, intervalSeconds = 1 } = options;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
    throw new TypeError(`maxAttempts must be an integer >= 1, got ${String(maxAttempts)}`);
  }
  if (typeof intervalSeconds !== 'number' || !(intervalSeconds > 0) || !Number.isFinite(intervalSeconds)) {
    throw new TypeError(`intervalSeconds must be a number > 0, got ${String(intervalSeconds)}`);
  }
  if (!DBOS.isInWorkflow()) {
    throw new TypeError(
      'dbosStep runs only inside a DBOS workflow, outside its steps (DBOS.registerWorkflow)',
    );
  }
  const body = () =>
    runStepDispatch(
      dispatcher,
      checked,
      args,
      `dbos:${DBOS.workflowID}:${DBOS.stepID}`,
      stepSignal(),
      dbosErrors,
    );
  const journaled = await DBOS.runStep(body, {
    name: checked.name,
    retriesAllowed: true,
    maxAttempts,
    intervalSeconds,
    backoffRate: 2,
    shouldRetry: (error) => isDispatchError(error) && engineVerdict(error, checked.toolRef).retry,
  });
  return stepResult(checked, journaled);
}

// DBOS checkpoints what the step returns; a thrown envelope is for shouldRetry to judge.
const dbosErrors: EngineErrors = { retryable: withoutCause, terminal: withoutCause };

function stepSignal(): AbortSignal | undefined {
  const status = DBOS.stepStatus;
  if (status === undefined) return undefined;
  const { cancelSignal, timeoutSignal } = status;
  return timeoutSignal === undefined ? cancelSignal : AbortSignal.any([cancelSignal, timeoutSignal]);
}
