/**
 * The concurrency layer's events, merged into the core's `DispatchEventDetails`.
 * @module
 */

declare module '../../src/types.js' {
  interface DispatchEventDetails {
    /** The call waits for a concurrency slot. */
    'concurrency.queued': {
      /** Callers waiting now, this one included. */
      readonly queued: number;
      /** The most calls the layer (or, with `pool`, the shared pool) runs at once. */
      readonly max: number;
      /** The shared pool waited for, when the wait is for a store's permit. */
      readonly pool?: string;
    };
    /** A shared pool's permit lapsed while the call held it: the pool may be over its cap by one. */
    'concurrency.lease_lost': {
      /** The pool. */
      readonly pool: string;
    };
    /** A queued call got its slot. */
    'concurrency.acquired': {
      /** How long it waited, in milliseconds. */
      readonly waitedMs: number;
    };
  }
}

export {};
