/**
 * Idempotency's one decision loop: this process's callers of a key share one walk of an
 * `IdempotencyStore`'s claim loop (a memory store by default, which answers synchronously, so
 * that walk then takes no promise of its own).
 * @module
 */

import type { Clock } from '../../src/clock.js';
import { DispatchError, describeThrown, isDispatchError, toDispatchError } from '../../src/errors.js';
import type {
  IdempotencyClaim,
  IdempotencyCompletion,
  IdempotencyLease,
  IdempotencyStore,
  Receipt,
  ReceiptStore,
} from './store.js';
import type { MaybePromise } from '../../src/stores.js';
import type { OutcomeWindow } from '../../src/errors.js';
import type { DispatchContext, Next, Tool } from '../../src/types.js';
import {
  cancelled,
  foundNotCommitted,
  isThenable,
  keepLeaseAlive,
  neverAborted,
  noop,
  onAbort,
  outcomeUnknown,
  raceAbort,
  reconcileFindingOf,
  reconcileOutcome,
  storeUnavailable,
} from '../kit.js';
import { fingerprint, type Fingerprint } from '../kit.js';

type Settlement = { ok: true; result: unknown; hit: boolean } | { ok: false; error: DispatchError };

// A completion that failed is sent again (it is resend-safe) this often at first, doubling.
const completeRetryMs = 50;
// Retries of a completion whose lease never lapses on its own (a memory store's).
const maxCompleteRetries = 8;

/**
 * One process's walk of a key (as leader or follower of the store), the callers waiting on it,
 * and, while it leads under a lease that can lapse, its watch on that lease.
 */
class Flight {
  // Callers still waiting, the first included; the execution is aborted when it reaches 0.
  waiters = 1;
  settlement: Settlement | undefined;
  // Whether the store already said another holder runs the key (its hit is emitted once).
  followed = false;
  readonly tool: Tool;
  readonly startedAt: number;
  readonly controller: AbortController | undefined;
  #resolve!: (settlement: Settlement) => void;
  readonly done = new Promise<Settlement>((resolve) => {
    this.#resolve = resolve;
  });

  // The current lead's clean-ups and, for a lease that can lapse, its watch.
  restore: () => void = noop;
  stopRenewing: () => void = noop;
  execution: AbortController | undefined;
  watching = false;
  lostReported = false;
  offLease: () => void = noop;

  constructor(
    readonly ctx: DispatchContext,
    readonly next: Next,
    readonly key: string,
    readonly fingerprint: Fingerprint,
    // What ends the walk: the caller's signal, or the flight's own when others may share it.
    readonly signal: AbortSignal,
    startedAt: number,
  ) {
    this.tool = ctx.tool as Tool;
    this.startedAt = startedAt;
    this.controller = signal === neverAborted ? undefined : new AbortController();
    if (this.controller !== undefined) this.signal = this.controller.signal;
  }

  #waitSignal: AbortSignal | undefined;

  /** What a store's wait listens to: never the one signal every unsignalled flight shares. */
  get waitSignal(): AbortSignal {
    if (this.signal !== neverAborted) return this.signal;
    this.#waitSignal ??= new AbortController().signal;
    return this.#waitSignal;
  }

  settle(settlement: Settlement): void {
    this.settlement = settlement;
    this.#resolve(settlement);
  }

  /** Whether the lease of this lead was lost (seen by a renewal or the completion). */
  lost(lease: IdempotencyLease): boolean {
    return this.watching && lease.signal.aborted;
  }

  /** Says once that the lease was lost, when the store has said so. */
  reportLost(lease: IdempotencyLease): void {
    if (this.lostReported || !lease.signal.aborted) return;
    this.lostReported = true;
    this.ctx.emit('idempotency.lease_lost', { key: lease.key, fence: lease.fence });
  }
}

/** The layer's state: the keys this process runs now, over the store that shares them. */
export class KeyedCalls {
  readonly inFlight = new Map<string, Flight>();

  constructor(
    private readonly store: IdempotencyStore,
    private readonly receipts: ReceiptStore,
    private readonly storeTtlMs: number,
    private readonly timers: Pick<Clock, 'setTimeout' | 'clearTimeout'>,
    private readonly now: () => number,
    private readonly receiptsOnLead: boolean,
  ) {}

