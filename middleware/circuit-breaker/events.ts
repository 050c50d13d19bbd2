/**
 * The circuit breaker's events, merged into the core's `DispatchEventDetails`.
 * @module
 */

declare module '../../src/types.js' {
  interface DispatchEventDetails {
    /** A circuit opened. */
    'circuit.open': {
      /** The circuit's key. */
      readonly key: string;
      /** The counted failures that opened it. */
      readonly failures: number;
      /** How long it stays open, in milliseconds. */
      readonly cooldownMs: number;
    };
    /** A circuit lets a probe through. */
    'circuit.half_open': {
      /** The circuit's key. */
      readonly key: string;
    };
    /** A circuit closed again. */
    'circuit.close': {
      /** The circuit's key. */
      readonly key: string;
    };
  }
}

export {};
