/**
 * The approvals pane: every pending request with its redacted args, and approve, deny (with a
 * reason) and edit-then-approve on each row. A decision made anywhere removes the row.
 * @module
 */

import { allApprovals, type Answer, type ConsoleApi } from './api.js';
import { button, duration, el, pretty } from './dom.js';
import { RowActions } from './row-actions.js';
import type { ApprovalDecided, ApprovalItem } from './wire.js';

interface Row {
  readonly item: ApprovalItem;
  readonly tr: HTMLTableRowElement;
  readonly actions: RowActions;
  readonly age: HTMLTableCellElement;
  readonly expires: HTMLTableCellElement;
  /** When it was opened, on this browser's clock. */
  readonly openedAt: number;
  /** When it expires, on this browser's clock. */
  readonly expiresAt: number;
}

const past = {
  approved: 'approved',
  edited: 'approved with edited args',
  denied: 'denied',
  expired: 'expired',
};

/** The approvals pane. */
export class ApprovalsPane {
  /** The pane's section. */
  readonly root: HTMLElement;
  readonly #rows = new Map<string, Row>();
  readonly #body: HTMLTableSectionElement;
  readonly #empty: HTMLTableRowElement;
  readonly #status: HTMLParagraphElement;
  readonly #decidedHere = new Set<string>();
  /** Tokens decided since the page opened: a list read before the decision must not bring them back. */
  readonly #gone = new Set<string>();

