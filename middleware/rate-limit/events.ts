/**
 * The rate-limit layer's events, merged into the core's `DispatchEventDetails`.
 * @module
 */

declare module '../../src/types.js' {
  interface DispatchEventDetails {
    /** A `rateLimit` layer makes the attempt wait for its tokens. */
    'rate_limit.wait': {
      /** The bucket's key. */
      readonly key: string;
      /** How long the attempt waits, in milliseconds. */
      readonly waitMs: number;
    };
    /** An attempt's rate-limit answer emptied its key's bucket until `retryAfterMs` from now. */
    'rate_limit.debit': {
      /** The bucket's key. */
      readonly key: string;
      /** How long the bucket stays empty, in milliseconds. */
      readonly retryAfterMs: number;
    };
    /**
     * A `rateLimit` layer reserved the attempt's tokens, on a store that says how full the bucket
     * is left (`fill`, 0 to 1; both built-in stores do): the console's health pane shows it.
     */
    'rate_limit.granted': {
      /** The bucket's key. */
      readonly key: string;
      /** How long the attempt waits for its tokens, in milliseconds (0: none). */
      readonly waitMs: number;
      /** The share of the burst left once the tokens are reserved, 0 to 1. */
      readonly fill: number;
    };
    /** A `rateLimit` layer refused the attempt (`rate_limited`): the wait was too long or could never fit. */
    'rate_limit.refused': {
      /** The bucket's key. */
      readonly key: string;
      /** When the bucket may hold the tokens, in milliseconds; absent when it never will. */
      readonly retryAfterMs?: number;
    };
  }
}

export {};
