/**
 * The page's client for the console's JSON API: same-origin fetches carrying the session cookie,
 * and on every POST the CSRF token, which lives only in this object's memory (never in storage or
 * the URL, so a reload asks the server for it again).
 * @module
 */

import type {
  ApprovalItem,
  ApprovalList,
  HealthAnswer,
  InDoubtOutcome,
  InDoubtRow,
  SessionAnswer,
} from './wire.js';

/** An answer: the body on a 2xx, else the status and the API's one line. */
export type Answer<T> =
  | { readonly ok: true; readonly body: T }
  | {
      readonly ok: false;
      readonly status: number;
      readonly error: string;
      readonly message: string;
      readonly retryAfter?: number;
    };

/** Called when the server says the session is gone (a 401 on anything but the login). */
export type SignedOutListener = () => void;

/** The console's API, under one base path (`/console` unless the server mounts it elsewhere). */
export class ConsoleApi {
  #csrf: string | undefined;
  #onSignedOut: SignedOutListener = () => {};

  /** @param base the console's base path, without a trailing slash */
  constructor(readonly base: string) {}

  /** Hears the session ending (a 401), so the page can show the login form again. */
  onSignedOut(listener: SignedOutListener): void {
    this.#onSignedOut = listener;
  }

  /** Signs in with the console token; the token is sent once and kept nowhere. */
  async login(token: string, name: string): Promise<Answer<SessionAnswer>> {
    const answer = await this.#send<SessionAnswer>(
      'POST',
      '/login',
      name === '' ? { token } : { token, name },
      false,
    );
    if (answer.ok) this.#csrf = answer.body.csrf;
    return answer;
  }

  /** The live session, if the cookie still holds one (a reload skips the login). */
  async session(): Promise<Answer<SessionAnswer>> {
    const answer = await this.#send<SessionAnswer>('GET', '/api/session', undefined, false);
    if (answer.ok) this.#csrf = answer.body.csrf;
    return answer;
  }

  /** Ends the session on the server and forgets the CSRF token. */
  async logout(): Promise<void> {
    await this.#send<unknown>('POST', '/logout', {}, false);
    this.#csrf = undefined;
  }

  /** One page of pending requests. */
  approvals(cursor?: string): Promise<Answer<ApprovalList>> {
    const query = new URLSearchParams({ limit: '500' });
    if (cursor !== undefined) query.set('cursor', cursor);
    return this.#send('GET', `/api/approvals?${query}`);
  }

  /** Approves a request as asked, or with edited `args`. */
  approve(token: string, args?: unknown): Promise<Answer<{ decision: string }>> {
    return this.#send(
      'POST',
      `/api/approvals/${encodeURIComponent(token)}/approve`,
      args === undefined ? {} : { args },
    );
  }

  /** Denies a request with a reason. */
  deny(token: string, reason: string): Promise<Answer<{ decision: string }>> {
    return this.#send('POST', `/api/approvals/${encodeURIComponent(token)}/deny`, { reason });
  }

  /** The tool-health report now. */
  health(): Promise<Answer<HealthAnswer>> {
    return this.#send('GET', '/api/health');
  }

  /** The receipts in doubt. */
  inDoubt(): Promise<Answer<{ items: readonly InDoubtRow[] }>> {
    return this.#send('GET', '/api/in-doubt');
  }

  /** Runs the tool's `reconcile` for a receipt. */
  reconcile(key: string): Promise<Answer<InDoubtOutcome>> {
    return this.#send('POST', `/api/in-doubt/${encodeURIComponent(key)}/reconcile`, {});
  }

  /** Marks a receipt resolved with a note. */
  resolve(key: string, note: string): Promise<Answer<InDoubtOutcome>> {
    return this.#send('POST', `/api/in-doubt/${encodeURIComponent(key)}/resolve`, { note });
  }

  /** The URL of the event stream. */
  get eventsUrl(): string {
    return `${this.base}/api/events`;
  }

  async #send<T>(method: 'GET' | 'POST', path: string, body?: unknown, signsOut = true): Promise<Answer<T>> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (method === 'POST') {
      headers['content-type'] = 'application/json';
      if (this.#csrf !== undefined) headers['x-csrf-token'] = this.#csrf;
    }
    let response: Response;
    try {
      response = await fetch(`${this.base}${path}`, {
        method,
        headers,
        credentials: 'same-origin',
        cache: 'no-store',
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch {
      return { ok: false, status: 0, error: 'network', message: 'the console cannot be reached' };
    }
    const parsed = await response.json().catch(() => undefined);
    if (response.ok) return { ok: true, body: parsed as T };
    if (response.status === 401 && signsOut) {
      this.#csrf = undefined;
      this.#onSignedOut();
    }
    const problem = (parsed ?? {}) as { error?: unknown; message?: unknown };
    const retryAfter = Number(response.headers.get('retry-after'));
    return {
      ok: false,
      status: response.status,
      error: typeof problem.error === 'string' ? problem.error : 'http',
      message:
        typeof problem.message === 'string' ? problem.message : `the server answered ${response.status}`,
      ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfter } : {}),
    };
  }
}

/** Reads every page of pending requests (up to 10 pages). */
export async function allApprovals(api: ConsoleApi): Promise<Answer<ApprovalItem[]>> {
  const items: ApprovalItem[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 10; page++) {
    const answer = await api.approvals(cursor);
    if (!answer.ok) return answer;
    items.push(...answer.body.items);
    cursor = answer.body.cursor;
    if (cursor === undefined) break;
  }
  return { ok: true, body: items };
}
