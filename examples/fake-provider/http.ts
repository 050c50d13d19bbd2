// The HTTP plumbing of the fake provider: one node:http server on 127.0.0.1, JSON in and out.

import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A reply sent exactly as given: a status and a JSON body (an error, say). */
export interface HttpReply {
  /** The HTTP status. */
  status: number;
  /** The JSON body. */
  body: unknown;
}

/** One request the server received. */
export interface RecordedRequest {
  /** Which API it called. */
  endpoint: 'chat' | 'responses' | 'messages';
  /** The request body as sent. */
  body: Record<string, unknown>;
  /** The request headers. */
  headers: IncomingHttpHeaders;
  /** The status the server answered with (0 while the request is open or after the client left). */
  status: number;
}

/** What a route answers: the reply, given the body, the headers and a signal for a client that leaves. */
export type Route = (
  body: Record<string, unknown>,
  headers: IncomingHttpHeaders,
  signal: AbortSignal,
) => Promise<HttpReply>;

/** A started server. */
export interface Listening {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** Every request, in arrival order. */
  requests: RecordedRequest[];
  /** Stops the server and drops open connections. */
  close(): Promise<void>;
}

/** Starts a server on a free port that answers `routes` by path and 404s anything else. */
export async function listen(
  routes: Readonly<Record<string, { endpoint: RecordedRequest['endpoint']; route: Route }>>,
): Promise<Listening> {
  const requests: RecordedRequest[] = [];
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const entry = routes[`${req.method ?? 'GET'} ${path}`];
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const left = new AbortController();
      // The client went away before the answer: the route's wait (a gated test model) can end.
      res.on('close', () => {
        if (!res.writableFinished) left.abort(new Error('client closed the request'));
      });
      const send = ({ status, body }: HttpReply, record?: RecordedRequest) => {
        if (record) record.status = status;
        if (res.destroyed) return;
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (entry === undefined) {
        send({
          status: 404,
          body: { error: { type: 'not_found_error', message: `No route ${req.method} ${path}` } },
        });
        return;
      }
      let body: Record<string, unknown>;
      try {
        const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
          throw new Error('not an object');
        body = parsed as Record<string, unknown>;
      } catch {
        send({
          status: 400,
          body: { error: { type: 'invalid_request_error', message: 'The body is not a JSON object' } },
        });
        return;
      }
      const record: RecordedRequest = { endpoint: entry.endpoint, body, headers: req.headers, status: 0 };
      requests.push(record);
      entry.route(body, req.headers, left.signal).then(
        (reply) => send(reply, record),
        (error: unknown) =>
          send(
            {
              status: 500,
              body: {
                error: {
                  type: 'api_error',
                  message: `fake provider: ${error instanceof Error ? error.message : String(error)}`,
                },
              },
            },
            record,
          ),
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  // A test that forgets close() must not keep the process alive.
  server.unref();
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
