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
    /** A `windowedBudget` reserved an attempt's units in its key's ledger (the attempt may run). */
    'budget.charged': {
      /** The budget's key (a tenant). */
      readonly key: string;
      /** Units reserved. */
      readonly units: number;
    };
    /** A `windowedBudget` gave back units an attempt reserved but did not spend. */
    'budget.returned': {
      /** The budget's key. */
      readonly key: string;
      /** Units given back. */
      readonly units: number;
    };
    /** A `windowedBudget` refused an attempt (`budget_exceeded`): its key's window is spent. */
    'budget.refused': {
      /** The budget's key. */
      readonly key: string;
      /** Units the attempt asked for. */
      readonly units: number;
    };
  }
}

export {};
