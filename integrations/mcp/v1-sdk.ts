/**
 * The v1 MCP SDK (`@modelcontextprotocol/sdk`), an optional peer: loaded once when installed so
 * that `registerMcpTools` and `importMcpTools` keep taking v1 `Server` and `Client` objects, and
 * `undefined` when it is not (then only the v2 packages serve).
 * @module
 */

import type { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Server as V1Server } from '@modelcontextprotocol/sdk/server/index.js';
import { missingPeers } from '../peers.js';

/** What this integration uses of the v1 SDK. */
export interface V1Sdk {
  /** The v1 low-level server class. */
  Server: typeof V1Server;
  /** The v1 client class. */
  Client: typeof V1Client;
  /** v1's request and notification schemas, which its `setRequestHandler` is keyed by. */
  schemas: typeof import('@modelcontextprotocol/sdk/types.js');
  /** v1's Streamable HTTP client error (a 404 there is a forgotten session). */
  StreamableHTTPError: typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js').StreamableHTTPError;
}

export type { V1Client, V1Server };

const v1Package = '@modelcontextprotocol/sdk';

async function loadV1(): Promise<V1Sdk | undefined> {
  try {
    const [server, client, schemas, http] = await Promise.all([
      import('@modelcontextprotocol/sdk/server/index.js'),
      import('@modelcontextprotocol/sdk/client/index.js'),
      import('@modelcontextprotocol/sdk/types.js'),
      import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    ]);
    return {
      Server: server.Server,
      Client: client.Client,
      schemas,
      StreamableHTTPError: http.StreamableHTTPError,
    };
  } catch (error) {
    if (missingPeers([v1Package]).length > 0) return undefined;
    throw error;
  }
}

/**
 * The v1 SDK when it is installed, else `undefined`.
 *
 * @example
 * if (v1 !== undefined && server instanceof v1.Server) registerOnV1(server);
 */
export const v1: V1Sdk | undefined = await loadV1();
