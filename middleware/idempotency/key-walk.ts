/**
 * One process's walk of an idempotency key: claim it until the store answers, following another
 * holder until the key changes, or leading it (the layers inside run once under the lease).
 * @module
 */

import { DispatchError, isDispatchError, toDispatchError, type OutcomeWindow } from '../../src/errors.js';
import type { IdempotencyClaim, Receipt } from './store.js';
import type { DispatchContext, Next, Tool } from '../../src/types.js';
import { cancelled, storeUnavailable, type Fingerprint } from '../kit.js';
import {
  foundNotCommitted,
  isThenable,
  neverAborted,
  noop,
  outcomeUnknown,
  reconcileOutcome,
} from '../internal-kit.js';
import { completeLead } from './completion.js';
import { HeldLease } from './held-lease.js';
import { executionReceipt, keptReceipt, shortKey } from './key-receipts.js';
import { needsVouching, vouchForLead } from './receipt-vouching.js';
import type { KeyStores } from './key-stores.js';

/** How a walk of a key ends for its callers: a result (`hit` when stored before), or an error. */
export type Settlement = { ok: true; result: unknown; hit: boolean } | { ok: false; error: DispatchError };

// What a lead answers when the key must be claimed again: its lease was lost to another holder.
const claimAgain = Symbol('claim again');
type LeadEnd = Settlement | typeof claimAgain;

/** A walk of one key by this process, on behalf of the dispatch that started it. */
export class KeyWalk {
  /** The tool the key runs. */
  readonly tool: Tool;
  /** When the walk began, on the layer's clock. */
  readonly startedAt: number;
  /** What ends the walk: the walk's own signal when a caller may leave, else one that never aborts. */
  readonly signal: AbortSignal;
  readonly #controller: AbortController | undefined;
  #waitSignal: AbortSignal | undefined;
  // Whether the store already said another holder runs the key (its hit is said once).
  #followed = false;

  constructor(
    private readonly stores: KeyStores,
    /** The dispatch that leads the key for every caller of it in this process. */
    readonly ctx: DispatchContext,
    private readonly next: Next,
    /** The idempotency key. */
    readonly key: string,
    /** What the key's callers must all call. */
    readonly fingerprint: Fingerprint,
    callerSignal: AbortSignal,
  ) {
    this.tool = ctx.tool as Tool;
    this.startedAt = stores.now();
    this.#controller = callerSignal === neverAborted ? undefined : new AbortController();
    this.signal = this.#controller?.signal ?? neverAborted;
  }

  /** Ends the walk: its execution is aborted with `reason`, its waits end. */
  abort(reason: unknown): void {
    this.#controller?.abort(reason);
  }

  /**
   * Claims the key until the store answers it; never rejects. `whenSettled` is called as the
   * answer is known, in the same tick: a call with the key after that starts afresh.
   */
  async walk(whenSettled: () => void): Promise<Settlement> {
    const { ctx, key, stores, signal } = this;
    try {
      for (;;) {
        if (signal.aborted) return failed(cancelled(ctx, signal));
        let claim: IdempotencyClaim;
        try {
          const answer = stores.store.claim(key, this.fingerprint, stores.claimOptions(this.tool));
          // A store's answer at once is taken at once: a lead then runs the layers inside in the
          // dispatch's own tick, so a call started after it never takes a slot before it.
          claim = isThenable(answer) ? await answer : answer;
        } catch (error) {
          return failed(unavailable(error));
        }
        switch (claim.kind) {
          case 'hit':
            return { ok: true, result: claim.result, hit: true };
          case 'conflict':
            return failed(conflict(key));
          case 'unshareable':
            return failed(unshareable(key, claim.reason, claim.expiresInMs));
          case 'follow': {
            const failure = await this.#follow(claim.fence, claim.leaseEndsInMs);
            if (failure !== undefined) return failure;
            break;
          }
          case 'lead': {
            const held = new HeldLease(claim.lease, ctx);
            const since = stores.now();
            let earlier = claim.receipt;
            if (needsVouching(claim, this.tool, stores)) {
              const vouched = await vouchForLead(stores, this, held.lease);
              if (!vouched.ok) return failed(vouched.error);
              earlier = vouched.earlier;
            }
            const end = await this.#leadAfter(held, earlier, since);
            if (end !== claimAgain) return end;
            break;
          }
          default:
            return failed(unavailable(new Error('the store answered a claim of no known kind')));
        }
      }
    } finally {
      whenSettled();
    }
  }

