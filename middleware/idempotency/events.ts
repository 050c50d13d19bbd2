/**
 * The idempotency layer's events (its receipts' too), merged into the core's
 * `DispatchEventDetails`.
 * @module
 */

declare module '../../src/types.js' {
  interface DispatchEventDetails {
    /** The call was answered by the idempotency layer. */
    'idempotency.hit': {
      /** The idempotency key. */
      readonly key: string;
      /** A cached success, or an execution in flight. */
      readonly source: 'cache' | 'in_flight';
    };
    /** The leader of a key lost its lease (paused or cut off past it); another may lead now. */
    'idempotency.lease_lost': {
      /** The idempotency key. */
      readonly key: string;
      /** The lost lead's fence. */
      readonly fence: number;
    };
    /** A store operation failed after the handler ran (the caller still got its result). */
    'idempotency.store_error': {
      /** The idempotency key. */
      readonly key: string;
      /** The operation that failed, e.g. `complete`. */
      readonly operation: string;
      /** What the store threw. */
      readonly error: unknown;
    };
    /**
     * A keyed call's receipt could not be written (the receipt store, or the idempotency store it
     * rode with, failed); the call itself stands.
     */
    'receipt.failed': {
      /** The idempotency key. */
      readonly key: string;
      /** The status the receipt would have recorded. */
      readonly receiptStatus: 'running' | 'succeeded' | 'failed' | 'in_doubt';
      /** The envelope's kind, when the store failed with one (e.g. `store_unavailable`). */
      readonly kind?: string;
      /** What the store said, without a stack. */
      readonly message: string;
      /** What the store threw. */
      readonly error: unknown;
    };
  }
}

export {};
