/**
 * Metrics for the policy layers that had none: cost units, rate-limit waits, refusals and 429
 * debits, budget exhaustion, unknown outcomes by window, approvals pending and decision latency.
 * @module
 */

import type { Attributes, Counter, Histogram, Meter } from '@opentelemetry/api';
import type { ApprovalDecidedEvent, DispatchEvent } from '../../index.js';
import { ours } from './attributes.js';

/** The policy metrics' names (part of `metricNames`). */
export const policyMetricNames = {
  /** Counter: cost units a `windowedBudget` charged (reservations and overruns). */
  costUnits: 'tool_dispatcher.cost_units',
  /** Counter: cost units a `windowedBudget` gave back (reserved, not spent). */
  costUnitsReturned: 'tool_dispatcher.cost_units_returned',
  /** Counter: calls that ended `budget_exceeded` (a call's budget or a windowed budget spent). */
  budgetExhausted: 'tool_dispatcher.budget_exhausted',
  /** Counter: attempts a `rateLimit` made wait. */
  rateLimitWaits: 'tool_dispatcher.rate_limit.waits',
  /** Histogram, seconds: how long those waits were. */
  rateLimitWaitDuration: 'tool_dispatcher.rate_limit.wait_duration',
  /** Counter: attempts a `rateLimit` refused (`rate_limited`). */
  rateLimitRefusals: 'tool_dispatcher.rate_limit.refusals',
  /** Counter: a backend's 429s that emptied a bucket (`rate_limit.debit`). */
  rateLimitDebits: 'tool_dispatcher.rate_limit.debits',
  /** Counter: calls that ended `outcome_unknown`, by `tool_dispatcher.outcome.window`. */
  outcomeUnknown: 'tool_dispatcher.outcome_unknown',
  /** Up-down counter: approval requests this process's calls opened, still pending (not decided nor expired). */
  approvalsPending: 'tool_dispatcher.approvals.pending',
  /** Histogram, seconds: from a request to its decision, by `tool_dispatcher.approval.decision`. */
  approvalDecisionDuration: 'tool_dispatcher.approval.decision_duration',
} as const;

const waitBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const decisionBuckets = [1, 5, 15, 30, 60, 120, 300, 900, 1_800, 3_600, 14_400, 86_400];
// Requests tracked at once; past it the oldest is forgotten (its decision then goes unmeasured).
const maxPending = 10_000;

/** A request one of this process's calls opened. */
interface OpenRequest {
  readonly tool: string;
  readonly openedAt: number;
  readonly expiresAt: number;
}

/** The policy instruments of one meter. */
export class PolicyInstruments {
  readonly #costUnits: Counter;
  readonly #costUnitsReturned: Counter;
  readonly #budgetExhausted: Counter;
  readonly #waits: Counter;
  readonly #waitDuration: Histogram;
  readonly #refusals: Counter;
  readonly #debits: Counter;
  readonly #outcomeUnknown: Counter;
  readonly #decisionDuration: Histogram;
  readonly #pending = new Map<string, OpenRequest>();
  // Every tool that had a request, so that its series reads 0 once none is pending.
  readonly #pendingTools = new Set<string>();

