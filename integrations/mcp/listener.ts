/**
 * A Streamable HTTP listener for a server factory on `node:http`: the v2 SDK's
 * `createMcpHandler` (both revisions, no session state in the process) behind an Origin check.
 * @module
 */

import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import {
  createMcpHandler,
  hostHeaderValidationResponse,
  localhostAllowedHostnames,
  localhostAllowedOrigins,
  originValidationResponse,
  type McpHttpHandler,
  type McpServerFactory,
  type ServerEventBus,
  validateHostHeader,
} from '@modelcontextprotocol/server';
import { optionKeys, rejectUnknownKeys } from '../../middleware/index.js';
import { listenUrl } from './listen-url.js';

/** Options for `listenMcp`. */
export interface ListenMcpOptions {
  /** Where to listen: `http://<host>:<port>/<path>`; port 0 takes any free port. */
  url: string;
  /**
   * Hostnames a browser `Origin` may name (no scheme, no port); requests naming another get 403.
   * Requests without an `Origin` (every non-browser client) pass.
   * @default the listen host, plus the localhost names when it is a loopback address
   */
  allowedOrigins?: readonly string[];
  /**
   * Receives failures no request waits for (a response stream that broke).
   * @default () => {}
   */
  onError?: (error: Error) => void;
  /**
   * Where change events come from for the `subscriptions/listen` streams of 2026-07-28 clients
   * (`proxy.events` for the proxy).
   * @default a bus of the listener's own, that nothing publishes to
   */
  bus?: ServerEventBus;
  /**
   * Node request handlers served on the same listener under paths of their own (the control room
   * at `/console`): a request whose path is `path` or under `path/` goes to `handler` after the same
   * Host check as MCP (against DNS rebinding); Origin and everything else are the handler's to check.
   * @default []
   */
  mounts?: readonly ListenerMount[];
}

/** A Node request handler served beside MCP on the listener, under its own path. */
export interface ListenerMount {
  /** The path it answers under, such as `/console` (no trailing slash). */
  path: string;
  /** Answers every request under `path`; must never throw. */
  handler: (request: IncomingMessage, response: ServerResponse) => void;
}

const listenMcpOptionKeys = optionKeys<ListenMcpOptions>({
  url: true,
  allowedOrigins: true,
  onError: true,
  bus: true,
  mounts: true,
});

/** A running listener. */
export interface McpListener {
  /** The URL it serves, with the port it got. */
  readonly url: string;
  /** Stops taking connections, ends the streams it serves and closes the handler. */
  close(): Promise<void>;
}

/**
 * Serves `factory` over Streamable HTTP at `url` until `close()`: a fresh server per request, so
 * any request (a re-issue, a poll) can land on any process behind a load balancer. `GET /healthz`
 * answers 200 `{"status":"ok"}` for liveness probes (behind the same Host and Origin checks).
 *
 * @throws Error naming the address when it cannot be bound (in use, not local).
 * @example
 * const listener = await listenMcp(proxy.serverFactory, { url: 'http://127.0.0.1:0/mcp' });
 * console.error(`listening on ${listener.url}`);
 */
export async function listenMcp(factory: McpServerFactory, options: ListenMcpOptions): Promise<McpListener> {
  if (typeof options === 'object' && options !== null)
    rejectUnknownKeys('listenMcp', options, listenMcpOptionKeys);
  const url = listenUrl(options.url);
  const { onError = () => {} } = options;
  const loopback = isLoopback(url.hostname);
  const origins = [
    ...(options.allowedOrigins ?? [url.hostname, ...(loopback ? localhostAllowedOrigins() : [])]),
  ];
  // The Host check guards against DNS rebinding: a loopback listener answers the localhost names
  // and the address it is bound to (127.0.0.2 is loopback too, and the URL it prints names it).
  const hosts = loopback ? [...new Set([...localhostAllowedHostnames(), url.hostname])] : undefined;
  const mounts = mountsOf(options.mounts, url.pathname);
  const handler = createMcpHandler(factory, {
    onerror: onError,
    ...(options.bus === undefined ? {} : { bus: options.bus }),
  });
  const http = createServer((request, response) => {
    const mount = mountOf(mounts, request.url);
    const served =
      mount === undefined
        ? serve(handler, url, origins, hosts, request, response)
        : serveMount(mount, hosts, request, response);
    served.catch((error: unknown) => {
      onError(error instanceof Error ? error : new Error(String(error)));
      if (!response.headersSent) response.writeHead(500);
      response.end();
    });
  });
  http.listen(Number(url.port), url.hostname.replace(/^\[|\]$/g, ''));
  try {
    await once(http, 'listening');
  } catch (error) {
    const reason =
      (error as { code?: unknown }).code === 'EADDRINUSE' ? 'the address is in use' : String(error);
    throw new Error(`Cannot listen on ${url.href}: ${reason}`, { cause: error });
  }
  const bound = new URL(url.href);
  bound.port = String((http.address() as AddressInfo).port);
  return {
    url: bound.href,
    close: async () => {
      const closed = new Promise<void>((resolve) => http.close(() => resolve()));
      http.closeAllConnections();
      await handler.close();
      await closed;
    },
  };
}

