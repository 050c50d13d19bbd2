/**
 * The tool-health pane's source: an in-process aggregator over the events the stack already
 * emits (outcomes, retries, breaker changes, rate-limit waits and refusals, budget burn,
 * autopilot decisions), per tool over a sliding window, shared across a fleet through a store.
 * @module
 */

import {
  createRedactor,
  type Clock,
  type DispatchEvent,
  type EventListener,
  type Redactor,
} from '../../index.js';
import {
  optionKeys,
  optionsObject,
  requireClock,
  requireInteger,
  requireNumber,
  systemClock,
} from '../../middleware/index.js';
import { countIn, mergeRows, ToolWindow, type SharedToolRow } from './health-window.js';
import type { HealthReport, HealthSource, ToolHealthRow } from './panes.js';

/** One process's report as it is shared: its rows keep their latency histograms. */
export interface HealthSnapshot {
  /** Which process took it. */
  readonly processId: string;
  /** When, in ms since the epoch. */
  readonly at: number;
  /** The window it covers, in ms. */
  readonly windowMs: number;
  /** Its rows. */
  readonly tools: readonly SharedToolRow[];
}

/**
 * Where a fleet's processes leave their health snapshots for each other's consoles, e.g.
 * `redisHealthShare({ client })` from `tool-dispatcher/redis`.
 */
export interface HealthShare {
  /** Publishes this process's snapshot, kept for `ttlMs` unless published again. */
  publish(processId: string, snapshot: HealthSnapshot, ttlMs: number): unknown;
  /** Every live process's latest snapshot (this one's included); what is not a snapshot is skipped. */
  readAll(): readonly unknown[] | Promise<readonly unknown[]>;
}

/** Options for `toolHealth`. */
export interface ToolHealthOptions {
  /** A dispatcher to hear at once (through `dispatcher.subscribe`); more with `attach`. @default none */
  dispatcher?: {
    /** Hears every event the dispatcher emits; returns the unsubscribe function. */
    subscribe(listener: EventListener): () => void;
  };
  /** The sliding window the rates and quantiles cover, in ms. @default 60_000 */
  windowMs?: number;
  /** How often a report is taken while anyone listens, and published with `share`, in ms. @default 1_000 */
  reportEveryMs?: number;
  /** The most tools kept; past it, new names count as `_OTHER`. @default 500 */
  maxTools?: number;
  /** The most budget keys (tenants) kept per tool; past it, new ones count as `_OTHER`. @default 100 */
  maxTenants?: number;
  /** Shares snapshots with the fleet's other processes (see `HealthShare`). @default none */
  share?: HealthShare;
  /** This process's id in the share. @default a random id */
  processId?: string;
  /** The clock windows, reports and the timer run on. @default systemClock */
  clock?: Clock;
  /** Redacts tool names and budget keys before a report shows them. @default createRedactor() */
  redact?: Redactor;
  /**
   * When the aggregator listens to its dispatchers: `always`, or only while `watched` (someone
   * subscribed, or a report was asked within the last window), so that a console nobody looks at
   * costs the dispatcher nothing; its window then fills from the moment someone looks. Not with
   * `share`, whose workers publish whether or not they are watched.
   * @default 'always'
   */
  listen?: 'always' | 'watched';
}

const toolHealthOptionKeys = optionKeys<ToolHealthOptions>({
  dispatcher: true,
  windowMs: true,
  reportEveryMs: true,
  maxTools: true,
  maxTenants: true,
  share: true,
  processId: true,
  clock: true,
  redact: true,
  listen: true,
});

/** The tool-health aggregator: a `HealthSource`, and the listener that feeds it. */
export interface ToolHealth extends HealthSource {
  /** Hears every event of `dispatcher` (through `dispatcher.subscribe`); returns the detach. */
  attach(dispatcher: { subscribe(listener: EventListener): () => void }): () => void;
  /** Counts one event: pass it as `createDispatcher`'s `onEvent` where `subscribe` is not at hand. */
  readonly record: EventListener;
  /** This process's snapshot now, histograms included (what `share` publishes). */
  snapshot(): HealthSnapshot;
  /** Detaches every dispatcher, ends every subscription and stops the timer. */
  close(): void;
}

const slicesPerWindow = 12;