  /** A keyed call: joins this process's walk of the key, or starts one. */
  async run(ctx: DispatchContext, next: Next, key: string): Promise<void> {
    const { tool } = ctx;
    if (tool === undefined) {
      throw new DispatchError('internal', 'idempotency() must sit inside toolLookup()');
    }
    const print = fingerprint(tool.name, ctx.args);
    const existing = this.inFlight.get(key);
    if (existing !== undefined) {
      const joined = await this.join(ctx, key, existing, print);
      if (!joined.ok) throw joined.error;
      ctx.outcome = { ok: true, result: joined.result, attempts: 0 };
      return;
    }
    const callerSignal = ctx.signal;
    if (callerSignal.aborted) throw cancelled(ctx, callerSignal);
    let claim: MaybePromise<IdempotencyClaim>;
    try {
      claim = this.store.claim(key, print, this.claimOptions(tool));
    } catch (error) {
      throw unavailable(error);
    }
    let settlement: Settlement | undefined;
    if (isThenable(claim) || claim.kind === 'lead' || claim.kind === 'follow') {
      const flight = new Flight(ctx, next, key, print, callerSignal, this.now());
      this.inFlight.set(key, flight);
      // Subscribed before the layers inside start, so an abort while they do is not missed.
      const unsubscribe = onAbort(callerSignal, () => this.detach(flight, callerSignal.reason));
      this.decide(flight, claim);
      settlement = flight.settlement ?? (await flight.done);
      unsubscribe();
    } else if (claim.kind === 'hit') {
      // A synchronous store's answer needs no flight: nobody can join it.
      ctx.emit('idempotency.hit', { key, source: 'cache' });
      ctx.outcome = { ok: true, result: claim.result, attempts: 0 };
      return;
    } else {
      settlement = answerOf(key, claim) as Settlement;
    }
    if (!settlement.ok) throw settlement.error;
    if (settlement.hit) {
      ctx.emit('idempotency.hit', { key, source: 'cache' });
      ctx.outcome = { ok: true, result: settlement.result, attempts: 0 };
    } else if (ctx.outcome?.ok !== true || ctx.outcome.result !== settlement.result) {
      // The result of another leader's execution of the key, after this one lost its lease.
      ctx.outcome = { ok: true, result: settlement.result, attempts: ctx.attempt };
    }
  }

  // Another caller in this process walks the key: wait for its settlement.
  private join(ctx: DispatchContext, key: string, flight: Flight, print: Fingerprint): Promise<Settlement> {
    if (flight.fingerprint !== print) throw conflict(key);
    flight.waiters += 1;
    ctx.emit('idempotency.hit', { key, source: 'in_flight' });
    const callerSignal = ctx.signal;
    return raceAbort(flight.done, callerSignal, () => {
      this.detach(flight, callerSignal.reason);
      return cancelled(ctx, callerSignal);
    });
  }

  // claim → hit / unshareable / conflict / lead / follow, until one answers.
  private claim(flight: Flight): void {
    if (flight.signal.aborted) return this.finish(flight, failed(cancelled(flight.ctx, flight.signal)));
    let claim: MaybePromise<IdempotencyClaim>;
    try {
      claim = this.store.claim(flight.key, flight.fingerprint, this.claimOptions(flight.tool));
    } catch (error) {
      return this.finish(flight, failed(unavailable(error)));
    }
    this.decide(flight, claim);
  }

  private decide(flight: Flight, answer: MaybePromise<IdempotencyClaim>): void {
    if (isThenable(answer)) {
      answer.then(
        (claim) => this.decide(flight, claim),
        (error: unknown) => this.finish(flight, failed(unavailable(error))),
      );
      return;
    }
    const settlement = answerOf(flight.key, answer);
    if (settlement !== undefined) return this.finish(flight, settlement);
    if (answer.kind === 'lead') return this.leadAfter(flight, answer.lease, answer.receipt);
    if (answer.kind !== 'follow') return;
    const { key, waitSignal } = flight;
    if (!flight.followed) flight.ctx.emit('idempotency.hit', { key, source: 'in_flight' });
    flight.followed = true;
    let waited: MaybePromise<void>;
    try {
      waited = this.store.changed(key, answer.fence, { signal: waitSignal, timeoutMs: answer.leaseEndsInMs });
    } catch (error) {
      return this.finish(flight, failed(unavailable(error)));
    }
    if (!isThenable(waited)) return this.claim(flight);
    waited.then(
      () => this.claim(flight),
      (error: unknown) => this.finish(flight, failed(unavailable(error))),
    );
  }

