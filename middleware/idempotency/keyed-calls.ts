/**
 * Idempotency's shared walks: this process's callers of a key share one walk of an
 * `IdempotencyStore`'s claim loop (`key-walk.ts`), and its execution ends when the last of
 * them leaves.
 * @module
 */

import type { Clock } from '../../src/clock.js';
import { DispatchError } from '../../src/errors.js';
import type { IdempotencyStore, ReceiptStore } from './store.js';
import type { DispatchContext, Next } from '../../src/types.js';
import { cancelled, fingerprint, onAbort, raceAbort, type Fingerprint } from '../kit.js';
import { KeyStores } from './key-stores.js';
import { conflict, KeyWalk, type Settlement } from './key-walk.js';

/** A walk of a key and the callers in this process waiting on it. */
class Flight {
  // Callers still waiting, the first included; the walk is aborted when it reaches 0.
  waiters = 1;
  // Set as the walk starts, once the first caller listens for its own abort.
  settled!: Promise<Settlement>;

  constructor(readonly walk: KeyWalk) {}
}

/** The layer's state: the keys this process walks now, over the stores that share them. */
export class KeyedCalls {
  /** The walks in progress, by key. */
  readonly inFlight = new Map<string, Flight>();
  private readonly stores: KeyStores;

  constructor(
    store: IdempotencyStore,
    receipts: ReceiptStore,
    storeTtlMs: number,
    timers: Pick<Clock, 'setTimeout' | 'clearTimeout'>,
    now: () => number,
    receiptsOnLead: boolean,
  ) {
    this.stores = new KeyStores(store, receipts, storeTtlMs, timers, now, receiptsOnLead);
  }

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
    const flight = new Flight(new KeyWalk(this.stores, ctx, next, key, print, callerSignal));
    this.inFlight.set(key, flight);
    // Subscribed before the layers inside start, so an abort while they do is not missed.
    const unsubscribe = onAbort(callerSignal, () => this.detach(flight, callerSignal.reason));
    flight.settled = flight.walk.walk(() => this.forget(flight.walk));
    let settlement: Settlement;
    try {
      settlement = await flight.settled;
    } finally {
      unsubscribe();
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
    if (flight.walk.fingerprint !== print) throw conflict(key);
    flight.waiters += 1;
    ctx.emit('idempotency.hit', { key, source: 'in_flight' });
    const callerSignal = ctx.signal;
    return raceAbort(flight.settled, callerSignal, () => {
      this.detach(flight, callerSignal.reason);
      return cancelled(ctx, callerSignal);
    });
  }

  // Once the last waiter has left, a new call with the key must start afresh, not join the
  // walk being torn down.
  private detach(flight: Flight, reason: unknown): void {
    flight.waiters -= 1;
    if (flight.waiters > 0 || this.inFlight.get(flight.walk.key) !== flight) return;
    flight.walk.abort(reason);
    this.forget(flight.walk);
  }

  private forget(walk: KeyWalk): void {
    if (this.inFlight.get(walk.key)?.walk === walk) this.inFlight.delete(walk.key);
  }
}
