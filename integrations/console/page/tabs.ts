/**
 * The three panes as tabs (the WAI-ARIA tabs pattern: arrow keys move between them), each tab
 * with a count badge where the pane has one.
 * @module
 */

import { el } from './dom.js';

interface Tab {
  readonly tab: HTMLButtonElement;
  readonly badge: HTMLSpanElement;
  readonly panel: HTMLDivElement;
}

/** The tab list and its panels. */
export class Tabs {
  /** The tab list, for the page. */
  readonly list: HTMLDivElement;
  /** The panels, in order. */
  readonly panels: HTMLDivElement[] = [];
  readonly #tabs = new Map<string, Tab>();

  constructor() {
    this.list = el('div', { className: 'tabs', attrs: { role: 'tablist', 'aria-label': 'Panes' } });
    this.list.addEventListener('keydown', (event) => this.#move(event));
  }

  /** Adds a tab showing `content`. */
  add(id: string, label: string, content: HTMLElement): void {
    const badge = el('span', { className: 'count' });
    badge.hidden = true;
    const tab = el(
      'button',
      { attrs: { type: 'button', role: 'tab', id: `tab-${id}`, 'aria-controls': `panel-${id}` } },
      label,
      badge,
    );
    const panel = el(
      'div',
      { attrs: { role: 'tabpanel', id: `panel-${id}`, 'aria-labelledby': `tab-${id}` } },
      content,
    );
    tab.addEventListener('click', () => this.select(id));
    this.list.append(tab);
    this.panels.push(panel);
    this.#tabs.set(id, { tab, badge, panel });
  }

  /** Shows one tab's panel. */
  select(id: string): void {
    for (const [key, { tab, panel }] of this.#tabs) {
      const chosen = key === id;
      tab.setAttribute('aria-selected', String(chosen));
      tab.tabIndex = chosen ? 0 : -1;
      panel.hidden = !chosen;
    }
  }

  /** Sets a tab's count badge (hidden at zero). */
  count(id: string, count: number): void {
    const found = this.#tabs.get(id);
    if (found === undefined) return;
    found.badge.textContent = String(count);
    found.badge.hidden = count === 0;
  }

  #move(event: KeyboardEvent): void {
    if (event.key !== 'ArrowRight' && event.key !== 'ArrowLeft') return;
    const ids = [...this.#tabs.keys()];
    const at = ids.findIndex((id) => this.#tabs.get(id)?.tab.getAttribute('aria-selected') === 'true');
    const next = ids[(at + (event.key === 'ArrowRight' ? 1 : ids.length - 1)) % ids.length];
    if (next === undefined) return;
    this.select(next);
    this.#tabs.get(next)?.tab.focus();
  }
}
