// Small helpers for the acceptance suite (black-box: only the package root is imported).
import { vi } from 'vitest';
import {
  ToolRegistry,
  createDispatcher,
  defaultStack,
  type DefaultStackOptions,
  type DispatchEvent,
} from '../../index.js';

export interface Gate<T = unknown> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

export function gate<T = unknown>(): Gate<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Flush microtasks only (does not move fake time). */
export async function flush(rounds = 50): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
}

/** Track whether a promise has settled. */
export function track<T>(p: Promise<T>): { readonly settled: boolean; value: T | undefined } {
  const state = { settled: false, value: undefined as T | undefined };
  p.then(
    (v) => {
      state.settled = true;
      state.value = v;
    },
    () => {
      state.settled = true;
    },
  );
  return state;
}

export function eventLog(): {
  events: DispatchEvent[];
  onEvent: (e: DispatchEvent) => void;
  types(): string[];
} {
  const events: DispatchEvent[] = [];
  return {
    events,
    onEvent: (e) => {
      events.push(e);
    },
    types: () => events.map((e) => e.type),
  };
}

export function useFake(): void {
  vi.useFakeTimers();
  vi.setSystemTime(new Date('2024-01-01T00:00:00Z'));
}

/** A registry, an event log, and a factory for default-stack dispatchers over them (`d` is `make`). */
export function setup(extra: Partial<DefaultStackOptions> = {}) {
  const registry = new ToolRegistry();
  const log = eventLog();
  const make = () => createDispatcher(defaultStack({ registry, ...extra }), { onEvent: log.onEvent });
  return { registry, log, make, d: make };
}
