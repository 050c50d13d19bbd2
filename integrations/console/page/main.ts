/**
 * The console page: signs in through the shell's login form (or skips it when the session cookie
 * still holds), then shows the approvals, tool-health and in-doubt panes, kept live over
 * server-sent events. Built to dist/console-page/app.js by scripts/build-console.mjs.
 * @module
 */

import './app.css';
import { ConsoleApi } from './api.js';
import { ApprovalsPane } from './approvals.js';
import { button, el } from './dom.js';
import { HealthPane } from './health.js';
import { InDoubtPane } from './in-doubt.js';
import { LiveFeed } from './live.js';
import { LoginForm } from './login.js';
import { Tabs } from './tabs.js';
import type { SessionAnswer } from './wire.js';

/** The signed-in console: its panes, live feed and clock, torn down on sign-out. */
class SignedIn {
  readonly #feed: LiveFeed;
  readonly #clock: number;
  readonly #approvals: ApprovalsPane;
  readonly #health: HealthPane;
  readonly #inDoubt: InDoubtPane;

  constructor(
    private readonly api: ConsoleApi,
    private readonly app: HTMLElement,
    session: SessionAnswer,
    signOut: () => void,
  ) {
    const panes = session.panes ?? { approvals: true, health: true, inDoubt: true };
    const tabs = new Tabs();
    this.#approvals = new ApprovalsPane(api, (count) => tabs.count('approvals', count));
    this.#health = new HealthPane(api);
    this.#inDoubt = new InDoubtPane(api, (count) => tabs.count('in-doubt', count));
    this.#feed = new LiveFeed(api.eventsUrl, {
      opened: (item) => this.#approvals.opened(item),
      decided: (record) => this.#approvals.decided(record),
      health: (report) => this.#health.show(report),
      inDoubt: (items) => this.#inDoubt.show(items),
      resync: () => void this.#load(panes),
      refused: () => void this.#checkSession(),
    });
    tabs.add(
      'approvals',
      'Approvals',
      panes.approvals ? this.#approvals.root : this.#absent('approvals', 'an approval gate'),
    );
    tabs.add(
      'health',
      'Tool health',
      panes.health ? this.#health.root : this.#absent('tool health', 'a dispatcher'),
    );
    tabs.add(
      'in-doubt',
      'In doubt',
      panes.inDoubt ? this.#inDoubt.root : this.#absent('calls in doubt', 'a receipt store'),
    );
    const header = el(
      'header',
      { className: 'top' },
      // The shell has the page's one heading of the first rank; a shell without one gets it here.
      document.querySelector('body > header h1') === null
        ? el('h1', {}, 'Control room')
        : el('span', { className: 'title' }, 'Control room'),
      el('span', { className: 'who' }, `Signed in as ${session.name}`),
      this.#feed.indicator,
      button('Sign out', signOut),
    );
    app.replaceChildren(header, tabs.list, ...tabs.panels);
    tabs.select('approvals');
    this.#clock = window.setInterval(() => this.#approvals.tick(), 1000);
    // The stream first, then the lists: a request opened in between arrives as an event, and
    // the panes drop duplicates.
    this.#feed.start();
    void this.#load(panes);
  }

  /** Stops the feed and the clock and empties the page. */
  close(): void {
    this.#feed.stop();
    window.clearInterval(this.#clock);
    this.app.replaceChildren();
  }

  async #load(panes: NonNullable<SessionAnswer['panes']>): Promise<void> {
    await Promise.all([
      panes.approvals ? this.#approvals.load() : undefined,
      panes.health ? this.#health.load() : undefined,
      panes.inDoubt ? this.#inDoubt.load() : undefined,
    ]);
  }

  async #checkSession(): Promise<void> {
    // A 401 here signs the page out (ConsoleApi's listener); anything else leaves the retry to the feed.
    await this.api.session();
  }

  #absent(what: string, needs: string): HTMLElement {
    return el(
      'section',
      { className: 'pane' },
      el(
        'p',
        { className: 'pane-status' },
        `This console shows no ${what}: it was started without ${needs}.`,
      ),
    );
  }
}

async function boot(): Promise<void> {
  // The script is served from <base>/assets/app.js, so the base path is two steps up.
  const base = new URL(/* @vite-ignore */ '..', import.meta.url).pathname.replace(/\/$/, '');
  const api = new ConsoleApi(base);
  const app =
    document.getElementById('app') ?? document.body.appendChild(el('main', { attrs: { id: 'app' } }));
  const login = new LoginForm(app);
  let current: SignedIn | undefined;
  const enter = (session: SessionAnswer) => {
    login.hide();
    current?.close();
    current = new SignedIn(api, app, session, () => void api.logout().then(leave));
  };
  const leave = () => {
    current?.close();
    current = undefined;
    login.show();
  };
  api.onSignedOut(() => {
    if (current !== undefined) {
      leave();
      login.say('The session ended: sign in again.');
    }
  });
  login.onSubmit(async (token, name) => {
    const answer = await api.login(token, name);
    if (!answer.ok) {
      if (answer.status === 401) return 'That token is not right.';
      if (answer.status === 429) return `Too many attempts: try again in ${answer.retryAfter ?? 60} s.`;
      return answer.message;
    }
    const session = await api.session();
    enter(session.ok ? session.body : answer.body);
    return undefined;
  });
  const session = await api.session();
  if (session.ok) enter(session.body);
  else login.show();
}

void boot();
