/**
 * The login form: the shell's own (so it exists before the script runs), taken over so the token
 * goes out once as JSON and is then wiped from the field; one is built if the shell has none.
 * @module
 */

import { el } from './dom.js';

/** Answers the line to show under the form, or `undefined` when signed in. */
export type LoginHandler = (token: string, name: string) => Promise<string | undefined>;

/** The shell's login form, driven by the page. */
export class LoginForm {
  readonly #form: HTMLFormElement;
  readonly #token: HTMLInputElement;
  readonly #name: HTMLInputElement | undefined;
  readonly #message: HTMLElement;
  /** What hides with the form: its `#login` container when the shell has one (notices included). */
  readonly #box: HTMLElement;

  /** @param app the page's `<main id="app">`, where a form is built if the shell has none */
  constructor(app: HTMLElement) {
    const found =
      document.querySelector<HTMLFormElement>('#login form, form#login') ??
      document.querySelector<HTMLFormElement>('form');
    const token = found?.elements.namedItem('token');
    if (found !== null && token instanceof HTMLInputElement) {
      this.#form = found;
      this.#token = token;
      const name = found.elements.namedItem('name');
      this.#name = name instanceof HTMLInputElement ? name : undefined;
    } else {
      this.#token = el('input', {
        attrs: { name: 'token', type: 'password', autocomplete: 'off', required: '' },
      });
      this.#name = el('input', { attrs: { name: 'name', type: 'text', autocomplete: 'username' } });
      this.#form = el(
        'form',
        { attrs: { id: 'login', 'aria-label': 'Sign in' } },
        el('label', {}, el('span', {}, 'Console token'), this.#token),
        el('label', {}, el('span', {}, 'Your name'), this.#name),
        el('button', { attrs: { type: 'submit' } }, 'Sign in'),
      );
      app.before(this.#form);
    }
    this.#box = this.#form.closest<HTMLElement>('#login, [data-login]') ?? this.#form;
    this.#message =
      this.#form.querySelector<HTMLElement>('[data-login-error]') ??
      this.#form.appendChild(el('p', { className: 'login-error', attrs: { role: 'alert' } }));
  }

  /** Takes over the form's submit. */
  onSubmit(handler: LoginHandler): void {
    this.#form.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.#submit(handler);
    });
  }

  /** Shows the form (signed out). */
  show(): void {
    this.#box.hidden = false;
    this.#token.focus();
  }

  /** Hides the form and clears its message (signed in). */
  hide(): void {
    this.#box.hidden = true;
    this.say('');
  }

  /** Shows a line under the form. */
  say(message: string): void {
    this.#message.textContent = message;
  }

  async #submit(handler: LoginHandler): Promise<void> {
    // The shell's own notice (from a submit without JavaScript) is stale once the page answers.
    for (const notice of this.#box.querySelectorAll('.td-login-error')) notice.remove();
    const submit = this.#form.querySelector<HTMLButtonElement>('button[type=submit], button:not([type])');
    if (submit?.disabled) return;
    if (submit) submit.disabled = true;
    const token = this.#token.value;
    // The token leaves the page once: the field is wiped whatever the answer.
    this.#token.value = '';
    try {
      this.say((await handler(token, this.#name?.value.trim() ?? '')) ?? '');
    } finally {
      if (submit) submit.disabled = false;
    }
  }
}