  constructor(
    meter: Meter,
    private readonly toolAttributes: (tool: string) => Attributes,
    private readonly now: () => number = Date.now,
  ) {
    const counter = (name: string, unit: string, description: string) =>
      meter.createCounter(name, { unit, description });
    this.#costUnits = counter(
      policyMetricNames.costUnits,
      '{unit}',
      'Cost units charged to windowed budgets.',
    );
    this.#costUnitsReturned = counter(
      policyMetricNames.costUnitsReturned,
      '{unit}',
      'Cost units reserved in windowed budgets and given back unspent.',
    );
    this.#budgetExhausted = counter(
      policyMetricNames.budgetExhausted,
      '{call}',
      'Calls that ended budget_exceeded.',
    );
    this.#waits = counter(policyMetricNames.rateLimitWaits, '{attempt}', 'Attempts a rate limit made wait.');
    this.#waitDuration = meter.createHistogram(policyMetricNames.rateLimitWaitDuration, {
      unit: 's',
      description: 'How long a rate limit made an attempt wait.',
      advice: { explicitBucketBoundaries: waitBuckets },
    });
    this.#refusals = counter(
      policyMetricNames.rateLimitRefusals,
      '{attempt}',
      'Attempts a rate limit refused.',
    );
    this.#debits = counter(
      policyMetricNames.rateLimitDebits,
      '{debit}',
      "Backend 429s that emptied a rate limit's bucket.",
    );
    this.#outcomeUnknown = counter(
      policyMetricNames.outcomeUnknown,
      '{call}',
      'Calls that ended outcome_unknown, by where the outcome was lost.',
    );
    this.#decisionDuration = meter.createHistogram(policyMetricNames.approvalDecisionDuration, {
      unit: 's',
      description: 'From an approval request to its decision.',
      advice: { explicitBucketBoundaries: decisionBuckets },
    });
    meter
      .createObservableUpDownCounter(policyMetricNames.approvalsPending, {
        unit: '{request}',
        description: "Approval requests this process's calls opened that are still pending.",
      })
      .addCallback((result) => {
        for (const [tool, count] of this.#pendingByTool()) result.observe(count, this.toolAttributes(tool));
      });
  }

  /** Counts `event` of a call of `tool` if it is a policy event; `false` for any other. */
  record(event: DispatchEvent, tool: string): boolean {
    const details = event as unknown as Record<string, unknown>;
    const attributes = () => this.toolAttributes(tool);
    switch (event.type) {
      case 'budget.charged':
      case 'budget.overrun':
        if (isUnits(details.units)) this.#costUnits.add(details.units, attributes());
        return true;
      case 'budget.returned':
        if (isUnits(details.units)) this.#costUnitsReturned.add(details.units, attributes());
        return true;
      case 'rate_limit.wait':
        this.#waits.add(1, attributes());
        if (isUnits(details.waitMs)) this.#waitDuration.record(details.waitMs / 1000, attributes());
        return true;
      case 'rate_limit.refused':
        this.#refusals.add(1, attributes());
        return true;
      case 'rate_limit.debit':
        this.#debits.add(1, attributes());
        return true;
      case 'approval.required':
        if (typeof details.token === 'string') this.#opened(details.token, tool, Number(details.expiresAt));
        return true;
      default:
        return false;
    }
  }

  /** Counts a call of `tool` that ended `kind` (with `window`, for `outcome_unknown`). */
  ended(kind: string, tool: string, window: string | undefined): void {
    if (kind === 'budget_exceeded') this.#budgetExhausted.add(1, this.toolAttributes(tool));
    if (kind === 'outcome_unknown') {
      this.#outcomeUnknown.add(1, { ...this.toolAttributes(tool), [ours.outcomeWindow]: window ?? '_OTHER' });
    }
  }

  /** Ends a request this process opened and records how long it waited; others are not ours to count. */
  approvalDecided(decided: ApprovalDecidedEvent): void {
    const open = this.#pending.get(decided.token);
    if (open === undefined) return;
    this.#pending.delete(decided.token);
    if (decided.decision === 'expired') return;
    const waitedS = Math.max(0, (this.now() - open.openedAt) / 1000);
    this.#decisionDuration.record(waitedS, {
      ...this.toolAttributes(open.tool),
      [ours.approvalDecision]: String(decided.decision),
    });
  }

  #opened(token: string, tool: string, expiresAt: number): void {
    if (this.#pending.has(token)) return;
    if (this.#pending.size >= maxPending) {
      const oldest = this.#pending.keys().next();
      if (oldest.done !== true) this.#pending.delete(oldest.value);
    }
    this.#pendingTools.add(tool);
    this.#pending.set(token, {
      tool,
      openedAt: this.now(),
      expiresAt: Number.isFinite(expiresAt) ? expiresAt : Number.POSITIVE_INFINITY,
    });
  }

  // Expired requests leave the count (and the map) when it is read.
  #pendingByTool(): Map<string, number> {
    const now = this.now();
    const counts = new Map<string, number>([...this.#pendingTools].map((tool) => [tool, 0]));
    for (const [token, open] of this.#pending) {
      if (open.expiresAt <= now) {
        this.#pending.delete(token);
        continue;
      }
      counts.set(open.tool, (counts.get(open.tool) ?? 0) + 1);
    }
    return counts;
  }
}

function isUnits(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}
