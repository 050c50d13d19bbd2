/**
 * The concurrency layer's one decision loop: a permit from each store in turn, held until the
 * inner layers settle.
 * @module
 */

import { DispatchError, isDispatchError } from '../../src/errors.js';
import type { SlotPermit, SlotStore } from './store.js';
import type { Clock } from '../../src/clock.js';
import type { DispatchContext, Next } from '../../src/types.js';
import { cancelled, keepLeaseAlive, onAbort, storeUnavailable } from '../kit.js';
import { noop } from '../internal-kit.js';
import { SweptMap } from '../swept-map.js';
import { MemorySlotStore } from './memory-store.js';

/** What the loop needs of the layer's options, checked already. */
export interface GateOptions {
  readonly max: number;
  readonly key: ((ctx: DispatchContext) => string | undefined) | undefined;
  readonly maxQueue: number;
  readonly fleet: SlotStore | undefined;
  readonly onStoreError: 'fail' | 'local';
  readonly clock: Pick<Clock, 'now'>;
  readonly timers: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
}

// One key's own cap. An idle partition (no call holds or waits for one of its slots) is kept for
// the key's next call, and swept once the map has doubled, so a key seen once (one of 100 000
// tenants) is not kept for long.
class Partition {
  users = 0;
  // Calls of this partition waiting in the fleet's queue, for `concurrency.queued` and `maxQueue`.
  fleetWaiting = 0;
  constructor(
    readonly key: string | undefined,
    readonly store: MemorySlotStore,
  ) {}
}

/** One call inside the layer: the partition it counts in and the permits it holds. */
class Entry {
  readonly permits: SlotPermit[] = [];
  stops: Array<() => void> | undefined = undefined;
  constructor(
    readonly gate: SlotGate,
    readonly partition: Partition,
  ) {}

  /** Gives back every permit, last taken first, and leaves the partition. */
  release(): void {
    const stops = this.stops;
    if (stops !== undefined) for (const stop of stops) stop();
    const { permits, gate } = this;
    for (let level = permits.length - 1; level >= 0; level--) {
      gate.giveBack(this, level, permits[level] as SlotPermit);
    }
    gate.leave(this);
  }
}

/** The layer's loop over the stores: a permit from each in turn, held until the inner layers settle. */
export class SlotGate {
  running = 0;
  queued = 0;
  readonly #options: GateOptions;
  readonly #shared: Partition;
  readonly #partitions = new SweptMap<Partition>();

  constructor(options: GateOptions) {
    this.#options = options;
    this.#shared = new Partition(undefined, new MemorySlotStore(options.max, 'local'));
  }

  /** Keyed partitions kept now: the busy ones, and idle ones not swept yet. */
  get partitionCount(): number {
    return this.#partitions.size;
  }

  /** Runs `next` holding a permit from every store, waiting for them in turn. */
  run(ctx: DispatchContext, next: Next): Promise<void> {
    let entry: Entry;
    try {
      entry = this.#enter(ctx);
    } catch (error) {
      // A key that fails still fails the call as a rejection, as from an async function.
      return Promise.reject(error);
    }
    // The local store answers at once: a call that finds no free slot queues in the same turn,
    // and one that finds one, with no fleet to ask, gives it back through one reaction.
    const permit = entry.partition.store.tryAcquire();
    if (permit === undefined || this.#options.fleet !== undefined)
      return this.#runHeld(ctx, next, entry, permit);
    this.#hold(ctx, entry, permit);
    return next().then(
      () => entry.release(),
      (error: unknown) => {
        entry.release();
        throw error;
      },
    );
  }

  async #runHeld(
    ctx: DispatchContext,
    next: Next,
    entry: Entry,
    permit: SlotPermit | undefined,
  ): Promise<void> {
    try {
      if (permit === undefined) await this.#wait(ctx, entry, 0, entry.partition.store);
      else this.#hold(ctx, entry, permit);
      const { fleet } = this.#options;
      if (fleet !== undefined) await this.#acquireFleet(ctx, entry, fleet);
      await next();
    } finally {
      entry.release();
    }
  }

  /** Gives a permit back to the store of `level`, without waiting for it. */
  giveBack(entry: Entry, level: number, permit: SlotPermit): void {
    if (level === 0) {
      this.running -= 1;
      entry.partition.store.release(permit);
      return;
    }
    const fleet = this.#options.fleet as SlotStore;
    try {
      Promise.resolve(fleet.release(permit)).catch(noop);
    } catch {
      // The permit's lease frees it.
    }
  }

  /** The call is done with its partition. */
  leave(entry: Entry): void {
    const partition = entry.partition;
    partition.users -= 1;
  }

