// A TCP proxy in front of a redis-server that injects network faults, keeping bytes in order:
// latency, a partition (bytes held, then delivered), a wedge (bytes dropped, sockets open) and resets.

import { createServer, connect, type Server, type Socket } from 'node:net';

/** How the proxy treats bytes right now. */
export type ProxyMode =
  | { kind: 'pass' }
  | { kind: 'delay'; ms: number }
  /** Holds every byte until the mode changes, then delivers them in order (a partition that heals). */
  | { kind: 'hold' }
  /**
   * Drops bytes while the sockets stay open: every byte (a wedged connection), or with
   * `replies` only the server's (commands run, their answers never arrive).
   */
  | { kind: 'drop'; replies?: boolean };

interface Chunk {
  readonly data: Buffer;
  readonly at: number;
}

// One direction of one connection. Chunks leave strictly in arrival order: a proxy that
// reorders bytes desynchronises RESP replies (false answers, not faults).
class Pipe {
  readonly #queue: Chunk[] = [];
  #timer: NodeJS.Timeout | undefined;

  constructor(
    readonly to: Socket,
    readonly proxy: FaultProxy,
    readonly carriesReplies: boolean,
  ) {}

  push(data: Buffer): void {
    const mode = this.proxy.mode;
    if (mode.kind === 'drop' && (mode.replies !== true || this.carriesReplies)) return;
    const delay = mode.kind === 'delay' ? mode.ms : 0;
    this.#queue.push({ data, at: Date.now() + delay });
    this.pump();
  }

  pump(): void {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.proxy.mode.kind === 'hold') return;
    const now = Date.now();
    while (this.#queue.length > 0) {
      const head = this.#queue[0] as Chunk;
      if (head.at > now) {
        this.#timer = setTimeout(() => this.pump(), head.at - now);
        return;
      }
      this.#queue.shift();
      if (!this.to.destroyed) this.to.write(head.data);
    }
  }

  clear(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#queue.length = 0;
  }
}

/** A fault-injecting TCP proxy on 127.0.0.1 in front of `target`. */
export class FaultProxy {
  mode: ProxyMode = { kind: 'pass' };
  readonly #server: Server;
  readonly #connections = new Set<{ client: Socket; upstream: Socket; pipes: Pipe[] }>();
  port = 0;

  private constructor(
    readonly targetHost: string,
    readonly targetPort: number,
  ) {
    this.#server = createServer((client) => this.#accept(client));
  }

  /** Starts a proxy on a free port. */
  static async start(targetHost: string, targetPort: number): Promise<FaultProxy> {
    const proxy = new FaultProxy(targetHost, targetPort);
    await new Promise<void>((resolve) => proxy.#server.listen(0, '127.0.0.1', resolve));
    const address = proxy.#server.address();
    proxy.port = typeof address === 'object' && address !== null ? address.port : 0;
    return proxy;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Switches the mode; held bytes are delivered (in order) when the new mode lets them through. */
  set(mode: ProxyMode): void {
    this.mode = mode;
    for (const connection of this.#connections) for (const pipe of connection.pipes) pipe.pump();
  }

  /** Destroys every proxied connection (clients see a reset and reconnect). */
  resetAll(): void {
    for (const connection of this.#connections) {
      for (const pipe of connection.pipes) pipe.clear();
      connection.client.destroy();
      connection.upstream.destroy();
    }
    this.#connections.clear();
  }

  async close(): Promise<void> {
    this.resetAll();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #accept(client: Socket): void {
    const upstream = connect({ host: this.targetHost, port: this.targetPort });
    const toUpstream = new Pipe(upstream, this, false);
    const toClient = new Pipe(client, this, true);
    const connection = { client, upstream, pipes: [toUpstream, toClient] };
    this.#connections.add(connection);
    client.on('data', (data) => toUpstream.push(data));
    upstream.on('data', (data) => toClient.push(data));
    const end = () => {
      toUpstream.clear();
      toClient.clear();
      client.destroy();
      upstream.destroy();
      this.#connections.delete(connection);
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', end);
    upstream.on('error', end);
  }
}