/**
 * Makes the tool-health aggregator: per tool over a sliding window, calls per second, p50/p95/p99
 * of settled calls' latency (from a log-bucket histogram: within ~5 %), the outcome mix, retries,
 * the breaker's state, rate-limit waits and refusals, budget burn per tenant and the autopilot's
 * timeout. Memory is bounded per tool, idle tools are dropped. `subscribe` hears a report about
 * once a second while anyone listens; with `share`, every process publishes its snapshot as
 * often and `report()` merges the fleet's (`processes` counts them).
 *
 * @example
 * import { toolHealth } from 'tool-dispatcher/console';
 * const health = toolHealth({ dispatcher });
 * const report = await health.report(); // { at, windowMs, tools: [{ tool, callsPerSecond, p95, … }], processes: 1 }
 */
export function toolHealth(options: ToolHealthOptions = {}): ToolHealth {
  const given = optionsObject('toolHealth', options, toolHealthOptionKeys);
  const {
    dispatcher,
    windowMs = 60_000,
    reportEveryMs = 1_000,
    maxTools = 500,
    maxTenants = 100,
    share,
    processId = `p-${globalThis.crypto.randomUUID()}`,
    clock = systemClock,
    redact = createRedactor(),
    listen = 'always',
  } = given;
  if (listen !== 'always' && listen !== 'watched') {
    throw new TypeError(`listen must be 'always' or 'watched', got ${String(listen)}`);
  }
  if (listen === 'watched' && share !== undefined) {
    throw new TypeError(
      "listen must be 'always' with share: a worker publishes whether or not it is watched",
    );
  }
  if (typeof redact?.redact !== 'function') {
    throw new TypeError('redact must be a redactor from createRedactor()');
  }
  requireNumber('windowMs', windowMs, slicesPerWindow, {});
  requireNumber('reportEveryMs', reportEveryMs, 10, {});
  requireInteger('maxTools', maxTools, 1);
  requireInteger('maxTenants', maxTenants, 1);
  requireClock(clock, ['now', 'setTimeout', 'clearTimeout']);
  if (typeof processId !== 'string' || processId === '') {
    throw new TypeError(`processId must be a non-empty string, got ${String(processId)}`);
  }
  if (
    share !== undefined &&
    (typeof share !== 'object' ||
      share === null ||
      typeof share.publish !== 'function' ||
      typeof share.readAll !== 'function')
  ) {
    throw new TypeError('share must be a HealthShare (publish, readAll), e.g. redisHealthShare(redis)');
  }
  if (dispatcher !== undefined) requireSubscribable(dispatcher);
  const aggregator = new HealthAggregator({ windowMs, maxTools, maxTenants, clock, redact });
  const desk = new HealthDesk(aggregator, {
    reportEveryMs,
    share,
    processId,
    clock,
    watchedOnly: listen === 'watched',
    windowMs,
  });
  if (dispatcher !== undefined) desk.attach(dispatcher);
  return {
    report: () => desk.report(),
    subscribe: (listener) => desk.subscribe(listener),
    attach: (source) => {
      requireSubscribable(source);
      return desk.attach(source);
    },
    record: (event) => aggregator.record(event),
    snapshot: () => aggregator.snapshot(processId),
    close: () => desk.close(),
  };
}

function requireSubscribable(dispatcher: unknown): void {
  if (typeof (dispatcher as { subscribe?: unknown } | null)?.subscribe !== 'function') {
    throw new TypeError('dispatcher must be a Dispatcher (with subscribe), from createDispatcher()');
  }
}

/** What the aggregator needs: its window, its bounds and its clock. */
interface AggregatorSettings {
  readonly windowMs: number;
  readonly maxTools: number;
  readonly maxTenants: number;
  readonly clock: Pick<Clock, 'now'>;
  readonly redact: Redactor;
}

/** Every tool's window in this process, fed one event at a time. */
class HealthAggregator {
  readonly #tools = new Map<string, ToolWindow>();
  readonly #sliceMs: number;

  constructor(private readonly settings: AggregatorSettings) {
    this.#sliceMs = settings.windowMs / slicesPerWindow;
  }

  get windowMs(): number {
    return this.settings.windowMs;
  }

  /** Counts `event`; never throws (a listener must not break a dispatch, nor be dropped). */
  record(event: DispatchEvent): void {
    try {
      this.#count(event);
    } catch {
      // An event with fields of the wrong type costs its own count only.
    }
  }

