/**
 * Attempt deadlines, the lists behind `ctx.limit`: armed at the end of the tick they start in,
 * one timer per duration for a list in start order, always measured from their start.
 * @module
 */

import { systemClock, type Clock } from '../clock.js';

const nodeSetTimeout = globalThis.setTimeout;

/**
 * What the scheduler keeps of a deadline: when it passes and its place in its duration's list.
 * The owner (a limit) is the node itself, so a limit has exactly one place in one list.
 */
export interface DeadlineNode {
  readonly ms: number;
  /** When it passes, on the scheduler's clock. */
  readonly at: number;
  cancelled: boolean;
  list: DeadlineList | undefined;
  previous: DeadlineNode | undefined;
  next: DeadlineNode | undefined;
  /** Called once when the deadline passes, unless cancelled first. */
  expire(): void;
}

/** The armed deadlines of one duration, oldest first. */
export class DeadlineList {
  first: DeadlineNode | undefined = undefined;
  last: DeadlineNode | undefined = undefined;
  timer: unknown = undefined;
  timerAt = 0;

  constructor(readonly ms: number) {}

  append(deadline: DeadlineNode): void {
    deadline.list = this;
    deadline.previous = this.last;
    if (this.last === undefined) this.first = deadline;
    else this.last.next = deadline;
    this.last = deadline;
  }

  remove(deadline: DeadlineNode): void {
    if (deadline.previous === undefined) this.first = deadline.next;
    else deadline.previous.next = deadline.next;
    if (deadline.next === undefined) this.last = deadline.previous;
    else deadline.next.previous = deadline.previous;
    deadline.list = undefined;
    deadline.previous = undefined;
    deadline.next = undefined;
  }
}

/** Starts and cancels deadlines on one clock. */
export class DeadlineScheduler {
  readonly #lists = new Map<number, DeadlineList>();
  // Deadlines started this tick, to be armed at its end: a list like the armed ones (each node
  // is its own link), so that cancelling one is O(1) wherever it waits.
  readonly #waiting = new DeadlineList(Number.NaN);
  #armScheduled = false;

  constructor(private readonly clock: Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>) {}

  /** Schedules a deadline node made by its owner (see `DeadlineNode`). */
  schedule(deadline: DeadlineNode): void {
    // With other deadlines of this duration armed, a timer is running anyway: join it at once,
    // which keeps busy dispatchers off the end-of-tick path entirely.
    const armed = this.#lists.size === 0 ? undefined : this.#lists.get(deadline.ms);
    if (armed !== undefined && armed.first !== undefined) {
      armed.append(deadline);
      return;
    }
    if (!this.#mayDefer()) {
      this.#arm(deadline);
      return;
    }
    this.#waiting.append(deadline);
    if (!this.#armScheduled) {
      this.#armScheduled = true;
      process.nextTick(this.#armWaiting);
    }
  }

  /** Cancels a deadline; the last one of its duration takes the timer with it. */
  cancel(deadline: DeadlineNode): void {
    if (deadline.cancelled) return;
    deadline.cancelled = true;
    const { list } = deadline;
    if (list === undefined) return;
    list.remove(deadline);
    // The timer may now be early for the new first deadline. That is harmless: a timer that
    // fires expires only the deadlines that have passed and is set again for the first one left.
    if (list.first === undefined && list !== this.#waiting) this.#stop(list);
  }

  readonly #armWaiting = (): void => {
    this.#armScheduled = false;
    const waiting = this.#waiting;
    for (let deadline = waiting.first; deadline !== undefined; deadline = waiting.first) {
      waiting.remove(deadline);
      this.#arm(deadline);
    }
  };

  #arm(deadline: DeadlineNode): void {
    let list = this.#lists.get(deadline.ms);
    if (list === undefined) {
      list = new DeadlineList(deadline.ms);
      this.#lists.set(deadline.ms, list);
    }
    list.append(deadline);
    if (list.timer === undefined) this.#setTimer(list);
  }

  // Arming at the end of the tick is only safe on Node's own timers. Under fake timers (or an
  // injected clock) a test may start a call and move the clock on synchronously, before the tick
  // ends: there the timer must exist at once, as it would with a plain setTimeout.
  #mayDefer(): boolean {
    return this.clock === systemClock && globalThis.setTimeout === nodeSetTimeout;
  }

  // Points the list's one timer at its first deadline.
  #setTimer(list: DeadlineList): void {
    const first = list.first as DeadlineNode;
    list.timerAt = first.at;
    list.timer = this.clock.setTimeout(() => this.#fire(list), Math.max(0, first.at - this.clock.now()));
  }

  #fire(list: DeadlineList): void {
    list.timer = undefined;
    // A timer that fires is trusted to mean its time has come, even if the clock reads a little
    // earlier (Node rounds timers to the millisecond; an injected clock may fire on demand).
    const now = Math.max(this.clock.now(), list.timerAt);
    const due: DeadlineNode[] = [];
    for (let deadline = list.first; deadline !== undefined && deadline.at <= now; deadline = list.first) {
      list.remove(deadline);
      deadline.cancelled = true;
      due.push(deadline);
    }
    if (list.first === undefined) this.#stop(list);
    else this.#setTimer(list);
    for (const deadline of due) deadline.expire();
  }

  #stop(list: DeadlineList): void {
    if (list.timer !== undefined) this.clock.clearTimeout(list.timer);
    list.timer = undefined;
    // Durations come and go (per-call timeouts); an idle one keeps nothing.
    if (this.#lists.get(list.ms) === list) this.#lists.delete(list.ms);
  }
}

/**
 * A deadline that progress pushes back (`ctx.limit({ idleMs })`): `idleMs` after its start or its
 * last `touch()`, never past `until`. Rare enough to keep a timer of its own, set at once: a
 * report only records the time, and a timer that finds the deadline moved is set again for the
 * time left, so a chatty handler costs no timer work per report.
 */
export class IdleDeadline {
  #last: number;
  #timer: unknown = undefined;
  #timerAt = 0;
  #ended = false;

  /**
   * Starts the deadline; `expire(idle)` is called once when it passes (`idle` when for want of
   * progress, not at `until`), unless cancelled first. At `stopAt` (an outer limit's deadline,
   * which ends it anyway) it stops without expiring.
   */
  constructor(
    private readonly clock: Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>,
    readonly idleMs: number,
    readonly until: number,
    private readonly stopAt: number,
    private readonly expire: (idle: boolean) => void,
  ) {
    this.#last = clock.now();
    this.#arm(this.#last);
  }

  /** Progress was reported: the deadline is `idleMs` from now (at most `until`). */
  touch(): void {
    if (!this.#ended) this.#last = this.clock.now();
  }

  /** Stops the deadline and its timer; it never expires after this. */
  cancel(): void {
    this.#ended = true;
    if (this.#timer !== undefined) this.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(now: number): void {
    const due = Math.min(this.#last + this.idleMs, this.until);
    if (due >= this.stopAt) return;
    this.#timerAt = due;
    this.#timer = this.clock.setTimeout(this.#fire, Math.max(0, due - now));
  }

  readonly #fire = (): void => {
    this.#timer = undefined;
    if (this.#ended) return;
    // As for the lists above: a timer that fires is trusted to mean its time has come.
    const now = Math.max(this.clock.now(), this.#timerAt);
    if (Math.min(this.#last + this.idleMs, this.until) > now) return this.#arm(now);
    this.#ended = true;
    this.expire(this.#last + this.idleMs < this.until);
  };
}