  // An earlier leader's unsettled receipt says its action may have happened: that is settled
  // first (reconciled, or refused), never run over. Only an idempotent tool without `reconcile`
  // runs again after a crashed leader, as it may after any failure.
  private leadAfter(flight: Flight, lease: IdempotencyLease, earlier: Receipt | undefined): void {
    const { tool } = flight;
    const crashed = earlier?.status === 'running';
    const inDoubt = earlier?.status === 'in_doubt' && !tool.idempotent;
    const settleFirst = inDoubt || (crashed && (tool.reconcile !== undefined || !tool.idempotent));
    if (!settleFirst || earlier === undefined) return this.lead(flight, lease);
    const window: OutcomeWindow = crashed ? 'leader_crashed' : (earlier.window ?? 'attempt_timeout');
    // The earlier execution's receipt is what the operator needs (when it was sent, how often):
    // a refusal keeps it, only marked in doubt where a crash left it running.
    const kept = (): Receipt => keptReceipt(earlier, window, flight.ctx);
    if (tool.reconcile === undefined) {
      const why = crashed
        ? 'an earlier leader of this key stopped mid-call (its lease ended), so its action may have taken effect'
        : 'an earlier execution of this key may have taken effect';
      return this.refuse(flight, lease, window, why, kept());
    }
    const { ctx } = flight;
    void reconcileOutcome(ctx, tool, ctx.attempt, window).then((found) => {
      if (found.status !== 'committed') {
        if (found.status === 'not_committed') return this.lead(flight, lease);
        return this.refuse(flight, lease, window, found.reason ?? 'unknown', kept());
      }
      ctx.outcome = { ok: true, result: found.result, attempts: ctx.attempt, reconciled: { window } };
      this.led(flight, lease, false, undefined);
    });
  }

  // The lease was lost mid-call: a tool that can reconcile is asked whether the action took
  // effect before the key may run again; one that is not idempotent is left in doubt, as after
  // its timeout; for an idempotent one, another leader's outcome (or a new lead) is this call's.
  private afterLost(flight: Flight, lease: IdempotencyLease): void {
    const { ctx, tool } = flight;
    const window: OutcomeWindow = 'lease_lost';
    if (tool.reconcile === undefined) {
      if (!tool.idempotent) {
        const why = 'its lease on this key was lost mid-call, so its action may have taken effect';
        return this.refuse(flight, lease, window, why, this.receiptOf(flight, 'in_doubt', window));
      }
      this.release(flight, lease);
      return this.claim(flight);
    }
    void reconcileOutcome(ctx, tool, ctx.attempt, window).then((found) => {
      if (found.status === 'committed') {
        ctx.outcome = { ok: true, result: found.result, attempts: ctx.attempt, reconciled: { window } };
        return this.led(flight, lease, false, undefined);
      }
      if (found.status !== 'not_committed')
        return this.refuse(
          flight,
          lease,
          window,
          found.reason ?? 'unknown',
          this.receiptOf(flight, 'in_doubt', window),
        );
      // Settled as not run, so that the next lead does not reconcile it again.
      const released = this.release(flight, lease, this.receiptOf(flight, 'failed', undefined, true));
      if (released === undefined) return this.claim(flight);
      void released.then(() => this.claim(flight));
    });
  }

  // Fails the key's callers with outcome_unknown without running it, and leaves it in doubt
  // with `receipt`.
  private refuse(
    flight: Flight,
    lease: IdempotencyLease,
    window: OutcomeWindow,
    why: string,
    receipt: Receipt,
  ): void {
    const refusal = failed(outcomeUnknown(flight.ctx, window, `${why}; it is not run again`));
    this.settleAfter(this.release(flight, lease, receipt), flight, refusal);
  }