  #count(event: DispatchEvent): void {
    const { type } = event;
    switch (type) {
      case 'dispatch.success':
        return this.#window(event.tool).settled(this.#stamp(), 'ok', Number(event.durationMs));
      case 'dispatch.failure':
        return this.#window(event.tool).settled(this.#stamp(), String(event.kind), Number(event.durationMs));
      case 'dispatch.retry':
        return countIn(this.#window(event.tool), this.#stamp(), 'retry');
      case 'rate_limit.wait':
        return countIn(this.#window(event.tool), this.#stamp(), 'wait');
      case 'rate_limit.refused':
        return countIn(this.#window(event.tool), this.#stamp(), 'refusal');
      case 'rate_limit.granted':
        if (Number.isFinite(event.fill)) this.#window(event.tool).rateFill = Number(event.fill);
        return;
      case 'circuit.open':
      case 'circuit.half_open':
      case 'circuit.close':
        this.#window(event.tool).breaker = breakerStates[type];
        return;
      default:
        return this.#countPolicy(event);
    }
  }

  // The budget's and the autopilot's events.
  #countPolicy(event: DispatchEvent): void {
    const details = event as unknown as Record<string, unknown>;
    switch (event.type) {
      case 'budget.charged':
      case 'budget.overrun':
        return this.#burn(event.tool, details.key, Number(details.units), 0);
      case 'budget.returned':
        return this.#burn(event.tool, details.key, -Number(details.units), 0);
      case 'budget.refused':
        return this.#burn(event.tool, details.key, 0, 1);
      case 'autopilot.decision':
        return this.#steer(event.tool, details);
      case 'autopilot.hedge':
        if (details.decision === 'started') {
          const steered = this.#window(event.tool);
          steered.autopilot = { ...steered.autopilot, hedges: (steered.autopilot?.hedges ?? 0) + 1 };
        }
        return;
      default:
    }
  }

  // The autopilot's knobs as it last announced them: each decision moves one, the others stay.
  #steer(tool: string, details: Record<string, unknown>): void {
    const window = this.#window(tool);
    const autopilot = { ...window.autopilot };
    const to = typeof details.to === 'number' ? details.to : undefined;
    if (details.knob === 'timeout') {
      if (to === undefined) delete autopilot.timeoutMs;
      else autopilot.timeoutMs = to;
      if (typeof details.source === 'string') autopilot.source = details.source;
    } else if (details.knob === 'hedge') {
      if (to === undefined) delete autopilot.hedgeAfterMs;
      else autopilot.hedgeAfterMs = to;
    } else if (details.knob === 'concurrency') {
      if (to !== undefined) autopilot.concurrency = to;
    } else return;
    window.autopilot = autopilot;
  }

