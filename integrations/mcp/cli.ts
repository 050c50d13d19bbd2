#!/usr/bin/env node
// The `tool-dispatcher` command; `mcp-proxy` serves an MCP server's tools through the dispatcher.

import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createMcpProxy } from './proxy.js';
import { HelpRequested, parseProxyArgs, usage } from './proxy-args.js';

async function runProxy(argv: readonly string[]): Promise<void> {
  const { upstream, config, logLevel } = parseProxyArgs(argv);
  const proxy = await createMcpProxy({ upstream, config, logLevel }).catch((error: unknown) => {
    const where = 'url' in upstream ? upstream.url : [upstream.command, ...(upstream.args ?? [])].join(' ');
    throw new Error(`The upstream MCP server (${where}) did not start: ${(error as Error).message}`, {
      cause: error,
    });
  });
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
    if (subcommand === undefined || subcommand === '-h' || subcommand === '--help') throw new HelpRequested();
    throw new TypeError(`Unknown command "${subcommand}"`);
  } catch (error) {
    if (error instanceof HelpRequested) {
      process.stderr.write(usage);
      process.exit(subcommand === 'mcp-proxy' || subcommand === '-h' || subcommand === '--help' ? 0 : 2);
    }
    const usageError =
      error instanceof TypeError || (error as { code?: unknown }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION';
    process.stderr.write(`tool-dispatcher: ${(error as Error).message}\n${usageError ? `\n${usage}` : ''}`);
    process.exit(usageError ? 2 : 1);
  }
}

await main(process.argv.slice(2));
