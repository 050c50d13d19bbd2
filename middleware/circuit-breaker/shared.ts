// The circuit breaker over a CircuitStore: the state machine here, the records in the store, and
// this process's own breaker for every call the store cannot answer for.

import { randomUUID } from 'node:crypto';
import { DispatchError, isDispatchError, toDispatchError } from '../../src/errors.js';
import type { CircuitRecord, CircuitStore, CircuitView, MaybePromise } from '../../src/stores.js';
import { trusted } from '../../src/internal/trusted.js';
import type { DispatchContext, Middleware, Next } from '../../src/types.js';
import type { CircuitSnapshot, CircuitState } from './snapshot.js';

/** The in-memory breaker a shared one falls back on. */
export interface LocalBreaker<Trial> {
  admit(ctx: DispatchContext, key: string): Trial | undefined;
  recordFailure(ctx: DispatchContext, key: string, trial: Trial | undefined): void;
  recordSuccess(ctx: DispatchContext, key: string, trial: Trial | undefined): void;
  state(key: string): CircuitState;
  snapshot(): Record<string, CircuitSnapshot>;
}

/** What a shared breaker needs from `circuitBreaker`'s options. */
export interface SharedBreakerOptions<Trial> {
  failureThreshold: number;
  windowMs: number;
  cooldownMs: number;
  probeLeaseMs: number;
  counts: (error: DispatchError) => boolean;
  keyOf: (ctx: DispatchContext) => string;
  local: LocalBreaker<Trial>;
}

/** How one call was let through. */
type Admission<Trial> =
  | { readonly shared: true; readonly probe: { version: number; decided: boolean } | undefined }
  | { readonly shared: false; readonly trial: Trial | undefined };

