/**
 * The console's routes: the page and its assets (no data, no token), login and logout, then
 * everything behind the token or a session — the approvals, tool-health and in-doubt APIs and the
 * event stream. Every answer carries the security headers and passes the redactor.
 * @module
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Redactor } from '../../index.js';
import type { ApprovalDesk } from './approvals.js';
import { sendAsset } from './assets.js';
import type { Caller, Doorkeeper } from './auth.js';
import { HttpProblem, oneLine, readBody, secureHeaders, sendJson, sendProblem } from './http.js';
import { answerLogin, answerLogout, sendPage } from './login.js';
import { InDoubtActionError, type HealthSource, type InDoubtSource } from './panes.js';
import type { EventHub } from './sse.js';

/** What the router answers from. */
export interface RouterParts {
  readonly basePath: string;
  readonly doorkeeper: Doorkeeper;
  readonly desk: ApprovalDesk | undefined;
  readonly health: HealthSource | undefined;
  readonly inDoubt: InDoubtSource | undefined;
  readonly hub: EventHub;
  readonly redact: Redactor;
}

const inDoubtStatuses: Readonly<Record<InDoubtActionError['code'], number>> = {
  not_found: 404,
  not_in_doubt: 409,
  no_reconcile: 409,
  bad_input: 400,
};

const approvalAction = /^\/api\/approvals\/([^/]+)\/(approve|deny)$/;
const inDoubtAction = /^\/api\/in-doubt\/([^/]+)\/(reconcile|resolve)$/;

/** Routes each request under the base path. */
export class ConsoleRouter {
  #closed = false;

  constructor(private readonly parts: RouterParts) {}

  /** Refuses every request from now on (503). */
  close(): void {
    this.#closed = true;
  }

  /** Answers `req` when it is under the base path, else hands it to `next` (or answers 404). */
  handle(req: IncomingMessage, res: ServerResponse, next?: () => void): void {
    const { basePath, redact } = this.parts;
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://console.invalid');
    } catch {
      url = new URL('http://console.invalid/');
    }
    const path = url.pathname;
    if (path !== basePath && !path.startsWith(`${basePath}/`)) {
      if (next !== undefined) return next();
      secureHeaders(res);
      return sendProblem(res, new HttpProblem(404, 'not_found', 'nothing here'), redact);
    }
    secureHeaders(res);
    this.#route(req, res, path.slice(basePath.length), url.searchParams)
      .catch((error: unknown) => this.#fail(res, error))
      // Even the error answer failed (a redactor that throws): the connection is cut, never left hanging.
      .catch(() => res.destroy());
  }

