/**
 * The tool-health pane: per tool, rates, latency quantiles, the outcome mix, retries, the breaker,
 * rate-limit waits and refusals and cost-budget burn, repainted on each `health` event.
 * @module
 */

import type { ConsoleApi } from './api.js';
import { el } from './dom.js';
import type { HealthAnswer, HealthRow } from './wire.js';

const headings = [
  'Tool',
  'Calls/s',
  'Calls',
  'p50',
  'p95',
  'p99',
  'Outcomes',
  'Retries',
  'Breaker',
  'Rate limit',
  'Budget burn',
  'Autopilot',
];

const ms = (value: number | undefined) => (value === undefined ? '—' : `${Math.round(value)} ms`);

/** The tool-health pane. */
export class HealthPane {
  /** The pane's section. */
  readonly root: HTMLElement;
  readonly #body: HTMLTableSectionElement;
  readonly #summary: HTMLParagraphElement;

  /** @param api the console's API */
  constructor(private readonly api: ConsoleApi) {
    this.#summary = el('p', { className: 'pane-status' });
    this.#body = el('tbody');
    this.root = el(
      'section',
      { className: 'pane', attrs: { 'aria-labelledby': 'health-title' } },
      el('h2', { attrs: { id: 'health-title' } }, 'Tool health'),
      this.#summary,
      el(
        'table',
        { className: 'health', attrs: { 'aria-labelledby': 'health-title' } },
        el('thead', {}, el('tr', {}, ...headings.map((text) => el('th', { attrs: { scope: 'col' } }, text)))),
        this.#body,
      ),
    );
  }

  /** Reads the report now. */
  async load(): Promise<void> {
    const answer = await this.api.health();
    if (answer.ok) this.show(answer.body);
    else this.#summary.textContent = `Could not load tool health: ${answer.message}`;
  }

  /** Paints a report (the `health` event, about once a second). */
  show(report: HealthAnswer): void {
    const processes = report.processes === 1 ? '1 process' : `${report.processes} processes`;
    this.#summary.textContent = `Last ${Math.round(report.windowMs / 1000)} s across ${processes}, as of ${new Date(report.at).toLocaleTimeString()}.`;
    const rows = [...report.tools].sort((a, b) => a.tool.localeCompare(b.tool)).map((row) => this.#row(row));
    if (rows.length === 0) {
      rows.push(
        el(
          'tr',
          { className: 'empty' },
          el('td', { attrs: { colspan: String(headings.length) } }, 'No calls in the window.'),
        ),
      );
    }
    this.#body.replaceChildren(...rows);
  }

  #row(row: HealthRow): HTMLTableRowElement {
    return el(
      'tr',
      { attrs: { 'data-tool': row.tool } },
      el('th', { attrs: { scope: 'row' } }, row.tool),
      el('td', { className: 'num' }, row.callsPerSecond.toFixed(2)),
      el('td', { className: 'num' }, String(row.calls)),
      el('td', { className: 'num' }, ms(row.p50)),
      el('td', { className: 'num' }, ms(row.p95)),
      el('td', { className: 'num' }, ms(row.p99)),
      el('td', {}, this.#outcomes(row.outcomes)),
      el('td', { className: 'num' }, String(row.retries)),
      el(
        'td',
        {},
        row.breaker === undefined
          ? '—'
          : el('span', { className: `badge breaker-${row.breaker}` }, row.breaker.replace('_', '-')),
      ),
      el('td', {}, this.#rateLimit(row.rateLimit)),
      el('td', {}, this.#budget(row.budget)),
      el('td', {}, this.#autopilot(row.autopilot)),
    );
  }

  #outcomes(outcomes: HealthRow['outcomes']): HTMLElement | string {
    const kinds = Object.entries(outcomes).filter(([, count]) => count > 0);
    if (kinds.length === 0) return '—';
    kinds.sort(([a, x], [b, y]) => (a === 'ok' ? -1 : b === 'ok' ? 1 : y - x));
    return el(
      'ul',
      { className: 'mix' },
      ...kinds.map(([kind, count]) =>
        el('li', { className: kind === 'ok' ? 'ok' : 'failed' }, `${kind} ${count}`),
      ),
    );
  }

  #rateLimit(rate: HealthRow['rateLimit']): string {
    if (rate === undefined) return '—';
    const fill = rate.fill === undefined ? '' : `, ${Math.round(rate.fill * 100)}% full`;
    return `${rate.waits} waits, ${rate.refusals} refused${fill}`;
  }

  #budget(budget: HealthRow['budget']): HTMLElement | string {
    const tenants = Object.entries(budget ?? {});
    if (tenants.length === 0) return '—';
    return el(
      'ul',
      { className: 'mix' },
      ...tenants.map(([tenant, burn]) =>
        el(
          'li',
          {},
          `${tenant === '' ? '(no tenant)' : tenant}: ${burn.spent} spent${burn.refusals > 0 ? `, ${burn.refusals} refused` : ''}`,
        ),
      ),
    );
  }

  #autopilot(autopilot: HealthRow['autopilot']): string {
    if (autopilot === undefined) return '—';
    const parts: string[] = [];
    if (autopilot.timeoutMs !== undefined) parts.push(`timeout ${Math.round(autopilot.timeoutMs)} ms`);
    if (autopilot.source !== undefined) parts.push(`from ${autopilot.source}`);
    if (autopilot.hedgeAfterMs !== undefined)
      parts.push(`hedge after ${Math.round(autopilot.hedgeAfterMs)} ms`);
    if (autopilot.hedges !== undefined) parts.push(`${autopilot.hedges} hedges`);
    if (autopilot.concurrency !== undefined) parts.push(`${autopilot.concurrency} slots`);
    return parts.length === 0 ? '—' : parts.join(', ');
  }
}