  // Another holder runs the key: wait until it changes (or the holder's lease ends), then the
  // key is claimed again. Answers a failure only when the store could not be asked.
  async #follow(fence: number, leaseEndsInMs: number): Promise<Settlement | undefined> {
    const { ctx, key } = this;
    if (!this.#followed) ctx.emit('idempotency.hit', { key, source: 'in_flight' });
    this.#followed = true;
    // A store's wait listens to a signal: never the one every unsignalled walk shares.
    if (this.signal === neverAborted) this.#waitSignal ??= new AbortController().signal;
    const waitOptions = { signal: this.#waitSignal ?? this.signal, timeoutMs: leaseEndsInMs };
    try {
      await this.stores.store.changed(key, fence, waitOptions);
    } catch (error) {
      return failed(unavailable(error));
    }
    return undefined;
  }

  // An earlier leader's unsettled receipt says its action may have happened: that is settled
  // first (reconciled, or refused), never run over. Only an idempotent tool without `reconcile`
  // runs again after a crashed leader, as it may after any failure. The lease was granted at `since`.
  async #leadAfter(held: HeldLease, earlier: Receipt | undefined, since: number): Promise<LeadEnd> {
    const { ctx, tool } = this;
    const crashed = earlier?.status === 'running';
    const inDoubt = earlier?.status === 'in_doubt' && !tool.idempotent;
    const settleFirst = inDoubt || (crashed && (tool.reconcile !== undefined || !tool.idempotent));
    if (!settleFirst || earlier === undefined) return this.#leadHeld(held, since);
    const window: OutcomeWindow = crashed ? 'leader_crashed' : (earlier.window ?? 'attempt_timeout');
    // The earlier execution's receipt is what the operator needs (when it was sent, how often):
    // a refusal keeps it, only marked in doubt where a crash left it running.
    if (tool.reconcile === undefined) {
      const why = crashed
        ? 'an earlier leader of this key stopped mid-call (its lease ended), so its action may have taken effect'
        : 'an earlier execution of this key may have taken effect';
      return this.#refuse(held, window, why, keptReceipt(earlier, window, ctx));
    }
    const found = await reconcileOutcome(ctx, tool, ctx.attempt, window);
    switch (found.status) {
      case 'committed':
        ctx.outcome = { ok: true, result: found.result, attempts: ctx.attempt, reconciled: { window } };
        return this.#settleLead(held, false, undefined);
      case 'not_committed':
        return this.#leadHeld(held, since);
      default:
        return this.#refuse(held, window, found.reason ?? 'unknown', keptReceipt(earlier, window, ctx));
    }
  }