  // Runs the key once under its lease; the execution's signal aborts when every local caller
  // has left or the lease is lost.
  private lead(flight: Flight, lease: IdempotencyLease): void {
    const { ctx, signal } = flight;
    if (signal.aborted) {
      // A store that wrote this lead a running receipt gets a settled one: nobody crashed.
      this.release(
        flight,
        lease,
        this.receiptsOnLead ? this.receiptOf(flight, 'failed', undefined) : undefined,
      );
      return this.finish(flight, failed(cancelled(ctx, signal)));
    }
    let limit: AbortSignal | undefined = flight.controller?.signal;
    if (lease.renewEveryMs < Infinity) {
      const execution = new AbortController();
      flight.execution = execution;
      flight.watching = false;
      flight.lostReported = false;
      flight.offLease = onAbort(signal, () => execution.abort(signal.reason));
      flight.stopRenewing = keepLeaseAlive(lease, () => this.renew(flight, lease), this.timers);
      limit = execution.signal;
    }
    if (limit !== undefined) flight.restore = ctx.limit({ signal: limit });
    flight.next().then(
      () => this.led(flight, lease, false, undefined),
      (error: unknown) => this.led(flight, lease, true, error),
    );
  }

  // A store aborts a lease's signal only when a renewal or the completion finds it gone, so it
  // is watched from the first renewal on: a call shorter than a renewal period never makes the
  // store build that signal.
  private renew(flight: Flight, lease: IdempotencyLease): MaybePromise<boolean> {
    if (!flight.watching) {
      flight.watching = true;
      const offCaller = flight.offLease;
      const offLost = onAbort(lease.signal, () => {
        flight.reportLost(lease);
        flight.execution?.abort(lease.signal.reason);
      });
      flight.offLease = () => {
        offCaller();
        offLost();
      };
    }
    return this.store.renew(lease);
  }

  private led(flight: Flight, lease: IdempotencyLease, threw: boolean, failure: unknown): void {
    flight.stopRenewing();
    flight.offLease();
    flight.restore();
    flight.stopRenewing = flight.offLease = flight.restore = noop;
    const { ctx, signal } = flight;
    const { outcome } = ctx;
    if (threw || outcome?.ok !== true) {
      if (flight.lost(lease) && !signal.aborted) return this.afterLost(flight, lease);
      const error = (
        threw ? toDispatchError(failure, ctx.attempt) : (outcome ?? noOutcome(ctx))
      ) as DispatchError;
      // A failure a reconcile found did not take effect is known: it leaves nothing in doubt.
      const notCommitted = foundNotCommitted(error);
      const window = notCommitted ? undefined : doubtOf(error, flight.tool);
      if (window === undefined) {
        this.release(flight, lease, this.receiptOf(flight, 'failed', undefined, notCommitted));
        return this.finish(flight, failed(error));
      }
      return this.settleAfter(
        this.release(flight, lease, this.receiptOf(flight, 'in_doubt', window)),
        flight,
        failed(error),
      );
    }
    // A success counts even when every local caller left: its side effect happened, so it is
    // stored, and the key does not run again.
    const result = outcome.result;
    const { receipt, recorded } = this.own(
      flight,
      this.receiptOf(flight, 'succeeded', outcome.reconciled?.window),
    );
    // An attached receipt store is written first: a crash between the two writes then leaves a
    // receipt and a key that the next leader reconciles, never a stored success with no receipt.
    if (recorded === undefined) return this.complete(flight, lease, result, receipt);
    void recorded.then(() => this.complete(flight, lease, result, receipt));
  }

  private complete(
    flight: Flight,
    lease: IdempotencyLease,
    result: unknown,
    receipt: Receipt | undefined,
  ): void {
    let completion: MaybePromise<IdempotencyCompletion>;
    try {
      completion = this.store.complete(lease, result, this.ttlOf(flight.ctx), receipt);
    } catch (error) {
      return this.completeFailed(flight, lease, result, receipt, error);
    }
    if (!isThenable(completion)) return this.completed(flight, lease, result, completion);
    completion.then(
      (answer) => this.completed(flight, lease, result, answer),
      (error: unknown) => this.completeFailed(flight, lease, result, receipt, error),
    );
  }

  // A store shared with other processes records a running receipt with each lead, so that a
  // crashed leader is seen; a store of this layer's own dies with its leaders, so it needs none.
  private claimOptions(tool: Tool): { tool: string; reconcilable: boolean } | undefined {
    return this.receiptsOnLead ? { tool: tool.name, reconcilable: tool.reconcile !== undefined } : undefined;
  }

  // A store's TTL is finite: "for ever" is as long as a timer can count.
  private ttlOf(ctx: DispatchContext): number {
    const { idempotencyTtlMs } = ctx.options;
    return idempotencyTtlMs === undefined ? this.storeTtlMs : Math.min(idempotencyTtlMs, 2 ** 47);
  }