  #enter(ctx: DispatchContext): Entry {
    const keyOf = this.#options.key;
    const key = keyOf === undefined ? undefined : keyOf(ctx);
    if (key !== undefined && typeof key !== 'string') {
      throw new DispatchError('internal', `concurrencyLimit key must answer a string, got ${typeof key}`);
    }
    let partition = this.#shared;
    if (key !== undefined) {
      const known = this.#partitions.get(key);
      if (known === undefined) {
        partition = new Partition(key, new MemorySlotStore(this.#options.max, key));
        this.#partitions.add(key, partition, isIdle);
      } else partition = known;
    }
    partition.users += 1;
    return new Entry(this, partition);
  }

  // A permit from the fleet's pool, or a place in its queue.
  async #acquireFleet(ctx: DispatchContext, entry: Entry, fleet: SlotStore): Promise<void> {
    let permit: SlotPermit | undefined;
    try {
      permit = await fleet.tryAcquire();
    } catch (error) {
      return this.#storeFailed(fleet, error);
    }
    if (permit === undefined) return this.#wait(ctx, entry, 1, fleet);
    const { signal } = ctx;
    if (signal.aborted) {
      this.giveBack(entry, 1, permit);
      throw cancelled(ctx, signal);
    }
    this.#hold(ctx, entry, permit);
  }

  #wait(ctx: DispatchContext, entry: Entry, level: number, store: SlotStore): Promise<void> {
    const { signal } = ctx;
    if (signal.aborted) return Promise.reject(cancelled(ctx, signal));
    const partition = entry.partition;
    const waitingHere = level === 0 ? partition.store.queued : partition.fleetWaiting;
    if (waitingHere >= this.#options.maxQueue) return Promise.reject(overloaded(ctx, store, partition));
    const { clock } = this.#options;
    const queuedAt = clock.now();
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      let unsubscribe = noop;
      const finish = () => {
        settled = true;
        this.#countWaiting(partition, level, -1);
        unsubscribe();
      };
      this.#countWaiting(partition, level, 1);
      const leave = store.enqueue({
        grant: (permit) => {
          if (settled) return this.giveBack(entry, level, permit);
          finish();
          this.#hold(ctx, entry, permit);
          ctx.emit('concurrency.acquired', { waitedMs: clock.now() - queuedAt });
          resolve();
        },
        fail: (error) => {
          if (settled) return;
          finish();
          reject(error);
        },
      });
      if (settled) return;
      unsubscribe = onAbort(signal, () => {
        if (settled) return;
        finish();
        leave();
        reject(cancelled(ctx, signal));
      });
      const queued = level === 0 ? partition.store.queued : partition.fleetWaiting;
      ctx.emit('concurrency.queued', queuedDetails(queued, store, level, partition.key));
    });
  }

  #countWaiting(partition: Partition, level: number, by: number): void {
    if (level === 0) this.queued += by;
    else partition.fleetWaiting += by;
  }

  #hold(ctx: DispatchContext, entry: Entry, permit: SlotPermit): void {
    const level = entry.permits.push(permit) - 1;
    if (level === 0) {
      this.running += 1;
      return;
    }
    const fleet = this.#options.fleet as SlotStore;
    // A lost permit is reported, not acted on: the call keeps running (its side effects may have
    // started), and the pool is over its cap by one until the call ends.
    const stop = keepLeaseAlive(permit, () => fleet.renew(permit), this.#options.timers);
    const unlisten = onAbort(permit.signal, () => ctx.emit('concurrency.lease_lost', { pool: fleet.pool }));
    (entry.stops ??= []).push(stop, unlisten);
  }

  #storeFailed(store: SlotStore, error: unknown): undefined {
    if (isDispatchError(error) && error.kind === 'cancelled') throw error;
    if (this.#options.onStoreError === 'local') return undefined;
    throw isDispatchError(error)
      ? error
      : storeUnavailable(`The slot pool "${store.pool}" could not be reached`, { cause: error });
  }
}

const isIdle = (partition: Partition): boolean => partition.users === 0;

function queuedDetails(queued: number, store: SlotStore, level: number, key: string | undefined) {
  const details: { queued: number; max: number; pool?: string; key?: string } = { queued, max: store.max };
  if (level > 0) details.pool = store.pool;
  if (key !== undefined) details.key = key;
  return details;
}

function overloaded(ctx: DispatchContext, store: SlotStore, partition: Partition): DispatchError {
  const where = partition.key === undefined ? '' : ` for "${partition.key}"`;
  return new DispatchError(
    'overloaded',
    `Too many calls are waiting${where} (${store.max} run at once); "${ctx.displayName}" was not run`,
    { attempts: ctx.attempt },
  );
}