  /**
   * @param api the console's API
   * @param onCount hears the number of pending requests (for the tab's badge)
   */
  constructor(
    private readonly api: ConsoleApi,
    private readonly onCount: (count: number) => void,
  ) {
    this.#status = el('p', { className: 'pane-status', attrs: { role: 'status', 'aria-live': 'polite' } });
    this.#empty = el(
      'tr',
      { className: 'empty' },
      el('td', { attrs: { colspan: '8' } }, 'Nothing awaits approval.'),
    );
    this.#body = el('tbody', {}, this.#empty);
    const headings = [
      'Tool',
      'Args (redacted)',
      'Reason',
      'Call id',
      'Tenant',
      'Age',
      'Expires in',
      'Decision',
    ];
    this.root = el(
      'section',
      { className: 'pane', attrs: { 'aria-labelledby': 'approvals-title' } },
      el('h2', { attrs: { id: 'approvals-title' } }, 'Pending approvals'),
      this.#status,
      el(
        'table',
        { className: 'approvals', attrs: { 'aria-labelledby': 'approvals-title' } },
        el('thead', {}, el('tr', {}, ...headings.map((text) => el('th', { attrs: { scope: 'col' } }, text)))),
        this.#body,
      ),
    );
  }

  /** Reads every pending request again (at start and after the live stream reconnects). */
  async load(): Promise<void> {
    const answer = await allApprovals(this.api);
    if (!answer.ok) {
      this.#status.textContent = `Could not load the pending requests: ${answer.message}`;
      return;
    }
    const listed = new Set(answer.body.map((item) => item.token));
    for (const [token, row] of this.#rows)
      if (!listed.has(token) && !row.actions.engaged) this.#remove(token);
    for (const item of answer.body) this.opened(item);
  }

  /** Adds a request opened anywhere (the `approval.opened` event). */
  opened(item: ApprovalItem): void {
    if (this.#rows.has(item.token) || this.#gone.has(item.token)) return;
    const now = Date.now();
    // The server's clock may differ from this one: age and expiry are kept on this clock, placed
    // by the age the server measured.
    const openedAt =
      now - (item.ageMs ?? (item.createdAt === undefined ? 0 : Math.max(0, now - item.createdAt)));
    const skew = item.createdAt === undefined ? 0 : item.createdAt - openedAt;
    const tr = el('tr', { attrs: { 'data-token': item.token } });
    const actions = new RowActions(tr);
    const age = el('td', { className: 'num' });
    const expires = el('td', { className: 'num' });
    const row: Row = { item, tr, actions, age, expires, openedAt, expiresAt: item.expiresAt - skew };
    const label = `${item.tool} (call ${item.callId})`;
    actions.add(
      this.#labelled(
        button('Approve', () => void this.#approve(row), 'primary'),
        `Approve ${label}`,
      ),
    );
    actions.add(
      this.#labelled(
        button('Deny', () => this.#askDenial(row), 'danger'),
        `Deny ${label}`,
      ),
    );
    actions.add(
      this.#labelled(
        button('Edit', () => this.#askEdit(row)),
        `Edit the args of ${label}`,
      ),
    );
    tr.append(
      el('th', { attrs: { scope: 'row' } }, item.tool),
      el(
        'td',
        {},
        item.preview === undefined
          ? el('em', {}, 'not kept')
          : el('pre', { className: 'preview' }, pretty(item.preview)),
      ),
      el('td', {}, item.reason),
      el('td', {}, el('code', {}, item.callId)),
      el('td', {}, item.tenant ?? '—'),
      age,
      expires,
      actions.cell,
    );
    this.#rows.set(item.token, row);
    this.#paintClock(row, now);
    this.#empty.remove();
    this.#body.append(tr);
    this.onCount(this.#rows.size);
  }

  /** Removes a request decided anywhere (the `approval.decided` event). */
  decided(record: ApprovalDecided): void {
    this.#forget(record.token);
    const row = this.#rows.get(record.token);
    if (this.#decidedHere.delete(record.token) || row === undefined) return;
    this.#remove(record.token);
    const how = past[record.decision] ?? record.decision;
    this.#status.textContent = `${row.item.tool} (call ${row.item.callId}) was ${how} by ${record.by} via ${record.channel}.`;
  }

  /** Repaints every row's age and time to expiry. */
  tick(): void {
    const now = Date.now();
    for (const row of this.#rows.values()) this.#paintClock(row, now);
  }

  #paintClock(row: Row, now: number): void {
    row.age.textContent = duration(now - row.openedAt);
    const left = row.expiresAt - now;
    row.expires.textContent = left > 0 ? duration(left) : 'expired';
    row.tr.classList.toggle('expired', left <= 0);
  }

  #labelled(made: HTMLButtonElement, label: string): HTMLButtonElement {
    made.setAttribute('aria-label', label);
    return made;
  }

  #approve(row: Row, args?: unknown): Promise<void> {
    return row.actions.run(async () => {
      const answer = await this.api.approve(row.item.token, args);
      return this.#settle(row, answer, args === undefined ? 'Approved' : 'Approved with edited args');
    });
  }

  #askDenial(row: Row): void {
    row.actions.openForm({ label: 'Reason for denying', submit: 'Send denial' }, (reason) => {
      if (reason.trim() === '') {
        row.actions.showError('Give a reason: the agent is told it.');
        return;
      }
      void row.actions.run(async () =>
        this.#settle(row, await this.api.deny(row.item.token, reason.trim()), 'Denied'),
      );
    });
  }

  #askEdit(row: Row): void {
    const value = row.item.preview === undefined ? '{}' : pretty(row.item.preview);
    row.actions.openForm(
      { label: 'Edited args (JSON)', submit: 'Approve edited', value, multiline: true },
      (text) => {
        let args: unknown;
        try {
          args = JSON.parse(text);
        } catch (error) {
          row.actions.showError(`Not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
          return;
        }
        void this.#approve(row, args);
      },
    );
  }

  /** Removes the row on success; else answers the one line to show on it. */
  #settle(row: Row, answer: Answer<unknown>, done: string): string | undefined {
    if (answer.ok) {
      this.#decidedHere.add(row.item.token);
      this.#forget(row.item.token);
      this.#remove(row.item.token);
      this.#status.textContent = `${done}: ${row.item.tool} (call ${row.item.callId}).`;
      return undefined;
    }
    switch (answer.status) {
      case 404:
        return `Expired or unknown: ${answer.message}`;
      case 409:
        return `Already answered: ${answer.message}`;
      case 422:
        return `Rejected by the tool's schema: ${answer.message}`;
      default:
        return answer.message;
    }
  }

  #forget(token: string): void {
    this.#gone.add(token);
    // Bounded: a list is stale for a moment, so the oldest decisions need not be remembered.
    if (this.#gone.size > 1_000) this.#gone.delete(this.#gone.values().next().value as string);
  }

  #remove(token: string): void {
    const row = this.#rows.get(token);
    if (row === undefined) return;
    row.tr.remove();
    this.#rows.delete(token);
    if (this.#rows.size === 0) this.#body.append(this.#empty);
    this.onCount(this.#rows.size);
  }
}