  private completed(
    flight: Flight,
    lease: IdempotencyLease,
    result: unknown,
    completion: IdempotencyCompletion,
  ): void {
    // Only a renewal or this completion can have found the lease gone.
    if (flight.watching || completion.kind === 'lost') flight.reportLost(lease);
    const winner = completion.kind === 'lost' ? completion.winner : undefined;
    this.finish(flight, { ok: true, result: winner === undefined ? result : winner.result, hit: false });
  }

  private completeFailed(
    flight: Flight,
    lease: IdempotencyLease,
    result: unknown,
    receipt: Receipt | undefined,
    error: unknown,
  ): void {
    flight.ctx.emit('idempotency.store_error', { key: lease.key, operation: 'complete', error });
    // A completion that failed past the lease's end finds it lost: that is said too.
    flight.reportLost(lease);
    this.completeLater(flight, lease, result, receipt, 1, completeRetryMs);
    this.finish(flight, { ok: true, result, hit: false });
  }

  // The side effect happened and the caller has its result; the store learns of it as soon as
  // it can. Until the lease ends, other processes wait for the key rather than run it again.
  private completeLater(
    flight: Flight,
    lease: IdempotencyLease,
    result: unknown,
    receipt: Receipt | undefined,
    tries: number,
    delayMs: number,
  ): void {
    // The lease ended before the success could be stored: another process may run the key.
    if (lease.signal.aborted) {
      if (receipt !== undefined) receiptFailed(flight.ctx, receipt, lease.signal.reason);
      return flight.reportLost(lease);
    }
    // Past about a lease (three renewal periods) the lease has ended, even if its store never said so.
    const giveUpAfter =
      lease.renewEveryMs < Infinity
        ? Math.log2((3 * lease.renewEveryMs) / completeRetryMs) + 1
        : maxCompleteRetries;
    if (tries >= Math.max(giveUpAfter, 1)) {
      if (receipt !== undefined)
        receiptFailed(flight.ctx, receipt, new Error('the completion was never stored'));
      return;
    }
    const again = (error: unknown) => {
      flight.ctx.emit('idempotency.store_error', { key: lease.key, operation: 'complete', error });
      this.completeLater(
        flight,
        lease,
        result,
        receipt,
        tries + 1,
        Math.min(delayMs * 2, lease.renewEveryMs),
      );
    };
    const handle = this.timers.setTimeout(() => {
      let answer: MaybePromise<unknown>;
      try {
        // The receipt rides again: a store left with the lead's running receipt would take
        // this success for a crash.
        answer = this.store.complete(lease, result, this.ttlOf(flight.ctx), receipt);
      } catch (error) {
        return again(error);
      }
      if (isThenable(answer)) answer.then(() => flight.reportLost(lease), again);
    }, delayMs);
    (handle as { unref?: () => void } | undefined)?.unref?.();
  }

  // The receipt of the flight's execution as it settles now; `notCommitted` when a reconcile
  // found a failure's action did not take effect.
  private receiptOf(
    flight: Flight,
    status: Receipt['status'],
    window: OutcomeWindow | undefined,
    notCommitted = false,
  ): Receipt {
    const { ctx } = flight;
    const found = reconcileFindingOf(ctx);
    const byReconcile =
      notCommitted ||
      (status === 'succeeded' && ctx.outcome?.ok === true && ctx.outcome.reconciled !== undefined);
    const receipt: { -readonly [K in keyof Receipt]: Receipt[K] } = {
      key: flight.key,
      tool: flight.tool.name,
      status,
      attempts: ctx.attempt,
      startedAt: flight.startedAt,
      endedAt: this.now(),
      settledBy: byReconcile ? 'reconcile' : 'handler',
    };
    if (window !== undefined) receipt.window = window;
    // The evidence of the reconcile that decided this settlement (or left it in doubt).
    const decided = byReconcile || (status === 'in_doubt' && found?.status === 'unknown');
    if (decided && found?.evidence !== undefined) receipt.evidence = found.evidence;
    return receipt;
  }

