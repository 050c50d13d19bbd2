/**
 * Who may use the console: the bearer token (compared in constant time), the sessions a login
 * opens (a random id in an HttpOnly cookie, a CSRF token beside it, an idle expiry), and the
 * limit on failed logins per address.
 * @module
 */

import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { HttpProblem, ownOrigin } from './http.js';

/** The session cookie's name. */
export const cookieName = 'td_console';

/** How long a session lives without a request, in ms. */
export const sessionIdleMs = 12 * 60 * 60 * 1000;

/** The most sessions kept; the least recently used goes first beyond it. */
export const maxSessions = 1_000;

/** Failed logins allowed from one address in a window before it is refused. */
export const maxFailedLogins = 5;

/** The window failed logins are counted over, in ms. */
export const loginWindowMs = 60_000;

// The most addresses whose failures are remembered; the oldest goes first beyond it.
const maxTrackedAddresses = 10_000;

/** A logged-in person. */
export interface Session {
  /** The name they gave at login, for the audit log. */
  readonly name: string;
  /** The token a POST with the cookie must carry in `X-CSRF-Token`. */
  readonly csrf: string;
  /** When they last made a request, in ms. */
  lastSeen: number;
}

/** Who a request is: a script with the bearer token, or a person with a session. */
export type Caller =
  | { readonly kind: 'bearer'; readonly name: string }
  | { readonly kind: 'session'; readonly name: string; readonly session: Session; readonly id: string };

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/** Compares two secrets in constant time: equal-length digests through `timingSafeEqual`. */
export function sameSecret(given: string, expected: Buffer): boolean {
  return timingSafeEqual(digest(given), expected);
}

/** The console's keys: the token, the sessions and the count of failed logins. */
export class Doorkeeper {
  readonly #token: Buffer;
  // Keyed by the digest of the session id, so a lookup's timing tells nothing about the id.
  readonly #sessions = new Map<string, Session>();
  readonly #failures = new Map<string, number[]>();

  constructor(
    token: string,
    private readonly now: () => number,
    private readonly random: (bytes: number) => Uint8Array,
  ) {
    this.#token = digest(token);
  }

  /** Whether `given` is the console's token. */
  isToken(given: unknown): boolean {
    return typeof given === 'string' && sameSecret(given, this.#token);
  }

  /** A fresh random id or token: 32 bytes, base64url. */
  fresh(): string {
    const bytes = this.random(32);
    if (!(bytes instanceof Uint8Array) || bytes.length < 32) {
      throw new TypeError('random(bytes) must return a Uint8Array of that many bytes');
    }
    return Buffer.from(bytes).toString('base64url');
  }

  /**
   * Refuses a login from `address` while it has failed too often in the window.
   * @throws HttpProblem 429 with `Retry-After`.
   */
  checkLoginAllowed(address: string): void {
    const recent = this.#recentFailures(address);
    if (recent.length < maxFailedLogins) return;
    const waitMs = (recent[0] as number) + loginWindowMs - this.now();
    const seconds = Math.max(1, Math.ceil(waitMs / 1000));
    throw new HttpProblem(429, 'too_many_attempts', `too many failed logins; try again in ${seconds} s`, {
      'Retry-After': String(seconds),
    });
  }

  /** Counts a failed login from `address`. */
  loginFailed(address: string): void {
    const recent = this.#recentFailures(address);
    recent.push(this.now());
    this.#failures.delete(address);
    this.#failures.set(address, recent);
    if (this.#failures.size > maxTrackedAddresses) {
      this.#failures.delete(this.#failures.keys().next().value as string);
    }
  }

  #recentFailures(address: string): number[] {
    const since = this.now() - loginWindowMs;
    const recent = (this.#failures.get(address) ?? []).filter((at) => at > since);
    if (recent.length === 0) this.#failures.delete(address);
    return recent;
  }

  /** Opens a session for `name`: its id (for the cookie) and the session. */
  open(name: string): { id: string; session: Session } {
    const id = this.fresh();
    const session: Session = { name, csrf: this.fresh(), lastSeen: this.now() };
    this.#sessions.set(digest(id).toString('base64url'), session);
    while (this.#sessions.size > maxSessions) {
      this.#sessions.delete(this.#sessions.keys().next().value as string);
    }
    return { id, session };
  }

  /** Ends the session with this id, if any. */
  end(id: string): void {
    this.#sessions.delete(digest(id).toString('base64url'));
  }

  /** The live session with this id (touched: its idle time starts again), or `undefined`. */
  session(id: string): Session | undefined {
    const key = digest(id).toString('base64url');
    const session = this.#sessions.get(key);
    if (session === undefined) return undefined;
    const now = this.now();
    this.#sessions.delete(key);
    if (now - session.lastSeen > sessionIdleMs) return undefined;
    session.lastSeen = now;
    // Re-inserted: the map's order is least recently used first, which is what eviction drops.
    this.#sessions.set(key, session);
    return session;
  }

  /**
   * Who made the request: the bearer token, else the session cookie; a POST with the cookie must
   * come from the console's own origin and carry the session's CSRF token.
   *
   * @throws HttpProblem 401 without either, 403 for a cross-origin POST or a wrong CSRF token.
   */
  caller(req: IncomingMessage): Caller {
    const authorization = req.headers.authorization;
    if (authorization !== undefined) {
      const match = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization);
      if (match === null || !this.isToken(match[1])) throw unauthorized();
      return { kind: 'bearer', name: 'a script (bearer token)' };
    }
    const id = cookieOf(req, cookieName);
    const session = id === undefined ? undefined : this.session(id);
    if (id === undefined || session === undefined) throw unauthorized();
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      checkOrigin(req);
      const csrf = req.headers['x-csrf-token'];
      if (typeof csrf !== 'string' || !sameSecret(csrf, digest(session.csrf))) {
        throw new HttpProblem(403, 'forbidden', 'the request lacks the session’s CSRF token');
      }
    }
    return { kind: 'session', name: session.name, session, id };
  }
}

/** A 401: says nothing about why. */
export function unauthorized(): HttpProblem {
  return new HttpProblem(401, 'unauthorized', '');
}

/**
 * Refuses a request whose `Origin` is not the console's own (a missing one too: every browser
 * sends it on a POST).
 * @throws HttpProblem 403.
 */
export function checkOrigin(req: IncomingMessage, required = true): void {
  const origin = req.headers.origin;
  if (origin === undefined && !required) return;
  const own = ownOrigin(req);
  if (origin === undefined || own === undefined || origin.toLowerCase() !== own) {
    throw new HttpProblem(403, 'forbidden', 'the request does not come from the console’s own origin');
  }
}

/** The value of cookie `name` in the request, if sent. */
export function cookieOf(req: IncomingMessage, name: string): string | undefined {
  const header = req.headers.cookie;
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at === -1) continue;
    if (part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/** The `Set-Cookie` value that carries a session id (or, with `id` empty, clears it). */
export function sessionCookie(id: string, path: string, secure: boolean): string {
  const parts = [`${cookieName}=${id}`, 'HttpOnly', 'SameSite=Strict', `Path=${path}`];
  if (id === '') parts.push('Max-Age=0');
  if (secure) parts.push('Secure');
  return parts.join('; ');
}
