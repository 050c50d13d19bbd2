// A plain deadline node for testing the scheduler on its own: it calls a function when it passes.

import type { DeadlineList, DeadlineNode, DeadlineScheduler } from '../../src/internal/deadlines.js';

/** A deadline that calls `onExpiry` when it passes. */
export class TestDeadline implements DeadlineNode {
  cancelled = false;
  list: DeadlineList | undefined = undefined;
  previous: DeadlineNode | undefined = undefined;
  next: DeadlineNode | undefined = undefined;

  constructor(
    readonly ms: number,
    readonly at: number,
    private readonly onExpiry: () => void,
  ) {}

  expire(): void {
    this.onExpiry();
  }
}

/** Schedules a deadline `ms` after `startedAt` (by default now) and returns it. */
export function startDeadline(
  scheduler: DeadlineScheduler,
  ms: number,
  onExpiry: () => void,
  startedAt = Date.now(),
): TestDeadline {
  const deadline = new TestDeadline(ms, startedAt + ms, onExpiry);
  scheduler.schedule(deadline);
  return deadline;
}