  // Runs the key under a lease granted at `since`, renewed first when a step between (a
  // reconcile, a receipt lookup) outlived a renewal period. A lease found gone runs nothing: the
  // key is claimed again, and its holder's outcome (or a new lead) answers.
  async #leadHeld(held: HeldLease, since: number): Promise<LeadEnd> {
    const { ctx, stores } = this;
    // Not awaited otherwise: a memory store's lead still runs in the dispatch's tick.
    if (!held.mayHaveLapsed(stores.now() - since)) return this.#lead(held);
    let kept: boolean;
    try {
      kept = await stores.store.renew(held.lease);
    } catch (error) {
      // Unreachable, it may have lapsed as well: freed without running, the caller may try again.
      await stores.release(ctx, held.lease);
      return failed(unavailable(error));
    }
    return kept ? this.#lead(held) : claimAgain;
  }

  // Runs the layers inside once under the lease; their signal aborts when every local caller
  // has left or the lease is lost.
  async #lead(held: HeldLease): Promise<LeadEnd> {
    const { ctx, signal, stores } = this;
    if (signal.aborted) {
      // A store that wrote this lead a running receipt gets a settled one: nobody crashed.
      const receipt = stores.receiptsOnLead ? this.#receipt('failed', undefined) : undefined;
      void stores.release(ctx, held.lease, receipt);
      return failed(cancelled(ctx, signal));
    }
    const limit = held.keepAlive(signal, stores.store, stores.timers) ?? this.#controller?.signal;
    const restore = limit === undefined ? noop : ctx.limit({ signal: limit });
    let threw = false;
    let failure: unknown;
    try {
      await this.next();
    } catch (error) {
      threw = true;
      failure = error;
    } finally {
      held.stopKeepingAlive();
      restore();
    }
    return this.#settleLead(held, threw, failure);
  }

  // What the execution left: a success is stored; a failure releases the key, in doubt where
  // its action may have taken effect.
  async #settleLead(held: HeldLease, threw: boolean, failure: unknown): Promise<LeadEnd> {
    const { ctx, stores } = this;
    const { outcome } = ctx;
    if (threw || outcome?.ok !== true) {
      if (held.lost && !this.signal.aborted) return this.#afterLost(held);
      const error = (
        threw ? toDispatchError(failure, ctx.attempt) : (outcome ?? noOutcome(ctx))
      ) as DispatchError;
      // A failure a reconcile found did not take effect is known: it leaves nothing in doubt.
      const notCommitted = foundNotCommitted(error);
      const window = notCommitted ? undefined : doubtOf(error, this.tool);
      if (window === undefined) {
        void stores.release(ctx, held.lease, this.#receipt('failed', undefined, notCommitted));
        return failed(error);
      }
      // An in-doubt key is answered once its receipt is written, so whoever reads the receipts
      // after the answer (an operator, another process) finds it.
      await stores.release(ctx, held.lease, this.#receipt('in_doubt', window));
      return failed(error);
    }
    // A success counts even when every local caller left: its side effect happened, so it is
    // stored, and the key does not run again.
    const receipt = this.#receipt('succeeded', outcome.reconciled?.window);
    // An attached receipt store is written first: a crash between the two writes then leaves a
    // receipt and a key that the next leader reconciles, never a stored success with no receipt.
    if (stores.recordsApart) await stores.record(ctx, receipt);
    const result = await completeLead(stores, ctx, held, outcome.result, receipt);
    return { ok: true, result, hit: false };
  }

  // The lease was lost mid-call: a tool that can reconcile is asked whether the action took
  // effect before the key may run again; one that is not idempotent is left in doubt, as after
  // its timeout; for an idempotent one, another leader's outcome (or a new lead) is this call's.
  async #afterLost(held: HeldLease): Promise<LeadEnd> {
    const { ctx, tool, stores } = this;
    const window: OutcomeWindow = 'lease_lost';
    if (tool.reconcile === undefined) {
      if (tool.idempotent) {
        void stores.release(ctx, held.lease);
        return claimAgain;
      }
      const why = 'its lease on this key was lost mid-call, so its action may have taken effect';
      return this.#refuse(held, window, why, this.#receipt('in_doubt', window));
    }
    const found = await reconcileOutcome(ctx, tool, ctx.attempt, window);
    switch (found.status) {
      case 'committed':
        ctx.outcome = { ok: true, result: found.result, attempts: ctx.attempt, reconciled: { window } };
        return this.#settleLead(held, false, undefined);
      case 'not_committed':
        // Settled as not run, so that the next lead does not reconcile it again.
        await stores.release(ctx, held.lease, this.#receipt('failed', undefined, true));
        return claimAgain;
      default:
        return this.#refuse(held, window, found.reason ?? 'unknown', this.#receipt('in_doubt', window));
    }
  }

  // Fails the key's callers with outcome_unknown without running it, once the key is left in
  // doubt with `receipt`.
  async #refuse(held: HeldLease, window: OutcomeWindow, why: string, receipt: Receipt): Promise<Settlement> {
    const refusal = failed(outcomeUnknown(this.ctx, window, `${why}; it is not run again`));
    await this.stores.release(this.ctx, held.lease, receipt);
    return refusal;
  }

  #receipt(status: Receipt['status'], window: OutcomeWindow | undefined, notCommitted = false): Receipt {
    return executionReceipt(this, status, window, this.stores.now(), notCommitted);
  }
}

/** The error of a key already used for another tool or other args. */
export function conflict(key: string): DispatchError {
  return new DispatchError(
    'idempotency_conflict',
    `Idempotency key "${shortKey(key)}" was already used for a different tool or different args`,
  );
}

function unshareable(key: string, reason: string, expiresInMs: number): DispatchError {
  return new DispatchError(
    'idempotency_result_unavailable',
    `Idempotency key "${shortKey(key)}" already succeeded, but its result could not be shared (${reason}); it is not run again`,
    { retryAfterMs: expiresInMs },
  );
}

// Where a failed execution leaves its action in doubt: an unknown outcome, or a timeout of a tool
// that is not safe to run twice; `undefined` when it is known not to matter.
function doubtOf(error: DispatchError, tool: Tool): OutcomeWindow | undefined {
  if (error.kind === 'outcome_unknown') return error.window ?? 'handler_unknown';
  return error.kind === 'timeout' && !tool.idempotent ? 'attempt_timeout' : undefined;
}

function failed(error: DispatchError): Settlement {
  return { ok: false, error };
}

function noOutcome(ctx: DispatchContext): DispatchError {
  return new DispatchError('internal', 'The layers inside idempotency() produced no outcome', {
    attempts: ctx.attempt,
  });
}

function unavailable(error: unknown): DispatchError {
  if (isDispatchError(error)) return error;
  return storeUnavailable(
    `The idempotency store could not be reached: ${String((error as Error)?.message ?? error)}`,
    { cause: error },
  );
}
