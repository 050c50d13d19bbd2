/**
 * The JSON the console's HTTP side answers, as the page reads it (docs/console.md, "The API").
 * Written out here rather than imported so the page compiles alone against the DOM;
 * test/types/console-page-wire.test-d.ts checks that the server's types still fit these.
 * @module
 */

/** `GET /console/api/session` and `POST /console/login`: who is signed in and which panes exist. */
export interface SessionAnswer {
  /** The CSRF token every POST carries in `X-CSRF-Token`; kept in memory only. */
  readonly csrf: string;
  /** The reviewer's name, as the audit records it. */
  readonly name: string;
  /** Which panes the server has a source for (absent on the login answer). */
  readonly panes?: { readonly approvals: boolean; readonly health: boolean; readonly inDoubt: boolean };
}

/** One pending request in the approvals pane. */
export interface ApprovalItem {
  /** The request's token: its identity in the API. */
  readonly token: string;
  /** The gated tool. */
  readonly tool: string;
  /** The validated args as JSON text, redacted and capped by the server. */
  readonly preview?: string;
  /** Why approval is required. */
  readonly reason: string;
  /** The call's id. */
  readonly callId: string;
  /** Who the call is for. */
  readonly tenant?: string;
  /** When it was opened, ms since the epoch on the server's clock. */
  readonly createdAt?: number;
  /** When it expires, ms since the epoch on the server's clock. */
  readonly expiresAt: number;
  /** How old it was when the server answered, in ms. */
  readonly ageMs?: number;
}

/** A page of pending requests. */
export interface ApprovalList {
  /** The requests, oldest first. */
  readonly items: readonly ApprovalItem[];
  /** Passed back for the next page while there are more. */
  readonly cursor?: string;
}

/** One decision, as the `approval.decided` event carries it. */
export interface ApprovalDecided {
  /** The request's token. */
  readonly token: string;
  /** The tool. */
  readonly tool: string;
  /** What was decided. */
  readonly decision: 'approved' | 'edited' | 'denied' | 'expired';
  /** Who decided. */
  readonly by: string;
  /** Through which channel. */
  readonly channel: string;
  /** For a denial, the reviewer's reason. */
  readonly reason?: string;
}

/** One tool's row in the tool-health pane. */
export interface HealthRow {
  /** The tool's name. */
  readonly tool: string;
  /** Calls settled per second over the window. */
  readonly callsPerSecond: number;
  /** Calls settled in the window. */
  readonly calls: number;
  /** Latency quantiles in ms (absent before the first call). */
  readonly p50?: number | undefined;
  /** @see p50 */
  readonly p95?: number | undefined;
  /** @see p50 */
  readonly p99?: number | undefined;
  /** Outcomes by kind (`ok` for successes). */
  readonly outcomes: Readonly<Record<string, number>>;
  /** Retries made in the window. */
  readonly retries: number;
  /** The breaker's state, if the tool has one. */
  readonly breaker?: 'closed' | 'open' | 'half_open';
  /** Rate-limit waits, refusals and the last bucket fill (0..1). */
  readonly rateLimit?: { readonly waits: number; readonly refusals: number; readonly fill?: number };
  /** Cost-budget burn by tenant. */
  readonly budget?: Readonly<Record<string, { readonly spent: number; readonly refusals: number }>>;
  /** The autopilot's last decision for the tool. */
  readonly autopilot?: {
    readonly timeoutMs?: number;
    readonly source?: string;
    readonly hedges?: number;
    readonly hedgeAfterMs?: number;
    readonly concurrency?: number;
  };
}

/** The tool-health pane at one moment. */
export interface HealthAnswer {
  /** When it was taken, ms since the epoch. */
  readonly at: number;
  /** The window the rates cover, in ms. */
  readonly windowMs: number;
  /** One row per tool. */
  readonly tools: readonly HealthRow[];
  /** How many processes' reports it merges. */
  readonly processes: number;
}

/** One receipt in the in-doubt pane. */
export interface InDoubtRow {
  /** The idempotency key: the row's identity in the API. */
  readonly key: string;
  /** The tool. */
  readonly tool: string;
  /** Where the outcome was lost. */
  readonly window: string | undefined;
  /** What `reconcile` found last time, redacted. */
  readonly evidence?: unknown;
  /** When the execution started, ms since the epoch. */
  readonly startedAt: number;
  /** Handler attempts made. */
  readonly attempts: number;
  /** The args as redacted, capped JSON text. */
  readonly preview?: string;
  /** Whether "reconcile now" is offered; else "mark resolved". */
  readonly canReconcile: boolean;
}

/** What "reconcile now" or "mark resolved" did. */
export interface InDoubtOutcome {
  /** The receipt's status afterwards. */
  readonly status: string;
  /** The verdict: `committed`, `not_committed`, `unknown` or `resolved`. */
  readonly verdict: string;
  /** What showed it, redacted. */
  readonly evidence?: unknown;
}
