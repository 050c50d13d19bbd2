/**
 * `mcp-proxy --console`: the control room over the proxy's own approval gate, registry and
 * dispatcher, mounted at `/console` on the `--listen` listener.
 * @module
 */

import { controlRoom, type ControlRoom } from '../console/index.js';
import type { McpProxy } from './proxy.js';

/** Where the proxy serves its console on the listener. */
export const proxyConsolePath = '/console';

/**
 * The console of a running proxy: its pending approvals (when `--require-approval` gates calls),
 * the health of its tools, answered with `token`.
 *
 * @throws TypeError when `token` is not one `controlRoom` takes (the message never shows it).
 * @example
 * const room = proxyConsole(proxy, process.env.TD_CONSOLE_TOKEN as string);
 * await listenMcp(proxy.serverFactory, { url, mounts: [{ path: room.basePath, handler: room.handler }] });
 */
export function proxyConsole(
  proxy: Pick<McpProxy, 'approvals' | 'registry' | 'dispatcher'>,
  token: string,
): ControlRoom {
  return controlRoom({
    token,
    basePath: proxyConsolePath,
    registry: proxy.registry,
    dispatcher: proxy.dispatcher,
    ...(proxy.approvals === undefined ? {} : { gate: proxy.approvals }),
  });
}