  #fail(res: ServerResponse, error: unknown): void {
    const { redact } = this.parts;
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (error instanceof HttpProblem) {
      if (error.status === 413) res.setHeader('Connection', 'close');
      return sendProblem(res, error, redact);
    }
    sendProblem(
      res,
      new HttpProblem(500, 'internal', `the console could not answer: ${oneLine(error)}`),
      redact,
    );
  }

  async #route(
    req: IncomingMessage,
    res: ServerResponse,
    rest: string,
    query: URLSearchParams,
  ): Promise<void> {
    const { basePath } = this.parts;
    if (this.#closed) throw new HttpProblem(503, 'closed', 'the console is closed');
    const method = req.method ?? 'GET';
    const read = method === 'GET' || method === 'HEAD';
    if (rest === '' || rest === '/') {
      allow(method, ['GET', 'HEAD']);
      return sendPage(res, basePath, 200, 'none', method === 'HEAD');
    }
    if (rest.startsWith('/assets/')) {
      allow(method, ['GET', 'HEAD']);
      return sendAsset(res, rest.slice('/assets/'.length), method === 'HEAD');
    }
    if (rest === '/login') {
      allow(method, ['POST']);
      return answerLogin(this.parts, req, res);
    }
    if (rest === '/logout') {
      allow(method, ['POST']);
      return answerLogout(this.parts, req, res);
    }
    const caller = this.parts.doorkeeper.caller(req);
    if (read) return this.#read(req, res, rest, query, caller);
    allow(method, ['GET', 'HEAD', 'POST']);
    return this.#write(req, res, rest, caller);
  }

  async #read(
    req: IncomingMessage,
    res: ServerResponse,
    rest: string,
    query: URLSearchParams,
    caller: Caller,
  ): Promise<void> {
    const { desk, health, inDoubt, redact } = this.parts;
    switch (rest) {
      case '/healthz':
        return sendJson(res, 200, { ok: true }, redact);
      case '/api/session':
        return sendJson(
          res,
          200,
          {
            csrf: caller.kind === 'session' ? caller.session.csrf : '',
            name: caller.name,
            panes: {
              approvals: desk?.canList === true,
              health: health !== undefined,
              inDoubt: inDoubt !== undefined,
            },
          },
          redact,
        );
      case '/api/approvals': {
        const listed = await deskOf(desk).list({
          tool: textParam(query, 'tool'),
          tenant: textParam(query, 'tenant'),
          limit: limitParam(query),
          cursor: textParam(query, 'cursor'),
        });
        return sendJson(res, 200, listed, redact);
      }
      case '/api/audit': {
        const token = textParam(query, 'token');
        const cursor = textParam(query, 'cursor');
        const page = await deskOf(desk).audit({
          limit: limitParam(query),
          ...(token === undefined ? {} : { token }),
          ...(cursor === undefined ? {} : { cursor }),
        });
        return sendJson(res, 200, page, redact);
      }
      case '/api/health':
        return sendJson(res, 200, await sourceOf(health, 'tool-health').report(), redact);
      case '/api/in-doubt': {
        const tool = textParam(query, 'tool');
        const items = await inDoubtCall(() =>
          sourceOf(inDoubt, 'in-doubt').list({
            limit: limitParam(query),
            ...(tool === undefined ? {} : { tool }),
          }),
        );
        return sendJson(res, 200, { items }, redact);
      }
      case '/api/events':
        if (req.method === 'HEAD')
          throw new HttpProblem(405, 'method_not_allowed', 'use GET', { Allow: 'GET' });
        this.parts.hub.open(res);
        return;
    }
    if (approvalAction.test(rest) || inDoubtAction.test(rest)) allow(req.method ?? 'GET', ['POST']);
    throw new HttpProblem(404, 'not_found', 'no such route in the console API');
  }

  async #write(req: IncomingMessage, res: ServerResponse, rest: string, caller: Caller): Promise<void> {
    const { desk, inDoubt, redact } = this.parts;
    const approval = approvalAction.exec(rest);
    if (approval !== null) {
      const token = segment(approval[1] as string);
      const approvals = deskOf(desk);
      const { value } = await readBody(req);
      if (approval[2] === 'approve') {
        const args = { given: Object.hasOwn(value, 'args'), value: value['args'] };
        return sendJson(res, 200, await approvals.approve(token, caller.name, args), redact);
      }
      const reason = value['reason'];
      if (typeof reason !== 'string' || reason.trim() === '') {
        throw new HttpProblem(400, 'bad_request', 'a denial needs a reason');
      }
      if (reason.length > 2_000)
        throw new HttpProblem(400, 'bad_request', 'the reason is longer than 2000 characters');
      return sendJson(res, 200, await approvals.deny(token, caller.name, reason.trim()), redact);
    }
    const action = inDoubtAction.exec(rest);
    if (action !== null) {
      const key = segment(action[1] as string);
      const source = sourceOf(inDoubt, 'in-doubt');
      const { value } = await readBody(req);
      if (action[2] === 'reconcile') {
        return sendJson(
          res,
          200,
          await inDoubtCall(() => source.reconcile(key, { by: caller.name })),
          redact,
        );
      }
      const note = value['note'];
      if (typeof note !== 'string' || note.trim() === '') {
        throw new HttpProblem(400, 'bad_request', 'marking a call resolved needs a note');
      }
      if (note.length > 2_000)
        throw new HttpProblem(400, 'bad_request', 'the note is longer than 2000 characters');
      const resolved = await inDoubtCall(() => source.resolve(key, { by: caller.name, note: note.trim() }));
      return sendJson(res, 200, resolved, redact);
    }
    if (
      [
        '/healthz',
        '/api/session',
        '/api/approvals',
        '/api/audit',
        '/api/health',
        '/api/in-doubt',
        '/api/events',
      ].includes(rest)
    ) {
      allow('POST', ['GET']);
    }
    throw new HttpProblem(404, 'not_found', 'no such route in the console API');
  }
}

function allow(method: string, methods: readonly string[]): void {
  if (methods.includes(method)) return;
  throw new HttpProblem(405, 'method_not_allowed', `use ${methods.join(' or ')}`, {
    Allow: methods.join(', '),
  });
}

function deskOf(desk: ApprovalDesk | undefined): ApprovalDesk {
  if (desk === undefined)
    throw new HttpProblem(501, 'not_configured', 'no approval gate is attached to this console');
  return desk;
}

function sourceOf<Source>(source: Source | undefined, pane: string): Source {
  if (source === undefined)
    throw new HttpProblem(501, 'not_configured', `no ${pane} source is attached to this console`);
  return source;
}

async function inDoubtCall<Value>(call: () => Promise<Value>): Promise<Value> {
  try {
    return await call();
  } catch (error) {
    const code = (error as Partial<InDoubtActionError> | null)?.code;
    const named =
      error instanceof InDoubtActionError || (error as Error | null)?.name === 'InDoubtActionError';
    if (named && typeof code === 'string' && Object.hasOwn(inDoubtStatuses, code)) {
      throw new HttpProblem(inDoubtStatuses[code], code, oneLine(error));
    }
    throw error;
  }
}

function segment(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new HttpProblem(400, 'bad_request', 'the path is not valid URL encoding');
  }
}

function textParam(query: URLSearchParams, name: string): string | undefined {
  const value = query.get(name);
  return value === null || value === '' ? undefined : value;
}

function limitParam(query: URLSearchParams): number {
  const text = query.get('limit');
  if (text === null || text === '') return 100;
  const limit = Number(text);
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) {
    throw new HttpProblem(400, 'bad_request', 'limit must be an integer from 1 to 500');
  }
  return limit;
}
