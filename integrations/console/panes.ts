/**
 * What the console's panes read: the seams between the HTTP side (`controlRoom`) and the sources
 * behind the tool-health and in-doubt panes. Everything here is already redacted when it is
 * answered: the HTTP side sends it as it is.
 * @module
 */

import type { OutcomeWindow } from '../../index.js';

/** One tool's health over the aggregator's window, as the tool-health pane shows it. */
export interface ToolHealthRow {
  /** The tool's name. */
  readonly tool: string;
  /** Calls settled per second over the window. */
  readonly callsPerSecond: number;
  /** Calls settled in the window. */
  readonly calls: number;
  /** Latency of settled calls in ms over the window (`undefined` before the first). */
  readonly p50: number | undefined;
  /** @see p50 */
  readonly p95: number | undefined;
  /** @see p50 */
  readonly p99: number | undefined;
  /** Outcomes in the window by kind: `ok` for successes, else the envelope's `kind`. */
  readonly outcomes: Readonly<Record<string, number>>;
  /** Retries made in the window. */
  readonly retries: number;
  /** The breaker's state as last reported, if the tool has one. */
  readonly breaker?: 'closed' | 'open' | 'half_open';
  /** Rate-limit state in the window: waits, refusals and the last bucket fill (0..1) seen. */
  readonly rateLimit?: {
    /** Calls that waited for a token. */
    readonly waits: number;
    /** Calls refused for want of one. */
    readonly refusals: number;
    /** The bucket's fill last seen, 0..1. */
    readonly fill?: number;
  };
  /** Cost-budget burn in the window by tenant (`''` when the call named none): units spent, refusals. */
  readonly budget?: Readonly<
    Record<
      string,
      {
        /** Units spent. */
        readonly spent: number;
        /** Calls refused for the budget. */
        readonly refusals: number;
      }
    >
  >;
  /** What the autopilot last decided for the tool, if it runs. */
  readonly autopilot?: {
    /** The timeout it set, in ms. */
    readonly timeoutMs?: number;
    /** Where that timeout came from. */
    readonly source?: string;
    /** Hedges started since the tool entered the aggregator's window. */
    readonly hedges?: number;
    /** How long an attempt runs before a hedge starts beside it, in ms, when it hedges the tool. */
    readonly hedgeAfterMs?: number;
    /** The tool's concurrency limit, when the autopilot sizes it. */
    readonly concurrency?: number;
  };
}

/** The whole tool-health pane at one moment. */
export interface HealthReport {
  /** When it was taken, in ms since the epoch. */
  readonly at: number;
  /** The window the rates and quantiles cover, in ms. */
  readonly windowMs: number;
  /** One row per tool seen in the window, by name. */
  readonly tools: readonly ToolHealthRow[];
  /** How many processes' reports it merges (1 without a shared store). */
  readonly processes: number;
}

/** Feeds the tool-health pane. */
export interface HealthSource {
  /** The report now (merged across the fleet when it has a shared store). */
  report(): HealthReport | Promise<HealthReport>;
  /** Hears each new report as it is taken (about once a second while anyone listens). */
  subscribe(listener: (report: HealthReport) => void): () => void;
}

/** One `in_doubt` receipt as the in-doubt pane shows it. */
export interface InDoubtItem {
  /** The idempotency key (the row's identity in the API). */
  readonly key: string;
  /** The tool. */
  readonly tool: string;
  /** Where its outcome was lost. */
  readonly window: OutcomeWindow | undefined;
  /** What `reconcile` found last time, redacted. */
  readonly evidence?: unknown;
  /** When the execution started, ms since the epoch. */
  readonly startedAt: number;
  /** Handler attempts made. */
  readonly attempts: number;
  /** The args as the receipt kept them: redacted, capped JSON text; absent when not kept. */
  readonly preview?: string;
  /** Whether the tool declares `reconcile` ("reconcile now"); else only "mark resolved". */
  readonly canReconcile: boolean;
}

/** What "reconcile now" or "mark resolved" did. */
export interface InDoubtResolution {
  /** The receipt's status afterwards. */
  readonly status: 'succeeded' | 'failed' | 'in_doubt';
  /** `reconcile`'s verdict (`committed`, `not_committed`, `unknown`), or `resolved` for a note. */
  readonly verdict: 'committed' | 'not_committed' | 'unknown' | 'resolved';
  /** What showed it, redacted. */
  readonly evidence?: unknown;
}

/** Feeds the in-doubt pane and acts on it. */
export interface InDoubtSource {
  /** The receipts in doubt, most recent first. */
  list(query?: { readonly tool?: string; readonly limit?: number }): Promise<readonly InDoubtItem[]>;
  /**
   * Runs the tool's `reconcile` for `key` and records the verdict on the receipt.
   * @throws an `InDoubtActionError` (`not_found`, `not_in_doubt`, `no_reconcile`).
   */
  reconcile(key: string, by: { readonly by: string }): Promise<InDoubtResolution>;
  /**
   * Marks `key` resolved by a person, with a note, for a tool without `reconcile`.
   * @throws an `InDoubtActionError` (`not_found`, `not_in_doubt`).
   */
  resolve(key: string, by: { readonly by: string; readonly note: string }): Promise<InDoubtResolution>;
}

/** Why an in-doubt action was refused: the HTTP side maps `code` to a 4xx and `message` to one line. */
export class InDoubtActionError extends Error {
  /** What went wrong. */
  readonly code: 'not_found' | 'not_in_doubt' | 'no_reconcile' | 'bad_input';
  /** @param code what went wrong @param message one line for a person */
  constructor(code: InDoubtActionError['code'], message: string) {
    super(message);
    this.name = 'InDoubtActionError';
    this.code = code;
  }
}
