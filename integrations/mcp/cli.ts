#!/usr/bin/env node
/**
 * The `tool-dispatcher` command; `mcp-proxy` serves an MCP server's tools through the dispatcher,
 * to 2025-11-25 and 2026-07-28 clients alike (the v2 MCP packages are dependencies, so
 * `npx tool-dispatcher` runs it as it is).
 * @module
 */

import { packageVersion } from '../peers.js';
import { HelpRequested, nearest, parseProxyArgs, usage, VersionRequested } from './proxy-args.js';

async function runProxy(argv: readonly string[]): Promise<void> {
  const { upstream, config, logLevel, logFormat, listen, redis, console: consoleFlag } = parseProxyArgs(argv);
  // Loaded only now: --help, --version and a bad command line answer without the MCP SDK.
  const [{ createMcpProxy }, { serveStdio }, { listenMcp, isLoopback }] = await Promise.all([
    import('./proxy.js'),
    import('@modelcontextprotocol/server/stdio'),
    import('./listener.js'),
  ]);
  const info = { name: 'tool-dispatcher-mcp-proxy', version: packageVersion() };
  // Loaded only with --redis-url: the Redis client is an optional peer.
  const fleet =
    redis === undefined
      ? undefined
      : await (await import('./fleet.js')).connectFleet(redis.url, redis.prefix);
  let proxy: Awaited<ReturnType<typeof createMcpProxy>>;
  try {
    // Its errors say what failed: the upstream not starting, its tools, or a setting naming none.
    proxy = await createMcpProxy({
      upstream,
      config,
      logLevel,
      logFormat,
      info,
      ...(fleet === undefined ? {} : { stores: fleet.stores }),
    });
  } catch (error) {
    await fleet?.close();
    throw error;
  }
  let stopping = false;
  let closeListener = async () => {};
  const stop = (code: number) => {
    if (stopping) return;
    stopping = true;
    closeListener()
      .catch(() => {})
      .then(() => proxy.close())
      .then(() => fleet?.close())
      .finally(() => process.exit(code));
  };
  if (listen !== undefined) {
    // Loaded only with --console: the console's modules stay out of a proxy that does not serve it.
    const room =
      consoleFlag === undefined
        ? undefined
        : (await import('./proxy-console.js')).proxyConsole(proxy, consoleFlag.token);
    let listener: Awaited<ReturnType<typeof listenMcp>>;
    try {
      listener = await listenMcp(proxy.serverFactory, {
        url: listen,
        bus: proxy.events,
        ...(room === undefined ? {} : { mounts: [{ path: room.basePath, handler: room.handler }] }),
      });
    } catch (error) {
      await room?.close();
      await proxy.close();
      await fleet?.close();
      throw error;
    }
    closeListener = async () => {
      await room?.close();
      await listener.close();
    };
    process.once('SIGINT', () => stop(0));
    process.once('SIGTERM', () => stop(0));
    // The readiness line is a record like the others under --log-format json.
    process.stderr.write(
      logFormat === 'json'
        ? `${JSON.stringify({ level: 30, time: Date.now(), msg: 'proxy.listening', url: listener.url })}\n`
        : `mcp-proxy listening on ${listener.url}\n`,
    );
    if (room !== undefined) {
      const at = new URL(room.basePath, listener.url);
      process.stderr.write(consoleLine(at, logFormat, isLoopback(at.hostname)));
    }
    return;
  }
  // The host closing our input means stop, whatever the transport makes of it.
  process.stdin.once('end', () => stop(0));
  process.stdin.once('close', () => stop(0));
  process.once('SIGINT', () => stop(0));
  process.once('SIGTERM', () => stop(0));
  // Both revisions on one stdio: the opening exchange picks 2025-11-25 or 2026-07-28.
  serveStdio(proxy.serverFactory);
}

// Where the console is; a listener other machines can reach is said so (the token is all that
// stands between them and the approvals).
function consoleLine(url: URL, logFormat: 'text' | 'json', loopback: boolean): string {
  const warning = 'not a loopback address: reachable from other machines, put TLS in front of it';
  if (logFormat === 'json') {
    return `${JSON.stringify({ level: loopback ? 30 : 40, time: Date.now(), msg: 'proxy.console', url: url.href, loopback })}\n`;
  }
  return `mcp-proxy console at ${url.href}${loopback ? '' : ` (${warning})`}\n`;
}

async function main(argv: readonly string[]): Promise<void> {
  const [subcommand, ...rest] = argv;
  try {
    if (subcommand === 'mcp-proxy') return await runProxy(rest);
    if (subcommand === '-v' || subcommand === '--version') throw new VersionRequested();
    if (subcommand === undefined || subcommand === '-h' || subcommand === '--help') throw new HelpRequested();
    const near = subcommand.startsWith('-') ? undefined : nearest(subcommand, ['mcp-proxy']);
    throw new TypeError(
      `Unknown command "${subcommand}"${near === undefined ? '' : `: did you mean ${near}?`}`,
    );
  } catch (error) {
    if (error instanceof VersionRequested) {
      process.stdout.write(`${packageVersion()}\n`);
      process.exit(0);
    }
    if (error instanceof HelpRequested) {
      // Asked for, the text is the answer (stdout, 0, pipeable to a pager); a bare
      // `tool-dispatcher` is a usage error.
      const asked = subcommand === 'mcp-proxy' || subcommand === '-h' || subcommand === '--help';
      (asked ? process.stdout : process.stderr).write(usage);
      process.exit(asked ? 0 : 2);
    }
    const usageError =
      error instanceof TypeError || (error as { code?: unknown }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION';
    process.stderr.write(`tool-dispatcher: ${(error as Error).message}\n${usageError ? `\n${usage}` : ''}`);
    process.exit(usageError ? 2 : 1);
  }
}

await main(process.argv.slice(2));
