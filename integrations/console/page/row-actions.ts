/**
 * What a table row with buttons shares: one request in flight at a time (every button of the row
 * disabled until it ends, so a double click sends once), an inline form for a reason or a note, and
 * a one-line error shown on the row.
 * @module
 */

import { el } from './dom.js';

/** The actions cell of one row: buttons, an optional inline form, the row's error line. */
export class RowActions {
  /** The `<td>` to put in the row. */
  readonly cell: HTMLTableCellElement;
  readonly #buttons: HTMLDivElement;
  readonly #form: HTMLDivElement;
  readonly #error: HTMLParagraphElement;
  #busy = false;

  /** @param row the row whose buttons are disabled while a request is in flight */
  constructor(private readonly row: HTMLTableRowElement) {
    this.#buttons = el('div', { className: 'buttons' });
    this.#form = el('div', { className: 'inline-form' });
    this.#form.hidden = true;
    this.#error = el('p', { className: 'row-error', attrs: { role: 'alert' } });
    this.#error.hidden = true;
    this.cell = el('td', { className: 'actions' }, this.#buttons, this.#form, this.#error);
  }

  /** Whether a request is in flight or a form is open (a live update then leaves the row alone). */
  get engaged(): boolean {
    return this.#busy || !this.#form.hidden;
  }

  /** Adds a button to the row. */
  add(button: HTMLButtonElement): void {
    this.#buttons.append(button);
  }

  /**
   * Runs one request for the row: ignored while another is in flight; every button of the row
   * disabled until it ends; `work` answers the error line to show, or `undefined` for none.
   */
  async run(work: () => Promise<string | undefined>): Promise<void> {
    if (this.#busy) return;
    this.#busy = true;
    this.#setDisabled(true);
    this.showError(undefined);
    try {
      this.showError(await work());
    } catch (error) {
      this.showError(error instanceof Error ? error.message : String(error));
    } finally {
      this.#busy = false;
      this.#setDisabled(false);
    }
  }

  /** Shows a line under the buttons, or hides it for `undefined`. */
  showError(message: string | undefined): void {
    this.#error.textContent = message ?? '';
    this.#error.hidden = message === undefined;
  }

  /**
   * Opens an inline form (a labelled field and a submit button) in place of nothing; submitting
   * calls `onSubmit` with the field's value, and Cancel closes it.
   */
  openForm(
    form: { label: string; submit: string; value?: string; multiline?: boolean },
    onSubmit: (value: string) => void,
  ): void {
    const field = form.multiline
      ? el('textarea', { attrs: { rows: '8', spellcheck: 'false' } })
      : el('input', { attrs: { type: 'text', autocomplete: 'off' } });
    field.value = form.value ?? '';
    const cancel = el('button', { attrs: { type: 'button' } }, 'Cancel');
    const made = el(
      'form',
      {},
      el('label', {}, el('span', {}, form.label), field),
      el(
        'div',
        { className: 'buttons' },
        el('button', { className: 'primary', attrs: { type: 'submit' } }, form.submit),
        cancel,
      ),
    );
    made.addEventListener('submit', (event) => {
      event.preventDefault();
      onSubmit(field.value);
    });
    cancel.addEventListener('click', () => this.closeForm());
    this.#form.replaceChildren(made);
    this.#form.hidden = false;
    field.focus();
  }

  /** Closes the inline form. */
  closeForm(): void {
    this.#form.replaceChildren();
    this.#form.hidden = true;
  }

  #setDisabled(disabled: boolean): void {
    this.row.setAttribute('aria-busy', String(disabled));
    for (const control of this.row.querySelectorAll<
      HTMLButtonElement | HTMLInputElement | HTMLTextAreaElement
    >('button, input, textarea')) {
      control.disabled = disabled;
    }
  }
}
