/**
 * The console's doors: the page shell, the one-time login (JSON from the page's script, or a plain
 * form without JavaScript) and logout.
 * @module
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Redactor } from '../../index.js';
import { checkOrigin, cookieName, cookieOf, type Doorkeeper, sessionCookie } from './auth.js';
import { HttpProblem, isSecure, readBody, sendJson, sendProblem } from './http.js';
import { pageShell, type ShellNotice } from './page-shell.js';

/** What the doors need. */
export interface Doors {
  readonly basePath: string;
  readonly doorkeeper: Doorkeeper;
  readonly redact: Redactor;
}

/** Writes the page shell with `status` (and, after a failed form login, a notice). */
export function sendPage(
  res: ServerResponse,
  basePath: string,
  status: number,
  notice: ShellNotice,
  head: boolean,
): void {
  const html = pageShell(basePath, notice);
  res.statusCode = status;
  res.setHeader('Content-Type', 'text/html; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(html));
  res.end(head ? undefined : html);
}

/**
 * `POST {basePath}/login`: the right token opens a session (cookie, and the CSRF token in JSON, or
 * a 303 back to the page for a form); a wrong one is 401 and counts against the address.
 *
 * @throws HttpProblem 429 past the failed-login limit (a form gets the page with a notice), 403 from another origin.
 */
export async function answerLogin(doors: Doors, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { doorkeeper, basePath, redact } = doors;
  const form = (req.headers['content-type'] ?? '')
    .toLowerCase()
    .startsWith('application/x-www-form-urlencoded');
  const address = req.socket.remoteAddress ?? 'unknown';
  try {
    checkOrigin(req, false);
    doorkeeper.checkLoginAllowed(address);
  } catch (error) {
    if (form && error instanceof HttpProblem && error.status === 429) {
      for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
      return sendPage(res, basePath, 429, 'too_many_attempts', false);
    }
    throw error;
  }
  const { value } = await readBody(req, true);
  if (!doorkeeper.isToken(value['token'])) {
    doorkeeper.loginFailed(address);
    if (form) return sendPage(res, basePath, 401, 'wrong_token', false);
    return sendProblem(res, new HttpProblem(401, 'unauthorized', ''), redact);
  }
  const name = nameOf(value['name']);
  const { id, session } = doorkeeper.open(name);
  res.setHeader('Set-Cookie', sessionCookie(id, basePath, isSecure(req)));
  if (form) {
    // A form without JavaScript: back to the page, now with the cookie.
    res.statusCode = 303;
    res.setHeader('Location', `${basePath}/`);
    res.end();
    return;
  }
  sendJson(res, 200, { csrf: session.csrf, name }, redact);
}

/**
 * `POST {basePath}/logout`: ends the session named by the cookie (a same-origin request only) and
 * clears the cookie; 204 whether or not there was one.
 */
export function answerLogout(doors: Doors, req: IncomingMessage, res: ServerResponse): void {
  const id = cookieOf(req, cookieName);
  if (id !== undefined) {
    checkOrigin(req);
    doors.doorkeeper.end(id);
  }
  res.setHeader('Set-Cookie', sessionCookie('', doors.basePath, isSecure(req)));
  res.statusCode = 204;
  res.end();
}

// The name a person gave at login, as the audit log keeps it: one line, at most 64 characters.
function nameOf(given: unknown): string {
  if (typeof given !== 'string') return 'a reviewer';
  const name = given
    .replace(/\p{Cc}/gu, ' ')
    .trim()
    .slice(0, 64);
  return name === '' ? 'a reviewer' : name;
}
