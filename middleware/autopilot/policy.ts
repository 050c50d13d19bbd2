/**
 * What the autopilot tells about each call (`outcome.policy`), how it words its sources, and the
 * events it emits, merged into the core's outcome and event types.
 * @module
 */

/** The retry budget's word on a call: `ok`, `spent` (a retry was, or in shadow would have been, refused), `unavailable` (its store failed: the static rules held) or `off`. */
export type PolicyBudgetState = 'ok' | 'spent' | 'unavailable' | 'off';

/**
 * How the autopilot ran a call, on every outcome of a call that reached an attempt: on a success
 * and on a failure, in `toJSON`. In `shadow` mode it says what the autopilot would have done.
 */
export interface OutcomePolicy {
  /** `enforce`: what is said here was done; `shadow`: it would have been, nothing was changed. */
  readonly mode: 'enforce' | 'shadow';
  /**
   * The per-attempt timeout the autopilot chose, in milliseconds: its own once the tool has
   * enough samples, else the caller's or the tool's `timeoutMs`, else (in `defaultStack`) the
   * timeout's `defaultMs` (`undefined`: a hand-built stack's timeout layer default).
   */
  readonly timeoutMs: number | undefined;
  /** Where `timeoutMs` comes from, in a few words (`'p99.9 × 1.5 of 5 000 calls'`, `'static: 120 of 200 samples'`). */
  readonly source: string;
  /** An attempt was cut off by the autopilot's timeout (in shadow: ran past it, so would have been). */
  readonly cutOff: boolean;
  /** A hedge attempt was started beside a slow one (in shadow: one would have been). */
  readonly hedged: boolean;
  /** The call made more than one attempt. */
  readonly retried: boolean;
  /** The retry budget's word on the call. */
  readonly budget: PolicyBudgetState;
}

/** The knobs an `autopilot.decision` event can be about. */
export type AutopilotKnob = 'timeout' | 'retryBudget' | 'hedge' | 'concurrency';

declare module '../../src/types.js' {
  interface DispatchSuccess {
    /** How the autopilot ran this call, when an `autopilot()` layer saw it. */
    readonly policy?: OutcomePolicy;
  }
  interface DispatchEventDetails {
    /**
     * A knob of the autopilot moved for a tool: its timeout or its hedge delay changed (by 5 % or
     * more, or to or from none), its concurrency limit moved, or its retry budget was spent or
     * holds tokens again.
     */
    'autopilot.decision': {
      /** Which knob. */
      readonly knob: AutopilotKnob;
      /** `shadow`: the change is only reported. */
      readonly mode: 'enforce' | 'shadow';
      /** The value before: milliseconds (`undefined` for the static timeout or no hedging), a limit, or `open`/`spent`. */
      readonly from: number | string | undefined;
      /** The value now. */
      readonly to: number | string | undefined;
      /** Why, in a few words. */
      readonly source: string;
    };
    /** In shadow mode: what the autopilot would have done to this attempt or call. */
    'autopilot.shadow': {
      /** Which knob would have acted. */
      readonly knob: AutopilotKnob;
      /**
       * `cut_off`: the attempt ran past the timeout the autopilot chose; `not_retried`: the budget
       * was spent; `hedged`: a hedge would have started beside it; `queued`: it would have waited
       * for a slot under the tool's concurrency limit.
       */
      readonly action: 'cut_off' | 'not_retried' | 'hedged' | 'queued';
      /** For `cut_off`: the timeout the autopilot chose, in milliseconds. */
      readonly timeoutMs?: number;
      /** For `cut_off`: how long the attempt ran, in milliseconds. */
      readonly latencyMs?: number;
      /** For `hedged`: how long the attempt had run when the hedge would have started, in milliseconds. */
      readonly hedgeAfterMs?: number;
      /** For `queued`: the tool's concurrency limit. */
      readonly limit?: number;
    };
    /**
     * An attempt of a repeatable tool outlived its hedge delay: a hedge `started` beside it, or
     * the hedge budget was `budget_spent` and none did. Both attempts count in `dispatch.attempt`.
     */
    'autopilot.hedge': {
      /** What was decided. */
      readonly decision: 'started' | 'budget_spent';
      /** How long the first attempt had run, in milliseconds (the tool's live hedge quantile). */
      readonly hedgeAfterMs: number;
    };
    /** The autopilot's store failed: this call ran on the static policy for that knob. */
    'autopilot.fallback': {
      /** The knob that fell back. */
      readonly knob: AutopilotKnob;
      /** What the store failed with, in words. */
      readonly reason: string;
    };
  }
}

declare module '../../src/errors.js' {
  interface DispatchError {
    /** How the autopilot ran this call, when an `autopilot()` layer saw it. */
    readonly policy?: OutcomePolicy;
  }
  interface DispatchErrorJson {
    /** How the autopilot ran this call, when an `autopilot()` layer saw it. */
    policy?: OutcomePolicy;
  }
}

/**
 * How much a timeout or hedge delay must move before `autopilot.decision` says so: a window
 * refresh moves the quantile by a little every few dozen calls, and that is not news.
 */
export const announceShare = 0.05;

/** `0.999` → `p99.9`, `0.95` → `p95`. */
export function quantileLabel(quantile: number): string {
  return `p${Number((quantile * 100).toFixed(4))}`;
}

/** 5000 → '5 000', as the issue writes counts. */
export function groupDigits(count: number): string {
  return String(count).replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
}
