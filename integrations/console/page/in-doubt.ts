/**
 * The in-doubt pane: receipts whose outcome was lost, with their window and evidence; "Reconcile
 * now" for a tool with `reconcile`, else "Mark resolved" with a note.
 * @module
 */

import type { Answer, ConsoleApi } from './api.js';
import { button, compact, duration, el, pretty } from './dom.js';
import { RowActions } from './row-actions.js';
import type { InDoubtOutcome, InDoubtRow } from './wire.js';

interface Row {
  readonly item: InDoubtRow;
  readonly tr: HTMLTableRowElement;
  readonly actions: RowActions;
}

const headings = ['Key', 'Tool', 'Window', 'Evidence', 'Started', 'Attempts', 'Args (redacted)', 'Action'];

/** The in-doubt pane. */
export class InDoubtPane {
  /** The pane's section. */
  readonly root: HTMLElement;
  readonly #rows = new Map<string, Row>();
  readonly #body: HTMLTableSectionElement;
  readonly #status: HTMLParagraphElement;

  /**
   * @param api the console's API
   * @param onCount hears the number of receipts in doubt (for the tab's badge)
   */
  constructor(
    private readonly api: ConsoleApi,
    private readonly onCount: (count: number) => void,
  ) {
    this.#status = el('p', { className: 'pane-status', attrs: { role: 'status', 'aria-live': 'polite' } });
    this.#body = el('tbody');
    this.root = el(
      'section',
      { className: 'pane', attrs: { 'aria-labelledby': 'in-doubt-title' } },
      el('h2', { attrs: { id: 'in-doubt-title' } }, 'Calls in doubt'),
      this.#status,
      el(
        'table',
        { className: 'in-doubt', attrs: { 'aria-labelledby': 'in-doubt-title' } },
        el('thead', {}, el('tr', {}, ...headings.map((text) => el('th', { attrs: { scope: 'col' } }, text)))),
        this.#body,
      ),
    );
    this.show([]);
  }

  /** Reads the receipts in doubt now. */
  async load(): Promise<void> {
    const answer = await this.api.inDoubt();
    if (answer.ok) this.show(answer.body.items);
    else this.#status.textContent = `Could not load the calls in doubt: ${answer.message}`;
  }

  /** Shows the list (the `in-doubt` event): rows with a request in flight or a form open stay as they are. */
  show(items: readonly InDoubtRow[]): void {
    const listed = new Set(items.map((item) => item.key));
    for (const [key, row] of this.#rows) if (!listed.has(key) && !row.actions.engaged) this.#rows.delete(key);
    for (const item of items) {
      const kept = this.#rows.get(item.key);
      if (kept === undefined || !kept.actions.engaged) this.#rows.set(item.key, this.#row(item));
    }
    const rows = [...this.#rows.values()].map((row) => row.tr);
    if (rows.length === 0) {
      rows.push(
        el(
          'tr',
          { className: 'empty' },
          el('td', { attrs: { colspan: String(headings.length) } }, 'No call is in doubt.'),
        ),
      );
    }
    this.#body.replaceChildren(...rows);
    this.onCount(this.#rows.size);
  }

  #row(item: InDoubtRow): Row {
    const tr = el('tr', { attrs: { 'data-key': item.key } });
    const actions = new RowActions(tr);
    const row: Row = { item, tr, actions };
    if (item.canReconcile) {
      const reconcile = button('Reconcile now', () => void this.#reconcile(row), 'primary');
      reconcile.setAttribute('aria-label', `Reconcile ${item.tool} (key ${item.key}) now`);
      actions.add(reconcile);
    } else {
      const resolve = button('Mark resolved', () => this.#askNote(row));
      resolve.setAttribute('aria-label', `Mark ${item.tool} (key ${item.key}) resolved`);
      actions.add(resolve);
    }
    const started = new Date(item.startedAt);
    tr.append(
      el('th', { attrs: { scope: 'row' } }, el('code', {}, item.key)),
      el('td', {}, item.tool),
      el('td', {}, item.window ?? '—'),
      el('td', {}, item.evidence === undefined ? '—' : el('code', {}, compact(item.evidence))),
      el(
        'td',
        { attrs: { title: started.toISOString() } },
        `${started.toLocaleTimeString()} (${duration(Date.now() - item.startedAt)} ago)`,
      ),
      el('td', { className: 'num' }, String(item.attempts)),
      el(
        'td',
        {},
        item.preview === undefined
          ? el('em', {}, 'not kept')
          : el('pre', { className: 'preview' }, pretty(item.preview)),
      ),
      actions.cell,
    );
    return row;
  }

  #reconcile(row: Row): Promise<void> {
    return row.actions.run(async () =>
      this.#settle(row, await this.api.reconcile(row.item.key), 'Reconciled'),
    );
  }

  #askNote(row: Row): void {
    row.actions.openForm({ label: 'Note (what you checked)', submit: 'Resolve' }, (note) => {
      if (note.trim() === '') {
        row.actions.showError('Write a note: it is kept on the receipt.');
        return;
      }
      void row.actions.run(async () =>
        this.#settle(row, await this.api.resolve(row.item.key, note.trim()), 'Resolved'),
      );
    });
  }

  #settle(row: Row, answer: Answer<InDoubtOutcome>, done: string): string | undefined {
    if (!answer.ok) return answer.message;
    const { verdict, status, evidence } = answer.body;
    const found = evidence === undefined ? '' : ` Evidence: ${compact(evidence)}.`;
    if (status === 'in_doubt') return `Still unknown (${verdict}).${found}`;
    row.actions.closeForm();
    this.#rows.delete(row.item.key);
    row.tr.remove();
    this.onCount(this.#rows.size);
    if (this.#rows.size === 0) this.show([]);
    this.#status.textContent = `${done} ${row.item.tool} (key ${row.item.key}): ${verdict}, now ${status}.${found}`;
    return undefined;
  }
}