function mountsOf(given: unknown, mcpPath: string): readonly ListenerMount[] {
  if (given === undefined) return [];
  if (!Array.isArray(given)) throw new TypeError('listenMcp() mounts must be an array of { path, handler }');
  return given.map((mount: Partial<ListenerMount> | null, at) => {
    const { path, handler } = mount ?? {};
    if (typeof path !== 'string' || !/^(\/[A-Za-z0-9._~-]+)+$/.test(path)) {
      throw new TypeError(
        `listenMcp() mounts[${at}].path must be a path such as '/console', got ${String(path)}`,
      );
    }
    if (path === mcpPath || path === '/healthz') {
      throw new TypeError(`listenMcp() mounts[${at}].path ${path} is the listener's own`);
    }
    if (typeof handler !== 'function') {
      throw new TypeError(`listenMcp() mounts[${at}].handler must be a function`);
    }
    return { path, handler };
  });
}

function mountOf(mounts: readonly ListenerMount[], target: string | undefined): ListenerMount | undefined {
  if (mounts.length === 0) return undefined;
  const path = (target ?? '/').split('?')[0] as string;
  return mounts.find((mount) => path === mount.path || path.startsWith(`${mount.path}/`));
}

// A mounted handler gets the request as Node gave it, once the Host check has passed.
async function serveMount(
  mount: ListenerMount,
  hosts: string[] | undefined,
  incoming: IncomingMessage,
  outgoing: ServerResponse,
): Promise<void> {
  const host = hosts === undefined ? { ok: true } : validateHostHeader(incoming.headers.host, hosts);
  if (!host.ok) {
    outgoing.writeHead(403, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    outgoing.end('{"error":"forbidden","message":"the Host header names no address this listener serves"}\n');
    return;
  }
  mount.handler(incoming, outgoing);
}

/**
 * Whether a URL's hostname is a loopback address (only this machine can reach it).
 *
 * @example
 * isLoopback('127.0.0.1'); // true
 */
export function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

async function serve(
  handler: McpHttpHandler,
  base: URL,
  origins: string[],
  hosts: string[] | undefined,
  incoming: IncomingMessage,
  outgoing: ServerResponse,
): Promise<void> {
  // A client that goes away mid-answer has cancelled: the SDK sees its request's signal abort.
  const gone = new AbortController();
  outgoing.once('close', () => {
    if (!outgoing.writableFinished) gone.abort(new Error('The client closed the stream'));
  });
  const request = toRequest(incoming, base, gone.signal);
  const path = new URL(request.url).pathname;
  const health = path === '/healthz' && path !== base.pathname;
  const refused =
    (path === base.pathname || health ? undefined : new Response('Not found', { status: 404 })) ??
    (hosts === undefined ? undefined : hostHeaderValidationResponse(request, hosts)) ??
    originValidationResponse(request, origins);
  const response = refused ?? (health ? healthz(request) : await handler.fetch(request));
  await send(response, outgoing, gone.signal);
}

// A load balancer's or orchestrator's liveness probe: the listener answers, so the process is up.
function healthz(request: Request): Response {
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    return new Response('Method not allowed', { status: 405, headers: { allow: 'GET, HEAD' } });
  }
  return new Response(request.method === 'HEAD' ? null : '{"status":"ok"}\n', {
    status: 200,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
  });
}

function toRequest(incoming: IncomingMessage, base: URL, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(incoming.headers)) {
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else if (value !== undefined) headers.set(name, value);
  }
  const method = incoming.method ?? 'GET';
  const hasBody = method !== 'GET' && method !== 'HEAD';
  return new Request(new URL(incoming.url ?? '/', base), {
    method,
    headers,
    signal,
    ...(hasBody ? { body: Readable.toWeb(incoming) as ReadableStream<Uint8Array>, duplex: 'half' } : {}),
  } as RequestInit);
}

async function send(response: Response, outgoing: ServerResponse, gone: AbortSignal): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  outgoing.writeHead(response.status, headers);
  if (response.body === null) return void outgoing.end();
  // Each event (an SSE frame) goes out as it comes, not when the whole answer is ready.
  outgoing.flushHeaders();
  const reader = response.body.getReader();
  const stop = () => void reader.cancel().catch(() => {});
  gone.addEventListener('abort', stop, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done || gone.aborted) break;
      if (!outgoing.write(value)) await once(outgoing, 'drain', { signal: gone });
    }
  } catch (error) {
    if (!gone.aborted) throw error;
  } finally {
    gone.removeEventListener('abort', stop);
    outgoing.end();
  }
}