  // A receipt rides with the store's own write (the store's next claim of the key must see it
  // in doubt); an attached receipt store gets its own record too. A record that fails never
  // fails the call it describes, and is never silent: `receipt.failed` says so.
  private own(
    flight: Flight,
    receipt: Receipt | undefined,
  ): { receipt: Receipt | undefined; recorded?: Promise<void> } {
    if (receipt === undefined || this.receipts === this.store.receipts) return { receipt };
    const report = (error: unknown) => receiptFailed(flight.ctx, receipt, error);
    try {
      const recorded = this.receipts.record(receipt);
      if (isThenable(recorded)) return { receipt, recorded: recorded.then(undefined, report) };
    } catch (error) {
      report(error);
    }
    return { receipt };
  }

  // Settles when the release and its receipt are written (or failed: neither fails the call).
  private release(flight: Flight, lease: IdempotencyLease, receipt?: Receipt): Promise<unknown> | undefined {
    const { receipt: riding, recorded } = this.own(flight, receipt);
    // The lease frees the key when it ends; a receipt that rode with the release is lost.
    const lost = (error: unknown) => {
      if (riding !== undefined) receiptFailed(flight.ctx, riding, error);
    };
    try {
      const released = this.store.release(lease, riding);
      if (isThenable(released)) {
        const settled = released.then(undefined, lost);
        return recorded === undefined ? settled : Promise.all([settled, recorded]);
      }
    } catch (error) {
      lost(error);
    }
    return recorded;
  }

  // An in-doubt key is answered once its receipt is written, so whoever reads the receipts
  // after the answer (an operator, another process) finds it.
  private settleAfter(written: Promise<unknown> | undefined, flight: Flight, outcome: Settlement): void {
    if (written === undefined) return this.finish(flight, outcome);
    void written.then(() => this.finish(flight, outcome));
  }

  // Once the last waiter has left, a new call with the key must start afresh, not join the
  // execution being torn down.
  private detach(flight: Flight, reason: unknown): void {
    flight.waiters -= 1;
    if (flight.waiters > 0 || flight.settlement !== undefined) return;
    flight.controller?.abort(reason);
    this.forget(flight);
  }

  private finish(flight: Flight, settlement: Settlement): void {
    this.forget(flight);
    flight.settle(settlement);
  }

  private forget(flight: Flight): void {
    if (this.inFlight.get(flight.key) === flight) this.inFlight.delete(flight.key);
  }
}

// The earlier execution's receipt as a refusal leaves it: as it was, a crashed leader's running
// one marked in doubt (when it was sent is kept), with what a reconcile that could not tell saw.
function keptReceipt(earlier: Receipt, window: OutcomeWindow, ctx: DispatchContext): Receipt {
  const found = reconcileFindingOf(ctx);
  const seen = found?.status === 'unknown' && found.evidence !== undefined;
  if (earlier.status === 'in_doubt' && !seen) return earlier;
  const receipt: { -readonly [K in keyof Receipt]: Receipt[K] } = { ...earlier };
  if (earlier.status !== 'in_doubt') Object.assign(receipt, { status: 'in_doubt', window });
  if (seen) receipt.evidence = found.evidence;
  return receipt;
}

// A receipt that could not be written: the call it describes stands, and the failure is said.
function receiptFailed(ctx: DispatchContext, receipt: Receipt, error: unknown): void {
  const kind = isDispatchError(error) ? error.kind : undefined;
  ctx.emit('receipt.failed', {
    key: receipt.key,
    receiptStatus: receipt.status,
    ...(kind === undefined ? {} : { kind }),
    message: describeThrown(error),
    error,
  });
}

// What a claim answers by itself: a hit, a conflict, an unshareable result; nothing for a lead or a follow.
function answerOf(key: string, claim: IdempotencyClaim): Settlement | undefined {
  switch (claim.kind) {
    case 'hit':
      return { ok: true, result: claim.result, hit: true };
    case 'conflict':
      return failed(conflict(key));
    case 'unshareable':
      return failed(
        new DispatchError(
          'idempotency_result_unavailable',
          `Idempotency key "${shorten(key)}" already succeeded, but its result could not be shared (${claim.reason}); it is not run again`,
          { retryAfterMs: claim.expiresInMs },
        ),
      );
    default:
      return undefined;
  }
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

function conflict(key: string): DispatchError {
  return new DispatchError(
    'idempotency_conflict',
    `Idempotency key "${shorten(key)}" was already used for a different tool or different args`,
  );
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

function shorten(key: string): string {
  return key.length > 64 ? `${key.slice(0, 61)}...` : key;
}
