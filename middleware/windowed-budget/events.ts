/**
 * The windowed budget's events, merged into the core's `DispatchEventDetails`.
 * @module
 */

declare module '../../src/types.js' {
  interface DispatchEventDetails {
    /** A settled cost exceeded its reservation in a `windowedBudget`: the excess was charged. */
    'budget.overrun': {
      /** The budget's key. */
      readonly key: string;
      /** Units charged beyond the reservation. */
      readonly units: number;
    };
  }
}

export {};