  #burn(tool: string, key: unknown, units: number, refusals: number): void {
    if (!Number.isFinite(units)) return;
    const tenant = typeof key === 'string' ? this.settings.redact.redact(key) : '';
    this.#window(tool).budget(this.#stamp(), tenant, units, refusals);
  }

  #stamp(): number {
    return Math.floor(this.settings.clock.now() / this.#sliceMs);
  }

  #oldestStamp(): number {
    return this.#stamp() - slicesPerWindow + 1;
  }

  #window(tool: string): ToolWindow {
    const name = typeof tool === 'string' ? tool : String(tool);
    let window = this.#tools.get(name);
    if (window !== undefined) return window;
    if (this.#tools.size >= this.settings.maxTools - 1) this.#dropIdle();
    // Tool names come from callers (a model may invent them): the map stays bounded.
    // One slot stays for `_OTHER`, so that the map never holds more than `maxTools`.
    const room = this.settings.maxTools - (this.#tools.has('_OTHER') ? 0 : 1);
    const kept = this.#tools.size >= room ? '_OTHER' : name;
    window = this.#tools.get(kept);
    if (window === undefined) {
      // Redacted once, when the tool is first seen: a name is what a report shows.
      const shown = kept === '_OTHER' ? kept : this.settings.redact.redact(kept);
      window = new ToolWindow(shown, { slices: slicesPerWindow, maxTenants: this.settings.maxTenants });
      this.#tools.set(kept, window);
    }
    return window;
  }

  #dropIdle(): void {
    const oldest = this.#oldestStamp();
    for (const [name, window] of this.#tools) if (window.idle(oldest)) this.#tools.delete(name);
  }

  /** Every tool's row now, histograms included; idle tools are dropped first. */
  snapshot(processId: string): HealthSnapshot {
    this.#dropIdle();
    const oldest = this.#oldestStamp();
    const { windowMs } = this.settings;
    const tools = [...this.#tools.values()]
      .map((window) => window.row(oldest, windowMs))
      .sort((a, b) => (a.tool < b.tool ? -1 : a.tool > b.tool ? 1 : 0));
    return { processId, at: this.settings.clock.now(), windowMs, tools };
  }
}

const breakerStates = {
  'circuit.open': 'open',
  'circuit.half_open': 'half_open',
  'circuit.close': 'closed',
} as const;

/** How the desk publishes and reports. */
interface DeskSettings {
  readonly reportEveryMs: number;
  readonly share: HealthShare | undefined;
  readonly processId: string;
  readonly clock: Clock;
  /** Listen to the dispatchers only while watched. */
  readonly watchedOnly: boolean;
  /** How long a report keeps the aggregator listening, in `watchedOnly` mode. */
  readonly windowMs: number;
}

type Subscribable = { subscribe(listener: EventListener): () => void };

/** Reports and publishes: the timer runs while anyone listens, or while a share needs feeding. */
class HealthDesk {
  readonly #listeners = new Set<(report: HealthReport) => void>();
  // Each attached dispatcher, and its unsubscribe while the desk hears it.
  readonly #sources = new Map<Subscribable, (() => void) | undefined>();
  #timer: unknown;
  #ticking = false;
  #closed = false;
  #reportedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly aggregator: HealthAggregator,
    private readonly settings: DeskSettings,
  ) {}

  attach(dispatcher: Subscribable): () => void {
    if (this.#closed) throw new Error('toolHealth is closed');
    if (this.#sources.has(dispatcher)) throw new Error('this dispatcher is attached already');
    this.#sources.set(dispatcher, undefined);
    if (this.#watched()) this.#hear(dispatcher);
    this.#schedule();
    return () => {
      if (!this.#sources.has(dispatcher)) return;
      this.#sources.get(dispatcher)?.();
      this.#sources.delete(dispatcher);
      this.#schedule();
    };
  }

  subscribe(listener: (report: HealthReport) => void): () => void {
    if (typeof listener !== 'function') throw new TypeError('listener must be a function');
    // A fresh wrapper per call: the same function subscribed twice is two subscriptions.
    const wrapped = (report: HealthReport) => listener(report);
    this.#listeners.add(wrapped);
    this.#wake();
    this.#schedule();
    return () => {
      if (!this.#listeners.delete(wrapped)) return;
      this.#schedule();
    };
  }

  #hear(dispatcher: Subscribable): void {
    if (this.#sources.get(dispatcher) !== undefined) return;
    this.#sources.set(
      dispatcher,
      dispatcher.subscribe((event) => this.aggregator.record(event)),
    );
  }

  // Whether the dispatchers should be heard now.
  #watched(): boolean {
    if (!this.settings.watchedOnly) return true;
    const sinceReport = this.settings.clock.now() - this.#reportedAt;
    return this.#listeners.size > 0 || sinceReport < this.settings.windowMs;
  }

  #wake(): void {
    if (this.#closed) return;
    for (const dispatcher of this.#sources.keys()) this.#hear(dispatcher);
  }

  // Nobody looked for a whole window: the dispatchers go back to costing nothing.
  #sleepIfUnwatched(): void {
    if (this.#watched()) return;
    for (const [dispatcher, unsubscribe] of this.#sources) {
      unsubscribe?.();
      this.#sources.set(dispatcher, undefined);
    }
  }

  #hearing(): boolean {
    for (const unsubscribe of this.#sources.values()) if (unsubscribe !== undefined) return true;
    return false;
  }

  report(): HealthReport | Promise<HealthReport> {
    if (this.settings.watchedOnly && !this.#closed) {
      this.#reportedAt = this.settings.clock.now();
      this.#wake();
      this.#schedule();
    }
    return this.#reportUnwatched();
  }

  // The report, without counting as someone looking (the timer's own reports).
  #reportUnwatched(): HealthReport | Promise<HealthReport> {
    const own = this.aggregator.snapshot(this.settings.processId);
    const { share } = this.settings;
    if (share === undefined) return reportOf([own], this.aggregator.windowMs, own.at);
    return this.#fleetReport(share, own);
  }

  async #fleetReport(share: HealthShare, own: HealthSnapshot): Promise<HealthReport> {
    let others: readonly unknown[] = [];
    try {
      others = await share.readAll();
    } catch {
      // The store unreachable: this process's own report is still worth showing.
    }
    const ttlMs = this.#ttlMs();
    const snapshots = [own];
    for (const other of Array.isArray(others) ? others : []) {
      if (!isSnapshot(other) || other.processId === own.processId) continue;
      if (other.windowMs !== own.windowMs || own.at - other.at > ttlMs) continue;
      snapshots.push(other);
    }
    return reportOf(snapshots, own.windowMs, own.at);
  }

  #ttlMs(): number {
    return Math.max(5_000, 3 * this.settings.reportEveryMs);
  }

  // The timer runs only while it has work: listeners to feed, or a fleet to publish to.
  #needsTimer(): boolean {
    if (this.#closed) return false;
    if (this.#listeners.size > 0) return true;
    if (this.settings.share !== undefined && this.#sources.size > 0) return true;
    // Awake without listeners: the timer puts the desk back to sleep after a window.
    return this.settings.watchedOnly && this.#hearing();
  }

  #schedule(): void {
    const { clock } = this.settings;
    if (!this.#needsTimer()) {
      if (this.#timer !== undefined) clock.clearTimeout(this.#timer);
      this.#timer = undefined;
      return;
    }
    if (this.#timer !== undefined || this.#ticking) return;
    this.#timer = clock.setTimeout(() => {
      this.#timer = undefined;
      void this.#tick();
    }, this.settings.reportEveryMs);
    // A health timer never keeps a process alive by itself.
    (this.#timer as { unref?: () => void } | undefined)?.unref?.();
  }

  async #tick(): Promise<void> {
    this.#ticking = true;
    try {
      await this.#publish();
      if (this.#listeners.size > 0) this.#deliver(await this.#reportUnwatched());
      this.#sleepIfUnwatched();
    } catch {
      // A failed round is skipped; the next one tries again.
    } finally {
      this.#ticking = false;
      this.#schedule();
    }
  }

  async #publish(): Promise<void> {
    const { share, processId } = this.settings;
    if (share === undefined || this.#sources.size === 0) return;
    try {
      await share.publish(processId, this.aggregator.snapshot(processId), this.#ttlMs());
    } catch {
      // Others miss one of this process's snapshots; the next is a second away.
    }
  }

  #deliver(report: HealthReport): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(report);
      } catch {
        // One broken listener must not starve the others.
      }
    }
  }

  close(): void {
    this.#closed = true;
    for (const unsubscribe of this.#sources.values()) unsubscribe?.();
    this.#sources.clear();
    this.#listeners.clear();
    this.#schedule();
  }
}

/** The pane's report of `snapshots`: rows of the same tool merged, histograms left out. */
function reportOf(snapshots: readonly HealthSnapshot[], windowMs: number, at: number): HealthReport {
  const byTool = new Map<string, SharedToolRow[]>();
  for (const snapshot of snapshots) {
    for (const row of snapshot.tools) {
      const rows = byTool.get(row.tool);
      if (rows === undefined) byTool.set(row.tool, [row]);
      else rows.push(row);
    }
  }
  const tools: ToolHealthRow[] = [];
  for (const [, rows] of [...byTool].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const merged = rows.length === 1 ? (rows[0] as SharedToolRow) : mergeRows(rows, windowMs);
    const { latency: _histogram, ...row } = merged;
    tools.push(row);
  }
  return { at, windowMs, tools, processes: snapshots.length };
}

function isSnapshot(value: unknown): value is HealthSnapshot {
  if (typeof value !== 'object' || value === null) return false;
  const snapshot = value as Partial<HealthSnapshot>;
  return (
    typeof snapshot.processId === 'string' &&
    typeof snapshot.at === 'number' &&
    typeof snapshot.windowMs === 'number' &&
    Array.isArray(snapshot.tools) &&
    snapshot.tools.every(
      (row) =>
        typeof row === 'object' &&
        row !== null &&
        typeof row.tool === 'string' &&
        typeof row.calls === 'number' &&
        typeof row.retries === 'number' &&
        typeof row.outcomes === 'object' &&
        row.outcomes !== null,
    )
  );
}
