/**
 * The console's live updates: one server-sent-event hub that listens (decisions, health) and polls
 * (newly pending requests, the in-doubt list) only while at least one stream is open, and sends
 * every event, redacted, to every stream.
 * @module
 */

import type { ServerResponse } from 'node:http';
import type { ApprovalRecord, Redactor } from '../../index.js';
import { approvalItemOf, type ApprovalDesk } from './approvals.js';
import type { ApprovalGate } from '../../index.js';
import type { HealthSource, InDoubtSource } from './panes.js';

/** How often the pending requests are listed while a stream is open, in ms. */
export const approvalPollMs = 250;

/** How often the in-doubt list is read while a stream is open, in ms. */
export const inDoubtPollMs = 3_000;

/** How often a `: ping` comment keeps idle streams (and the proxies between) open, in ms. */
export const pingMs = 15_000;

// A stream that has this much unsent is too slow to follow: it is ended (the page reconnects).
const maxBufferedBytes = 1024 * 1024;

/** What the hub reads: each source optional. */
export interface EventSources {
  readonly gate: ApprovalGate | undefined;
  readonly desk: ApprovalDesk | undefined;
  readonly health: HealthSource | undefined;
  readonly inDoubt: InDoubtSource | undefined;
  readonly redact: Redactor;
  readonly now: () => number;
}

/** The open streams and what feeds them while any is open. */
export class EventHub {
  readonly #streams = new Set<ServerResponse>();
  // Each stop function ends one listener, subscription or timer; run all when the last stream goes.
  #stops: Array<() => void> = [];
  // Bumped at every stop: a poll that was in flight then drops its answer.
  #generation = 0;
  #pending: Map<string, ApprovalRecord> | undefined;
  #inDoubtText: string | undefined;

  constructor(private readonly sources: EventSources) {}

  /** How many streams are open. */
  get size(): number {
    return this.#streams.size;
  }

  /** Starts a stream on `res`; it ends when the client goes or `closeAll` runs. */
  open(res: ServerResponse): void {
    // A client already gone would never be heard closing: nothing to start for it.
    if (res.destroyed || res.socket === null || res.socket.destroyed) return;
    res.statusCode = 200;
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Connection', 'keep-alive');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    res.write('retry: 3000\n\n');
    this.#streams.add(res);
    const gone = () => this.#drop(res);
    res.once('close', gone);
    if (this.#streams.size === 1) this.#start();
  }

  /** Ends every stream and stops every listener, subscription and timer. */
  closeAll(): void {
    for (const res of [...this.#streams]) {
      this.#streams.delete(res);
      res.end();
    }
    this.#stop();
  }

  /** Sends one event to every stream, redacted. */
  send(type: string, payload: unknown): void {
    if (this.#streams.size === 0) return;
    const text = `event: ${type}\ndata: ${JSON.stringify(this.sources.redact.redactValue(payload))}\n\n`;
    this.#write(text);
  }

  #write(text: string): void {
    for (const res of [...this.#streams]) {
      if (res.writableLength > maxBufferedBytes) {
        this.#streams.delete(res);
        res.end();
        continue;
      }
      res.write(text);
    }
    if (this.#streams.size === 0) this.#stop();
  }

  #drop(res: ServerResponse): void {
    if (!this.#streams.delete(res)) return;
    if (this.#streams.size === 0) this.#stop();
  }

  #start(): void {
    const generation = this.#generation;
    const { gate, desk, health, inDoubt } = this.sources;
    if (gate !== undefined) {
      this.#stops.push(gate.subscribe((decided) => this.send('approval.decided', withoutType(decided))));
    }
    if (desk?.canList === true)
      this.#every(approvalPollMs, generation, () => this.#pollApprovals(generation));
    if (health !== undefined) {
      this.#stops.push(health.subscribe((report) => this.send('health', report)));
    }
    if (inDoubt !== undefined) this.#every(inDoubtPollMs, generation, () => this.#pollInDoubt(generation));
    const ping = setInterval(() => this.#write(': ping\n\n'), pingMs);
    this.#stops.push(() => clearInterval(ping));
  }

  #stop(): void {
    this.#generation += 1;
    const stops = this.#stops;
    this.#stops = [];
    for (const stop of stops) {
      try {
        stop();
      } catch {
        // An unsubscribe that fails is the source's; the rest still stop.
      }
    }
    this.#pending = undefined;
    this.#inDoubtText = undefined;
  }

  // Runs `poll` now, then `everyMs` after each run ends (never two at once), until the hub stops.
  #every(everyMs: number, generation: number, poll: () => Promise<void>): void {
    let timer: NodeJS.Timeout | undefined;
    const run = () => {
      timer = undefined;
      poll()
        .catch(() => {
          // A failed read (a store down) is tried again at the next tick.
        })
        .finally(() => {
          if (generation === this.#generation) timer = setTimeout(run, everyMs);
        });
    };
    this.#stops.push(() => {
      if (timer !== undefined) clearTimeout(timer);
    });
    run();
  }

  // Lists every pending request and sends `approval.opened` for each one the last listing lacked
  // (the store publishes decisions, not openings: this is how a request paused on another process
  // appears). The first listing sets the baseline: the page lists what was pending already.
  async #pollApprovals(generation: number): Promise<void> {
    const desk = this.sources.desk as ApprovalDesk;
    const pending = await desk.pendingTokens();
    if (generation !== this.#generation) return;
    const before = this.#pending;
    this.#pending = pending;
    if (before === undefined) return;
    const now = this.sources.now();
    for (const [token, record] of pending) {
      if (!before.has(token)) this.send('approval.opened', approvalItemOf(record, now));
    }
  }

  async #pollInDoubt(generation: number): Promise<void> {
    const items = await (this.sources.inDoubt as InDoubtSource).list({ limit: 100 });
    if (generation !== this.#generation) return;
    const text = JSON.stringify(items);
    const before = this.#inDoubtText;
    this.#inDoubtText = text;
    if (before !== undefined && before !== text) this.send('in-doubt', { items });
  }
}

// The audit record as the contract's `approval.decided` data (the event's name says its type).
function withoutType(decided: { readonly type: string }): unknown {
  const { type: _type, ...record } = decided;
  return record;
}
