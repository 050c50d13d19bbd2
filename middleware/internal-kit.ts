/**
 * The internal kit: the helpers the built-in layers and host bridges share that are not public.
 * No package subpath exports this module; the architecture test lets an integration import it
 * (its one door into the package's internals) besides the public faces.
 * @module
 */

export { neverAborted, noop } from '../src/internal/abort.js';
export { isThenable } from '../src/internal/thenable.js';
export { windowTooSmall } from '../src/internal/failures.js';
export { isJsonParseError } from '../src/errors.js';
export { parseJsonArgs, refusedArgs } from '../src/internal/raw-json-args.js';
export { hostDenialOf } from '../src/internal/host-denial.js';
export { attemptCost } from '../src/internal/cost.js';
export {
  foundNotCommitted,
  outcomeUnknown,
  reconcileFindingOf,
  reconcileOutcome,
} from '../src/internal/reconcile.js';
export type { ReconcileFinding, Reconciled } from '../src/internal/reconcile.js';
