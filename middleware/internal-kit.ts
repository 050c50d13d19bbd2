/**
 * The internal kit: the helpers the built-in layers and host bridges share that are not public.
 * No package subpath exports this module; the architecture test lets an integration import it
 * (its one door into the package's internals) besides the public faces.
 * @module
 */

import { type DeadlineList, type DeadlineNode, DeadlineScheduler } from '../src/internal/deadlines.js';
import type { StandardSchemaV1 } from '../src/standard-schema.js';
import type { DeadlineClock } from '../src/types.js';

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

/**
 * How an issue of a tool's schema reads in an envelope's message, for every check of args against
 * it (the schema layer's, the approval gate's of edited args): `path: message`
 * (`items[2].sku: Required`), or its message alone at the root.
 */
export function describeIssue(issue: StandardSchemaV1.Issue): string {
  const path = (issue.path ?? []).map((segment) =>
    typeof segment === 'object' && segment !== null ? segment.key : segment,
  );
  if (path.length === 0) return issue.message;
  const where = path
    .map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i === 0 ? '' : '.'}${String(key)}`))
    .join('');
  return `${where}: ${issue.message}`;
}

/**
 * A `setTimeout`/`clearTimeout` pair on `clock` that coalesces timers of one duration into one
 * real timer (the scheduler behind `ctx.limit`'s deadlines): for a layer that sets a timer on
 * nearly every call and clears nearly all of them, as the autopilot's hedge does. Setting one costs
 * a node in a list, and clearing it unlinks the node.
 *
 * @example
 * const timers = coalescedTimers(systemClock);
 * const handle = timers.setTimeout(() => startHedge(), 120);
 * timers.clearTimeout(handle);
 */
export function coalescedTimers(clock: DeadlineClock): DeadlineClock {
  const scheduler = new DeadlineScheduler(clock);
  return {
    now: () => clock.now(),
    setTimeout(callback: () => void, ms: number): unknown {
      const node = new TimerNode(ms, clock.now() + ms, callback);
      scheduler.schedule(node);
      return node;
    },
    clearTimeout(handle: unknown): void {
      if (handle instanceof TimerNode) scheduler.cancel(handle);
    },
  };
}

// One timer of `coalescedTimers`: its own node in the scheduler's list of its duration.
class TimerNode implements DeadlineNode {
  cancelled = false;
  list: DeadlineList | undefined = undefined;
  previous: DeadlineNode | undefined = undefined;
  next: DeadlineNode | undefined = undefined;

  constructor(
    readonly ms: number,
    readonly at: number,
    readonly callback: () => void,
  ) {}

  expire(): void {
    this.callback();
  }
}
