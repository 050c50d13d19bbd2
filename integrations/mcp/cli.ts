#!/usr/bin/env node
/**
 * The `tool-dispatcher` command; `mcp-proxy` serves an MCP server's tools through the dispatcher.
 * The MCP SDK is an optional peer that `npx tool-dispatcher` alone never installs, so nothing of
 * it is imported up front: --help, --version and a bad command line answer without it, and a
 * missing SDK is one line saying how to run the command with it.
 * @module
 */

import { missingPeers, installCommand, packageVersion } from '../peers.js';
import { HelpRequested, parseProxyArgs, usage, VersionRequested } from './proxy-args.js';

const sdk = '@modelcontextprotocol/sdk';

class SdkMissing extends Error {}

async function loadProxy() {
  try {
    const [{ createMcpProxy }, { StdioServerTransport }] = await Promise.all([
      import('./proxy.js'),
      import('@modelcontextprotocol/sdk/server/stdio.js'),
    ]);
    return { createMcpProxy, StdioServerTransport };
  } catch (error) {
    if (missingPeers([sdk]).length === 0) throw error;
    throw new SdkMissing(
      `tool-dispatcher mcp-proxy needs ${sdk}: run it with npx -y -p tool-dispatcher -p ${sdk}@1 ` +
        `tool-dispatcher mcp-proxy …, or ${installCommand([sdk])}`,
    );
  }
}

async function runProxy(argv: readonly string[]): Promise<void> {
  const { upstream, config, logLevel } = parseProxyArgs(argv);
  const { createMcpProxy, StdioServerTransport } = await loadProxy();
  const info = { name: 'tool-dispatcher-mcp-proxy', version: packageVersion() };
  // Its errors say what failed: the upstream not starting, its tools, or a setting naming none.
  const proxy = await createMcpProxy({ upstream, config, logLevel, info });
  let stopping = false;
  const stop = (code: number) => {
    if (stopping) return;
    stopping = true;
    proxy.close().finally(() => process.exit(code));
  };
  // The SDK's stdio transport does not notice its input ending; the host closing it means stop.
  process.stdin.once('end', () => stop(0));
  process.stdin.once('close', () => stop(0));
  process.once('SIGINT', () => stop(0));
  process.once('SIGTERM', () => stop(0));
  await proxy.server.connect(new StdioServerTransport());
}

async function main(argv: readonly string[]): Promise<void> {
  const [subcommand, ...rest] = argv;
  try {
    if (subcommand === 'mcp-proxy') return await runProxy(rest);
    if (subcommand === '-v' || subcommand === '--version') throw new VersionRequested();
    if (subcommand === undefined || subcommand === '-h' || subcommand === '--help') throw new HelpRequested();
    throw new TypeError(`Unknown command "${subcommand}"`);
  } catch (error) {
    if (error instanceof VersionRequested) {
      process.stdout.write(`${packageVersion()}\n`);
      process.exit(0);
    }
    if (error instanceof HelpRequested) {
      process.stderr.write(usage);
      process.exit(subcommand === 'mcp-proxy' || subcommand === '-h' || subcommand === '--help' ? 0 : 2);
    }
    if (error instanceof SdkMissing) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    const usageError =
      error instanceof TypeError || (error as { code?: unknown }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION';
    process.stderr.write(`tool-dispatcher: ${(error as Error).message}\n${usageError ? `\n${usage}` : ''}`);
    process.exit(usageError ? 2 : 1);
  }
}

await main(process.argv.slice(2));
