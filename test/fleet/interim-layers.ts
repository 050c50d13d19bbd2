// Stand-in layers over the stores seam, until idempotency(), concurrencyLimit() and circuitBreaker()
// take a `store` (issue 10). They are the reference for that wiring: the call order each store
// expects, what is awaited, when leases are renewed and released. Delete this file once the
// built-in layers take stores; test/fleet/dispatcher.ts then switches in one line.

import { randomUUID } from 'node:crypto';
import { DispatchError, isDispatchError, type DispatchContext, type Middleware } from '../../index.js';
import { onAbort } from '../../middleware/kit.js';
import {
  keepLeaseAlive,
  type CircuitStore,
  type CircuitView,
  type IdempotencyStore,
  type SlotPermit,
  type SlotStore,
  type StoreBudget,
} from '../../src/stores.js';

type Settlement = { ok: true; result: unknown } | { ok: false; error: unknown };

/** A stable fingerprint of a call (key-sorted JSON of the tool name and args). */
export function callFingerprint(tool: string, args: unknown): string {
  const sorted = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(sorted);
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.keys(value).sort().map((key) => [key, sorted((value as Record<string, unknown>)[key])]));
    }
    return value;
  };
  return JSON.stringify([tool, sorted(args)]);
}

/** What the idempotency stand-in reports besides outcomes. */
export interface IdempotencyHooks {
  /** The lease of `key` was lost while this process led it (the handler's signal aborted). */
  leaseLost?(key: string, token: string): void;
  /** A store call failed (the call goes on or fails closed, as the layer decides). */
  storeError?(key: string, operation: string, error: unknown): void;
}

/**
 * Idempotency over an IdempotencyStore: same-process callers coalesce in memory; the local
 * leader claims, leads (renewing its lease while the inner layers run), follows (waiting on
 * `changed`, then claiming again) or serves a hit.
 */
