/**
 * What a circuit breaker reports of a circuit: its state and its snapshot.
 * @module
 */

/** Where a circuit stands: `closed` lets calls through, `open` turns them away, `half_open` lets probes through. */
export type CircuitState = 'closed' | 'open' | 'half_open';

/** One circuit as `snapshot()` reports it. */
export interface CircuitSnapshot {
  /** The state `state(key)` reports: an open circuit whose cooldown has elapsed is `half_open`. */
  state: CircuitState;
  /**
   * Counted failures: while closed, those of the current streak still within `windowMs` of
   * now; while open or half-open, those that opened it (1 when a probe failed).
   */
  failures: number;
  /** When the circuit last opened, in milliseconds since the epoch; absent while closed. */
  openedAt?: number;
  /** Milliseconds left in the cooldown; present only while open. */
  retryAfterMs?: number;
  /** Probe calls running right now; present only while half-open. */
  probes?: number;
}
