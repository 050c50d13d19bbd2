import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  circuitBreaker,
  createDispatcher,
  errorMapping,
  ToolRegistry,
  toolLookup,
  TransientError,
  type DispatchEvent,
} from '../../index.js';
import { memoryCircuitStore } from '../../middleware/index.js';
import type { CircuitStore } from '../../index.js';
import { gate } from '../helpers/gate.js';
import { asyncCircuitStore } from './stores-async.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** One "process": its own breaker on the shared store, and a backend the test can break. */
function worker(store: CircuitStore) {
  const events: DispatchEvent[] = [];
  const backend = { down: true, hold: undefined as Promise<unknown> | undefined, runs: 0 };
  const registry = new ToolRegistry().register({
    name: 'search.web',
    inputSchema: z.object({}),
    handler: async () => {
      backend.runs += 1;
      if (backend.hold !== undefined) await backend.hold;
      if (backend.down) throw new TransientError('backend down');
      return 'ok';
    },
  });
  const breaker = circuitBreaker({
    store,
    failureThreshold: 3,
    windowMs: 10_000,
    cooldownMs: 1_000,
    probeLeaseMs: 5_000,
  });
  const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), breaker], {
    onEvent: (event) => events.push(event),
  });
  const call = () => dispatcher.dispatch('search.web', {});
  return { breaker, call, backend, events, types: () => events.map((event) => event.type) };
}

describe.each([
  ['a synchronous store (memory)', (store: CircuitStore) => store],
  ['a store that answers with promises', (store: CircuitStore) => asyncCircuitStore(store)],
])('circuitBreaker on %s', (_name, wrapStore) => {
  it('opens the circuit for every process once their failures together reach the threshold', async () => {
    const store = wrapStore(memoryCircuitStore());
    const a = worker(store);
    const b = worker(store);
    await a.call();
    await b.call();
    expect(a.breaker.state('search.web')).toBe('closed');
    await a.call();
    expect(a.types()).toContain('circuit.open');
    const refused = await b.call();
    expect(refused).toMatchObject({ ok: false, kind: 'circuit_open', retryAfterMs: 1_000 });
    expect(b.backend.runs).toBe(1);
    expect(b.breaker.state('search.web')).toBe('open');
    expect(b.breaker.snapshot()).toMatchObject({ 'search.web': { state: 'open', failures: 3 } });
  });

  it('lets one probe through across the fleet after the cooldown, and closes on its success', async () => {
    const store = wrapStore(memoryCircuitStore());
    const a = worker(store);
    const b = worker(store);
    for (let i = 0; i < 3; i++) await a.call();
    vi.advanceTimersByTime(1_000);
    const held = gate();
    a.backend.down = false;
    a.backend.hold = held.promise;
    const probe = a.call();
    await vi.advanceTimersByTimeAsync(0);
    expect(a.types()).toContain('circuit.half_open');
    expect(await b.call()).toMatchObject({ ok: false, kind: 'circuit_open' });
    held.open();
    expect(await probe).toMatchObject({ ok: true, result: 'ok' });
    expect(a.types()).toContain('circuit.close');
    b.backend.down = false;
    expect(await b.call()).toMatchObject({ ok: true, result: 'ok' });
    expect(b.breaker.state('search.web')).toBe('closed');
  });

  it('reopens for a new cooldown when the probe fails', async () => {
    const store = wrapStore(memoryCircuitStore());
    const a = worker(store);
    const b = worker(store);
    for (let i = 0; i < 3; i++) await a.call();
    vi.advanceTimersByTime(1_000);
    expect(await a.call()).toMatchObject({ ok: false, kind: 'transient' });
    expect(await b.call()).toMatchObject({ ok: false, kind: 'circuit_open', retryAfterMs: 1_000 });
  });

  it('clears the streak fleet-wide on any success', async () => {
    const store = wrapStore(memoryCircuitStore());
    const a = worker(store);
    const b = worker(store);
    await a.call();
    await a.call();
    b.backend.down = false;
    await b.call();
    // Without the success these would be the third and fourth failures: the fourth refused.
    expect(await a.call()).toMatchObject({ ok: false, kind: 'transient' });
    expect(await a.call()).toMatchObject({ ok: false, kind: 'transient' });
    expect(a.breaker.state('search.web')).toBe('closed');
  });
});

describe('circuitBreaker on a store that fails', () => {
  it('never fails a call for the store, and judges calls with its own breaker meanwhile', async () => {
    const store = asyncCircuitStore(memoryCircuitStore());
    for (const method of ['read', 'compareAndSet', 'addFailure', 'entries']) store.faults.failing.add(method);
    const a = worker(store);
    a.backend.down = false;
    expect(await a.call()).toMatchObject({ ok: true, result: 'ok' });
    a.backend.down = true;
    for (let i = 0; i < 3; i++) expect(await a.call()).toMatchObject({ ok: false, kind: 'transient' });
    expect(await a.call()).toMatchObject({ ok: false, kind: 'circuit_open' });
    expect(a.breaker.state('search.web')).toBe('open');
  });

  it('falls back for the failures the store could not count', async () => {
    const store = asyncCircuitStore(memoryCircuitStore());
    store.faults.failing.add('addFailure');
    const a = worker(store);
    for (let i = 0; i < 3; i++) await a.call();
    expect(a.types()).toContain('circuit.open');
    expect(await a.call()).toMatchObject({ ok: false, kind: 'circuit_open' });
  });

  it('never counts store_unavailable as a failure', async () => {
    const store = memoryCircuitStore();
    const registry = new ToolRegistry().register({
      name: 'search.web',
      inputSchema: z.object({}),
      handler: () => 'ok',
    });
    const breaker = circuitBreaker({ store, failureThreshold: 1 });
    const failing = async () => {
      const { DispatchError } = await import('../../index.js');
      throw new DispatchError('store_unavailable', 'no store');
    };
    const dispatcher = createDispatcher([errorMapping(), toolLookup(registry), breaker, failing]);
    expect(await dispatcher.dispatch('search.web', {})).toMatchObject({ kind: 'store_unavailable' });
    expect(breaker.state('search.web')).toBe('closed');
  });

  it('needs halfOpenMaxCalls of 1 with a store, and a real store', () => {
    expect(() => circuitBreaker({ store: memoryCircuitStore(), halfOpenMaxCalls: 2 })).toThrow(
      /halfOpenMaxCalls must be 1/,
    );
    expect(() => circuitBreaker({ store: {} as CircuitStore })).toThrow(/store must be a CircuitStore/);
    expect(() => circuitBreaker({ store: memoryCircuitStore(), probeLeaseMs: 0 })).toThrow(/probeLeaseMs/);
  });
});