export function storeIdempotency(store: IdempotencyStore, options: { ttlMs: number; hooks?: IdempotencyHooks }): Middleware {
  const local = new Map<string, { print: string; done: Promise<Settlement> }>();

  const run = async (ctx: DispatchContext, next: () => Promise<void>, key: string, print: string): Promise<Settlement> => {
    for (;;) {
      const claim = await store.claim(key, print);
      switch (claim.kind) {
        case 'hit':
          return { ok: true, result: claim.result };
        case 'conflict':
          throw new DispatchError('idempotency_conflict', `Idempotency key "${key}" was already used for other args`);
        case 'unshareable':
          throw new DispatchError('idempotency_result_unavailable', `The result of "${key}" could not be shared: ${claim.reason}`);
        case 'follow':
          await store.changed(key, claim.fence, { signal: ctx.signal, timeoutMs: claim.leaseEndsInMs });
          if (ctx.signal.aborted) throw new DispatchError('cancelled', 'The caller aborted');
          continue;
        case 'lead': {
          const { lease } = claim;
          const stop = keepLeaseAlive(lease, () => store.renew(lease));
          const callerSignal = ctx.signal;
          // The handler's signal aborts when the caller aborts or the lease is lost
          // (AbortSignal.any costs several times more per call).
          const attempt = new AbortController();
          const lostLease = () => {
            options.hooks?.leaseLost?.(key, lease.token);
            attempt.abort(lease.signal.reason);
          };
          lease.signal.addEventListener('abort', lostLease, { once: true });
          // onAbort: one listener per signal however many calls share it, none for a call without one.
          const unsubscribe = onAbort(callerSignal, () => attempt.abort(callerSignal.reason));
          ctx.signal = attempt.signal;
          let failure: unknown;
          try {
            await next();
          } catch (error) {
            failure = error;
          } finally {
            stop();
            ctx.signal = callerSignal;
            unsubscribe();
          }
          const outcome = ctx.outcome;
          if (failure !== undefined || outcome?.ok !== true) {
            // Fire and forget: a release that fails leaves the key to its lease.
            void Promise.resolve(store.release(lease)).catch(() => {});
            return { ok: false, error: failure ?? outcome };
          }
          // The side effect happened: the caller gets its result whatever the store says.
          for (let tries = 0; tries < 20 && !lease.signal.aborted; tries++) {
            try {
              const completion = await store.complete(lease, outcome.result, options.ttlMs);
              if (completion.kind === 'lost' && completion.winner !== undefined) return { ok: true, result: completion.winner.result };
              break;
            } catch (error) {
              options.hooks?.storeError?.(key, 'complete', error);
              await new Promise((resolve) => setTimeout(resolve, 50));
            }
          }
          if (lease.signal.aborted) return { ok: true, result: await adopt(ctx, key, print, outcome.result) };
          return { ok: true, result: outcome.result };
        }
      }
    }
  };

  // A leader that lost its lease serves the winner's result once there is one, so every caller
  // of the key sees one execution's result; its own when the key came free again or the store
  // stays unreachable.
  const adopt = async (ctx: DispatchContext, key: string, print: string, own: unknown): Promise<unknown> => {
    const giveUpAt = performance.now() + 10_000;
    while (performance.now() < giveUpAt) {
      try {
        const claim = await store.claim(key, print);
        if (claim.kind === 'hit') return claim.result;
        if (claim.kind === 'lead') {
          await store.complete(claim.lease, own, options.ttlMs);
          return own;
        }
        if (claim.kind !== 'follow') return own;
        await store.changed(key, claim.fence, { signal: ctx.signal, timeoutMs: claim.leaseEndsInMs });
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    return own;
  };

  return async function storeIdempotency(ctx, next) {
    const key = ctx.options.idempotencyKey;
    if (key === undefined) return next();
    const print = callFingerprint(ctx.tool?.name ?? ctx.toolName, ctx.args);
    let flight = local.get(key);
    if (flight !== undefined && flight.print !== print) {
      throw new DispatchError('idempotency_conflict', `Idempotency key "${key}" was already used for other args`);
    }
    const leading = flight === undefined;
    if (flight === undefined) {
      flight = { print, done: run(ctx, next, key, print) };
      local.set(key, flight);
    }
    const own = flight;
    let settlement: Settlement;
    try {
      settlement = await own.done;
    } finally {
      if (leading && local.get(key) === own) local.delete(key);
    }
    if (!settlement.ok) throw settlement.error;
    if (!leading || ctx.outcome?.ok !== true) ctx.outcome = { ok: true, result: settlement.result, attempts: leading ? ctx.attempt : 0 };
    else ctx.outcome = { ok: true, result: settlement.result, attempts: ctx.outcome.attempts };
  };
}

/** A fleet-wide cap over a SlotStore: take a permit (or queue), renew it while inner layers run, release it after. */
export function storeSlots(store: SlotStore): Middleware {
  return async function storeSlots(ctx, next) {
    let permit: SlotPermit | undefined = await store.tryAcquire();
    if (permit === undefined) {
      const { signal } = ctx;
      permit = await new Promise<SlotPermit>((resolve, reject) => {
        const onAbort = () => {
          leave();
          reject(new DispatchError('cancelled', 'The caller aborted while waiting for a slot'));
        };
        const leave = store.enqueue({
          grant: (granted) => {
            signal.removeEventListener('abort', onAbort);
            resolve(granted);
          },
          fail: (error) => {
            signal.removeEventListener('abort', onAbort);
            reject(error);
          },
        });
        signal.addEventListener('abort', onAbort, { once: true });
      });
    }
    const held = permit;
    const stop = keepLeaseAlive(held, () => store.renew(held));
    try {
      await next();
    } finally {
      stop();
      void Promise.resolve(store.release(held)).catch(() => {});
    }
  };
}

/** One budget unit per attempt from a shared budget (sits inside retry; the widened core does this in callHandler). */
export function storeBudget(budget: StoreBudget): Middleware {
  return async function storeBudget(ctx, next) {
    if (!(await budget.tryConsume(1))) {
      throw new DispatchError('budget_exceeded', 'The shared tool-call budget is spent', { attempts: ctx.attempt });
    }
    return next();
  };
}

const counted: ReadonlySet<string> = new Set(['timeout', 'transient', 'internal']);

/** A breaker over a CircuitStore: the decisions here, the data in the store (one leased probe fleet-wide). */
export function storeBreaker(
  store: CircuitStore,
  options: { failureThreshold: number; windowMs: number; cooldownMs: number; probeLeaseMs: number; onOpen?(key: string): void },
): Middleware {
  const { failureThreshold, windowMs, cooldownMs, probeLeaseMs } = options;
  const open = (retryAfterMs?: number) =>
    new DispatchError('circuit_open', 'The circuit is open after repeated failures', retryAfterMs === undefined ? {} : { retryAfterMs });

  return async function storeBreaker(ctx, next) {
    const key = ctx.tool?.name ?? ctx.toolName;
    let view: CircuitView | undefined;
    let probe = false;
    try {
      view = await store.read(key);
      const record = view.record;
      if (record?.state === 'open' && record.openedAt + cooldownMs > view.now) throw open(record.openedAt + cooldownMs - view.now);
      if (record?.state === 'half_open' && record.probeUntil > view.now) throw open();
      if (record !== undefined && record.state !== 'closed') {
        const taken = await store.compareAndSet(key, view.version, {
          ...record,
          state: 'half_open',
          probe: randomUUID(),
          probeUntil: view.now + probeLeaseMs,
        });
        if (!taken.written) throw open();
        view = taken.view;
        probe = true;
      }
    } catch (error) {
      if (isDispatchError(error) && error.kind === 'circuit_open') throw error;
      view = undefined; // the store is unreachable: no shared breaker for this call
    }
    let failure: unknown;
    try {
      await next();
    } catch (error) {
      failure = error;
    }
    const outcome = failure ?? (ctx.outcome?.ok === false ? ctx.outcome : undefined);
    if (view !== undefined) {
      try {
        if (outcome !== undefined && isDispatchError(outcome) && counted.has(outcome.kind)) {
          if (probe) {
            await store.compareAndSet(key, view.version, { state: 'open', failures: 1, openedAt: view.now, probe: '', probeUntil: 0 });
          } else {
            const after = await store.addFailure(key, randomUUID(), windowMs);
            if ((after.record?.state ?? 'closed') === 'closed' && after.failures >= failureThreshold) {
              const opened = await store.compareAndSet(key, after.version, {
                state: 'open',
                failures: after.failures,
                openedAt: after.now,
                probe: '',
                probeUntil: 0,
              });
              if (opened.written) options.onOpen?.(key);
            }
          }
        } else if (outcome === undefined && (probe || view.failures > 0)) {
          await store.compareAndSet(key, view.version, undefined);
        }
      } catch {
        // A breaker is an optimisation: a store error never fails the call.
      }
    }
    if (failure !== undefined) throw failure;
  };
}
