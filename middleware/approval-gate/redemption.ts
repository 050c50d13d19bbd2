/**
 * The one run of an approved token: claimed in the approval store before the handler runs and
 * settled there after it, so that a later delivery gets the recorded outcome, never a second run.
 * @module
 */

import { DispatchError, describeThrown, isDispatchError, toDispatchError } from '../../src/errors.js';
import type { DispatchContext, Next, Tool } from '../../src/types.js';
import { cancelled, raceAbort, storeUnavailable } from '../kit.js';
import { outcomeUnknown } from '../internal-kit.js';
import type { ApprovalRedemption, ApprovalSettlement, ApprovalStore } from './store.js';

/** An approval store that records redemptions (`redeem` and `settle`). */
export type RedeemingStore = ApprovalStore & Required<Pick<ApprovalStore, 'redeem' | 'settle'>>;

/** Whether `store` records redemptions itself. */
export function isRedeemingStore(store: ApprovalStore): store is RedeemingStore {
  return typeof store.redeem === 'function' && typeof store.settle === 'function';
}

/**
 * What the gate answers for a call that carries an approved token: let it through the layer that
 * claims the token's run. `askAgain` pauses the call anew, for a token that expired meanwhile.
 */
export class Redemption {
  constructor(
    /** The approved token. */
    readonly token: string,
    /** This delivery's claim on the token's run, fresh for each delivery. */
    readonly claim: string,
    /** Pauses the call anew: an `approval_required` envelope, or the store's failure. */
    readonly askAgain: () => unknown,
  ) {}
}

/** How a run ended, as a delivery that waited on it in this process gets it. */
type Ended =
  | { readonly ok: true; readonly result: unknown }
  | { readonly ok: false; readonly error: DispatchError };

/** The runs of approved tokens over one store: claims, settles, and the ones running here. */
export class TokenRuns {
  // The runs this process holds, by token: a second delivery here waits for the first one's end.
  readonly #local = new Map<string, Promise<Ended>>();

  constructor(private readonly store: RedeemingStore) {}

  /** Runs `next` for the delivery that claims the token's run; answers every other one without it. */
  async run(ctx: DispatchContext, next: Next, redemption: Redemption): Promise<void> {
    const { token, claim } = redemption;
    let answer: ApprovalRedemption | undefined;
    try {
      answer = await this.store.redeem(token, claim);
    } catch (error) {
      throw approvalStoreFailed(error);
    }
    switch (answer?.state) {
      case 'claimed':
        return this.#lead(ctx, next, token, claim);
      case 'running':
        return this.#follow(ctx, token);
      case 'succeeded':
        ctx.outcome = { ok: true, result: answer.result, attempts: 0 };
        return;
      case 'unshareable':
        throw new DispatchError(
          'idempotency_result_unavailable',
          `"${ctx.displayName}" already ran on this approval, but its result could not be kept (${answer.reason}); it is not run again`,
        );
      case 'in_doubt':
        throw outcomeUnknown(ctx, answer.window, 'it already ran on this approval; it is not run again');
      default: {
        // Expired between the look-up and the claim: a new request.
        const again = await redemption.askAgain();
        throw isDispatchError(again)
          ? again
          : new DispatchError('internal', 'The approval gate found no request for the token');
      }
    }
  }

  async #lead(ctx: DispatchContext, next: Next, token: string, claim: string): Promise<void> {
    let ended!: (end: Ended) => void;
    this.#local.set(token, new Promise<Ended>((resolve) => (ended = resolve)));
    let threw = false;
    let failure: unknown;
    try {
      await next();
    } catch (error) {
      threw = true;
      failure = error;
    }
    const end = endOf(ctx, threw, failure);
    try {
      await this.store.settle(token, claim, settlementOf(end, ctx.tool));
    } catch {
      // The claim stays in the store unsettled: later deliveries are refused, never run again.
    } finally {
      this.#local.delete(token);
      ended(end);
    }
    if (threw) throw failure;
  }

  async #follow(ctx: DispatchContext, token: string): Promise<void> {
    const local = this.#local.get(token);
    if (local === undefined) {
      throw new DispatchError(
        'idempotency_result_unavailable',
        `"${ctx.displayName}" is being run by another delivery of its approval (or that run was cut off); it is not run again here. Deliver the approval again later for its outcome`,
      );
    }
    const end = await raceAbort(local, ctx.signal, () => cancelled(ctx, ctx.signal));
    if (!end.ok) throw end.error;
    ctx.outcome = { ok: true, result: end.result, attempts: 0 };
  }
}

function endOf(ctx: DispatchContext, threw: boolean, failure: unknown): Ended {
  const { outcome } = ctx;
  if (!threw && outcome?.ok === true) return { ok: true, result: outcome.result };
  if (threw) return { ok: false, error: toDispatchError(failure, ctx.attempt) };
  if (outcome !== undefined && !outcome.ok) return { ok: false, error: outcome };
  return {
    ok: false,
    error: new DispatchError('internal', 'The layers inside approvalGate() produced no outcome', {
      attempts: ctx.attempt,
    }),
  };
}

// What the store keeps of a run: its result, or that it may have acted (as the idempotency layer
// judges it); a failure known to have done nothing frees the token for another delivery.
function settlementOf(end: Ended, tool: Tool | undefined): ApprovalSettlement {
  if (end.ok) return { state: 'succeeded', result: end.result };
  const { error } = end;
  if (error.kind === 'outcome_unknown')
    return { state: 'in_doubt', window: error.window ?? 'handler_unknown' };
  if (error.kind === 'timeout' && tool?.idempotent !== true)
    return { state: 'in_doubt', window: 'attempt_timeout' };
  return { state: 'released' };
}

/** The envelope for an approval store that failed: a store that fails closes the gate. */
export function approvalStoreFailed(error: unknown): DispatchError {
  return isDispatchError(error)
    ? error
    : storeUnavailable(`The approval store failed: ${describeThrown(error)}`, { cause: error });
}
