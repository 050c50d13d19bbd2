/**
 * The console's HTTP plumbing: the headers every answer carries, JSON answers (redacted on the
 * way out), one-line errors, and request bodies read under a cap.
 * @module
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Redactor } from '../../index.js';

/** The page's Content-Security-Policy: nothing inline, nothing from elsewhere. */
export const contentSecurityPolicy =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** The largest request body read, in bytes: beyond it the answer is 413. */
export const maxBodyBytes = 64 * 1024;

/** Sets the headers every answer carries (the CSP too: a JSON answer opened as a page runs nothing). */
export function secureHeaders(res: ServerResponse): void {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Content-Security-Policy', contentSecurityPolicy);
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
  res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
}

/** A refusal the router turns into a status and `{ error, message }`. */
export class HttpProblem extends Error {
  /** The HTTP status. */
  readonly status: number;
  /** The machine-readable code (`not_found`, `conflict`, …). */
  readonly code: string;
  /** Extra headers (`Retry-After`, `Allow`). */
  readonly headers: Readonly<Record<string, string>>;
  /** @param status the HTTP status @param code the error code @param message one line for a person */
  constructor(status: number, code: string, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'HttpProblem';
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

/** Writes one response: JSON, redacted (every value the console sends passes the redactor). */
export function sendJson(res: ServerResponse, status: number, body: unknown, redact: Redactor): void {
  const text = JSON.stringify(redact.redactValue(body));
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

/** Writes `{ error, message }` (401 carries no message: it says nothing about why). */
export function sendProblem(res: ServerResponse, problem: HttpProblem, redact: Redactor): void {
  for (const [name, value] of Object.entries(problem.headers)) res.setHeader(name, value);
  const body =
    problem.status === 401 ? { error: 'unauthorized' } : { error: problem.code, message: problem.message };
  sendJson(res, problem.status, body, redact);
}

/** One line of an unexpected failure's message, capped, for a 500's body. */
export function oneLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const line = text.split('\n', 1)[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

/** What a request body was: parsed JSON, or the fields of a urlencoded form. */
export type ParsedBody = { readonly kind: 'json' | 'form'; readonly value: Record<string, unknown> };

/**
 * Reads a request body under the cap: JSON (an object), or with `allowForm` a urlencoded form. An
 * empty body is `{}` whatever its type (a POST that sends nothing, such as "reconcile now").
 *
 * @throws HttpProblem 413 past the cap, 415 for another type, 400 for JSON that is not an object.
 */
export async function readBody(req: IncomingMessage, allowForm = false): Promise<ParsedBody> {
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  if (declared > maxBodyBytes) throw tooLarge();
  const type = mediaTypeOf(req.headers['content-type']);
  const text = await readText(req);
  if (text.length === 0)
    return { kind: type === 'application/x-www-form-urlencoded' ? 'form' : 'json', value: {} };
  if (type === 'application/x-www-form-urlencoded' && allowForm) {
    return { kind: 'form', value: Object.fromEntries(new URLSearchParams(text)) };
  }
  if (type !== 'application/json') {
    throw new HttpProblem(
      415,
      'unsupported_media_type',
      allowForm
        ? 'send application/json or application/x-www-form-urlencoded'
        : 'send the body as application/json',
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new HttpProblem(400, 'bad_json', 'the body is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new HttpProblem(400, 'bad_request', 'the body must be a JSON object');
  }
  return { kind: 'json', value: value as Record<string, unknown> };
}

function mediaTypeOf(header: string | undefined): string {
  return (header ?? '').split(';', 1)[0]?.trim().toLowerCase() ?? '';
}

function tooLarge(): HttpProblem {
  return new HttpProblem(413, 'too_large', `the body is larger than ${maxBodyBytes / 1024} KB`);
}

// Reads at most the cap: past it the rest is not buffered, and the socket is left to the server
// (the 413 is answered with `Connection: close`).
function readText(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBodyBytes) {
        cleanup();
        req.resume();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks).toString('utf8'));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

/** The origin the request was made to, as a browser would write it in `Origin`. */
export function ownOrigin(req: IncomingMessage): string | undefined {
  const host = req.headers.host;
  if (host === undefined || host === '') return undefined;
  const secure = (req.socket as { encrypted?: boolean }).encrypted === true;
  return `${secure ? 'https' : 'http'}://${host.toLowerCase()}`;
}

/** Whether the request came over TLS (the cookie is then `Secure`). */
export function isSecure(req: IncomingMessage): boolean {
  return (req.socket as { encrypted?: boolean }).encrypted === true;
}
