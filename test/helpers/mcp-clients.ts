// v2 MCP Clients on both protocol eras, served over an in-memory pair and closed after each test.

import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { afterEach } from 'vitest';

/** The two eras a v2 Client speaks: the 2025 one (`legacy`) and pinned to 2026-07-28 (`modern`). */
export const eras = [
  ['legacy', undefined],
  ['modern', { versionNegotiation: { mode: { pin: '2026-07-28' as const } } }],
] as const;

/** A v2 Client's options for one of the {@link eras}. */
export type EraOptions = (typeof eras)[number][1];

/** Connects clients and closes them, and whatever else the test hands it, after each test. */
export interface InMemoryClients {
  /** Closers run (failures ignored) after each test. */
  readonly closing: Array<() => Promise<unknown>>;
  /** Serves the factory the way `serveStdio` serves a process's stdio, over an in-memory pair. */
  clientOf(factory: Parameters<typeof serveStdio>[0], options: EraOptions): Promise<Client>;
}

/** Call at the top of a test file (or inside a `describe`): registers the `afterEach` that closes. */
export function inMemoryClients(): InMemoryClients {
  const closing: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    await Promise.all(closing.splice(0).map((close) => close().catch(() => {})));
  });
  return {
    closing,
    async clientOf(factory, options) {
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      const served = serveStdio(factory, { transport: serverSide });
      const client = new Client({ name: 'host', version: '1.0.0' }, options);
      await client.connect(clientSide);
      closing.push(
        () => client.close(),
        () => served.close(),
      );
      return client;
    },
  };
}
