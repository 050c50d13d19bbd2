/**
 * The live feed: one `EventSource` on `/console/api/events` (the session cookie authenticates it),
 * its events handed to the panes, and an indicator that says whether updates are flowing.
 * @module
 */

import { el } from './dom.js';
import type { ApprovalDecided, ApprovalItem, HealthAnswer, InDoubtRow } from './wire.js';

/** What the feed hands its events to. */
export interface LiveHandlers {
  /** `approval.opened`. */
  readonly opened: (item: ApprovalItem) => void;
  /** `approval.decided`. */
  readonly decided: (record: ApprovalDecided) => void;
  /** `health`. */
  readonly health: (report: HealthAnswer) => void;
  /** `in-doubt`. */
  readonly inDoubt: (items: readonly InDoubtRow[]) => void;
  /** The stream (re)opened: events may have been missed, so the panes read everything again. */
  readonly resync: () => void;
  /** The stream was refused: the session may be gone. */
  readonly refused: () => void;
}

/** The live feed and its indicator. */
export class LiveFeed {
  /** The indicator, for the page's header. */
  readonly indicator: HTMLSpanElement;
  #source: EventSource | undefined;
  #retry: number | undefined;
  #delay = 1000;
  #opened = false;

  /**
   * @param url the event stream's URL
   * @param handlers where the events go
   */
  constructor(
    private readonly url: string,
    private readonly handlers: LiveHandlers,
  ) {
    this.indicator = el('span', { className: 'live', attrs: { role: 'status', 'aria-live': 'polite' } });
    this.#paint('offline', 'Not connected');
  }

  /** Opens the stream. */
  start(): void {
    this.stop();
    this.#paint('connecting', 'Connecting…');
    const source = new EventSource(this.url);
    this.#source = source;
    source.addEventListener('open', () => {
      this.#delay = 1000;
      this.#paint('live', 'Live');
      // The panes load their lists as the stream first opens; a later open may have missed events.
      if (this.#opened) this.handlers.resync();
      this.#opened = true;
    });
    source.addEventListener('error', () => this.#lost(source));
    this.#on(source, 'approval.opened', (data) => this.handlers.opened(data as ApprovalItem));
    this.#on(source, 'approval.decided', (data) => this.handlers.decided(data as ApprovalDecided));
    this.#on(source, 'health', (data) => this.handlers.health(data as HealthAnswer));
    this.#on(source, 'in-doubt', (data) =>
      this.handlers.inDoubt((data as { items: readonly InDoubtRow[] }).items),
    );
  }

  /** Closes the stream and any pending reconnect. */
  stop(): void {
    this.#source?.close();
    this.#source = undefined;
    if (this.#retry !== undefined) window.clearTimeout(this.#retry);
    this.#retry = undefined;
    this.#paint('offline', 'Not connected');
  }

  #on(source: EventSource, type: string, handle: (data: unknown) => void): void {
    source.addEventListener(type, (event) => {
      let data: unknown;
      try {
        data = JSON.parse((event as MessageEvent<string>).data);
      } catch {
        return;
      }
      handle(data);
    });
  }

  #lost(source: EventSource): void {
    if (source !== this.#source) return;
    this.#paint('reconnecting', 'Reconnecting…');
    // The browser retries a dropped stream itself; a refused one (a 401, a 5xx) is closed for
    // good, so it is retried here, slower each time, after checking the session still holds.
    if (source.readyState !== EventSource.CLOSED) return;
    this.#source = undefined;
    this.handlers.refused();
    this.#retry = window.setTimeout(() => {
      this.#retry = undefined;
      this.start();
    }, this.#delay);
    this.#delay = Math.min(this.#delay * 2, 30_000);
  }

  #paint(state: string, text: string): void {
    this.indicator.dataset['state'] = state;
    this.indicator.textContent = text;
  }
}