function isPromise<T>(value: MaybePromise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

async function answer<T>(value: MaybePromise<T>): Promise<T> {
  return value;
}

const closedRecord: CircuitRecord = { state: 'closed', failures: 0, openedAt: 0, probe: '', probeUntil: 0 };

/**
 * Makes the layer, `state` and `snapshot` of a breaker whose circuits live in `store`.
 * @internal
 */
export function sharedBreaker<Trial>(
  store: CircuitStore,
  options: SharedBreakerOptions<Trial>,
): { layer: Middleware; state(key: string): CircuitState; snapshot(): Record<string, CircuitSnapshot> } {
  const { failureThreshold, windowMs, cooldownMs, probeLeaseMs, counts, keyOf, local } = options;
  // Failure ids must be unique across the fleet: one process prefix, then a counter.
  const origin = randomUUID();
  let failureIds = 0;
  // The last view of each circuit this process saw, for `state` and `snapshot` while the store
  // answers only with promises.
  const seen = new Map<string, CircuitView>();
  const maxSeen = 10_000;
  const remember = (key: string, view: CircuitView) => {
    if (!seen.has(key) && seen.size >= maxSeen) seen.delete(seen.keys().next().value as string);
    seen.set(key, view);
  };

  const rejected = (ctx: DispatchContext, key: string, view: CircuitView): DispatchError | undefined => {
    const record = view.record;
    if (record === undefined || record.state === 'closed') return undefined;
    const { now } = view;
    if (record.state === 'open' && now < record.openedAt + cooldownMs) {
      const retryAfterMs = Math.min(record.openedAt + cooldownMs - now, cooldownMs);
      return new DispatchError(
        'circuit_open',
        `The circuit for "${key}" is open after repeated failures; try again in ${retryAfterMs} ms`,
        { attempts: ctx.attempt, retryAfterMs },
      );
    }
    if (record.state === 'half_open' && record.probe !== '' && record.probeUntil > now) return busy(ctx, key);
    return undefined;
  };

  const busy = (ctx: DispatchContext, key: string) =>
    new DispatchError(
      'circuit_open',
      `The circuit for "${key}" is half-open and its probe call is busy; try again shortly`,
      {
        attempts: ctx.attempt,
      },
    );

  // Lets a call through, makes it the probe, or throws `circuit_open`; a store that cannot
  // answer hands the call to the local breaker.
  const admit = async (ctx: DispatchContext, key: string): Promise<Admission<Trial>> => {
    let view: CircuitView;
    try {
      const read = store.read(key);
      view = isPromise(read) ? await read : read;
    } catch {
      return { shared: false, trial: local.admit(ctx, key) };
    }
    remember(key, view);
    // Twice at most: a probe write that lost may have lost to a close, which lets the call in.
    for (let round = 0; round < 2; round++) {
      const record = view.record;
      if (record === undefined || record.state === 'closed') {
        // Failures the store could not count opened this process's own breaker: it decides
        // until it closes again.
        const trial = local.admit(ctx, key);
        return trial === undefined ? { shared: true, probe: undefined } : { shared: false, trial };
      }
      const refusal = rejected(ctx, key, view);
      if (refusal !== undefined) throw refusal;
      let taken: { readonly written: boolean; readonly view: CircuitView };
      try {
        taken = await answer(
          store.compareAndSet(key, view.version, {
            state: 'half_open',
            failures: record.failures,
            openedAt: record.openedAt,
            probe: `${origin}:${++failureIds}`,
            probeUntil: view.now + probeLeaseMs,
          }),
        );
      } catch {
        return { shared: false, trial: local.admit(ctx, key) };
      }
      remember(key, taken.view);
      if (taken.written) {
        ctx.emit('circuit.half_open', { key });
        return { shared: true, probe: { version: taken.view.version, decided: false } };
      }
      view = taken.view;
    }
    throw busy(ctx, key);
  };

  const open = async (
    ctx: DispatchContext,
    key: string,
    version: number,
    failures: number,
    openedAt: number,
  ) => {
    const opened = await answer(
      store.compareAndSet(key, version, { state: 'open', failures, openedAt, probe: '', probeUntil: 0 }),
    );
    remember(key, opened.view);
    if (opened.written) ctx.emit('circuit.open', { key, failures, cooldownMs });
  };

  const recordFailure = async (
    ctx: DispatchContext,
    key: string,
    admission: Admission<Trial> & { shared: true },
  ) => {
    try {
      const { probe } = admission;
      if (probe !== undefined) {
        if (probe.decided) return;
        probe.decided = true;
        const now = (await answer(store.read(key))).now;
        await open(ctx, key, probe.version, 1, now);
        return;
      }
      const view = await answer(store.addFailure(key, `${origin}:${++failureIds}`, windowMs));
      remember(key, view);
      const state = view.record?.state ?? 'closed';
      if (state === 'closed' && view.failures >= failureThreshold)
        await open(ctx, key, view.version, view.failures, view.now);
    } catch {
      // The store could not count it: this process's own breaker does.
      local.recordFailure(ctx, key, undefined);
    }
  };

  const recordSuccess = async (
    ctx: DispatchContext,
    key: string,
    admission: Admission<Trial> & { shared: true },
  ) => {
    try {
      const { probe } = admission;
      if (probe !== undefined) {
        if (probe.decided) return;
        probe.decided = true;
        const closed = await answer(store.compareAndSet(key, probe.version, undefined));
        remember(key, closed.view);
        if (closed.written) ctx.emit('circuit.close', { key });
        return;
      }
      // Any success clears the streak, fleet-wide; without one to clear, no write at all.
      const read = store.read(key);
      const view = isPromise(read) ? await read : read;
      remember(key, view);
      const state = view.record?.state ?? 'closed';
      if (state === 'closed' && view.failures > 0) {
        remember(
          key,
          (await answer(store.compareAndSet(key, view.version, view.record ?? closedRecord))).view,
        );
      }
    } catch {
      local.recordSuccess(ctx, key, undefined);
    }
  };

  // A probe that ended otherwise (cancelled, say) gives its lease back for the next caller.
  const releaseProbe = async (key: string, probe: { version: number; decided: boolean }) => {
    if (probe.decided) return;
    probe.decided = true;
    try {
      const view = await answer(store.read(key));
      const record = view.record;
      if (view.version !== probe.version || record === undefined) return;
      remember(
        key,
        (await answer(store.compareAndSet(key, probe.version, { ...record, probe: '', probeUntil: 0 }))).view,
      );
    } catch {
      // Its lease ends on its own.
    }
  };

  const layer = trusted(async function circuitBreaker(ctx: DispatchContext, next: Next): Promise<void> {
    const key = String(keyOf(ctx));
    const admission = await admit(ctx, key);
    const attemptsBefore = ctx.attempt;
    const judged: DispatchError[] = [];
    const pending: Array<Promise<void>> = [];
    const judge = (error: DispatchError) => {
      if (!counts(error)) return;
      if (admission.shared) pending.push(recordFailure(ctx, key, admission));
      else local.recordFailure(ctx, key, admission.trial);
    };
    const unsubscribe = ctx.listen((event) => {
      if (event.type !== 'dispatch.attempt_failed') return;
      const { error } = event;
      if (!isDispatchError(error)) return;
      judged.push(error);
      judge(error);
    });
    let thrown: unknown;
    let failed = false;
    try {
      await next();
    } catch (error) {
      failed = true;
      thrown = error;
    } finally {
      unsubscribe();
    }
    if (!admission.shared && admission.trial !== undefined)
      (admission.trial as { probes: number }).probes -= 1;
    if (ctx.attempt > attemptsBefore) {
      const failure = failed
        ? toDispatchError(thrown, ctx.attempt)
        : ctx.outcome?.ok === false
          ? ctx.outcome
          : undefined;
      if (failure === undefined) {
        if (admission.shared) {
          local.recordSuccess(ctx, key, undefined);
          pending.push(recordSuccess(ctx, key, admission));
        } else local.recordSuccess(ctx, key, admission.trial);
      } else if (!judged.includes(failure)) judge(failure);
    }
    if (admission.shared && admission.probe !== undefined) {
      // Judged after the writes above, so a decided probe is not released.
      await Promise.all(pending);
      pending.length = 0;
      pending.push(releaseProbe(key, admission.probe));
    }
    // The call waits for its own bookkeeping (each store call has a deadline), so whoever sees
    // its outcome sees the circuit it left.
    if (pending.length > 0) await Promise.all(pending);
    if (failed) throw thrown;
  });

  const describe = (view: CircuitView): CircuitSnapshot | undefined => {
    const { record, now } = view;
    if (record === undefined || record.state === 'closed') {
      return view.failures === 0 ? undefined : { state: 'closed', failures: view.failures };
    }
    const { openedAt, failures } = record;
    if (record.state === 'open' && now < openedAt + cooldownMs) {
      return {
        state: 'open',
        failures,
        openedAt,
        retryAfterMs: Math.min(openedAt + cooldownMs - now, cooldownMs),
      };
    }
    const probes = record.state === 'half_open' && record.probe !== '' && record.probeUntil > now ? 1 : 0;
    return { state: 'half_open', failures, openedAt, probes };
  };

  // What is known at once: the store's answer when it has one without a round trip, else the
  // last view this process saw.
  const viewNow = (key: string): CircuitView | undefined => {
    try {
      const read = store.read(key);
      if (!isPromise(read)) return read;
      read.then((view) => remember(key, view), ignore);
    } catch {
      // Fall through to what was seen.
    }
    return seen.get(key);
  };

  return {
    layer,
    state: (key) => {
      const view = viewNow(key);
      if (view === undefined) return local.state(key);
      return describe(view)?.state ?? local.state(key);
    },
    snapshot: () => {
      const entries = new Map<string, CircuitSnapshot>(Object.entries(local.snapshot()));
      let listed: Iterable<readonly [string, CircuitView]> = seen;
      try {
        const all = store.entries();
        if (!isPromise(all)) listed = all;
        else all.then(undefined, ignore);
      } catch {
        // What was seen will do.
      }
      for (const [key, view] of listed) {
        const snapshot = describe(view);
        if (snapshot !== undefined) entries.set(key, snapshot);
        else entries.delete(key);
      }
      return Object.fromEntries(entries);
    },
  };
}

function ignore(): void {}
