// examples/mcp-proxy.md: its configs are valid, and its "from this repository" entry runs as a
// host would run it. examples/mcp/demo.ts prints the timeline it promises.

import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { describe, expect, it } from 'vitest';
import { checkConfig } from '../../integrations/mcp/proxy.js';
import { parseProxyArgs } from '../../integrations/mcp/proxy-args.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const page = readFileSync(new URL('../../examples/mcp-proxy.md', import.meta.url), 'utf8');
const jsonBlocks = [...page.matchAll(/```json\n([\s\S]*?)```/g)].map(
  (match) => JSON.parse(match[1] ?? '') as unknown,
);

interface HostConfig {
  mcpServers: Record<string, { command: string; args: string[] }>;
}
const hostConfigs = jsonBlocks.filter(
  (block): block is HostConfig => typeof block === 'object' && block !== null && 'mcpServers' in block,
);

describe('examples/mcp-proxy.md', () => {
  it('holds host configs whose proxy arguments parse, and a proxy.json the proxy accepts', () => {
    const proxied = hostConfigs
      .flatMap((config) => Object.values(config.mcpServers))
      .filter((server) => server.args.includes('mcp-proxy'));
    expect(proxied).toHaveLength(2);
    for (const server of proxied) {
      const args = server.args
        .slice(server.args.indexOf('mcp-proxy') + 1)
        .map((arg) => arg.replace('proxy.json', 'examples/mcp/proxy.config.json'));
      expect(() =>
        parseProxyArgs(args.map((arg) => (arg.endsWith('.json') ? `${root}${arg}` : arg))),
      ).not.toThrow();
    }
    const proxyJson = jsonBlocks.find(
      (block) => typeof block === 'object' && block !== null && 'defaults' in block,
    );
    expect(() => checkConfig(proxyJson)).not.toThrow();
    expect(proxyJson).toEqual(
      JSON.parse(readFileSync(new URL('../../examples/mcp/proxy.config.json', import.meta.url), 'utf8')),
    );
  });

  it('runs the "from this repository" entry as a host would, and its tools answer through the proxy', async () => {
    const entry = hostConfigs.at(-1)?.mcpServers['flaky-demo'];
    expect(entry?.command).toBe('node');
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: entry?.args ?? [],
      cwd: root,
      stderr: 'ignore',
    });
    const client = new Client({ name: 'host', version: '1.0.0' });
    await client.connect(transport);
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('fetchPage');
      const result = await client.callTool({ name: 'searchDocs', arguments: { query: 'x' } });
      expect(result.isError).toBeUndefined();
    } finally {
      await client.close();
    }
  });
});

describe('examples/mcp/demo.ts', () => {
  it('prints a timeline with a restart and retry, a timeout cancelled upstream, one charge and a cancellation', async () => {
    const { code, stdout } = await new Promise<{ code: number; stdout: string }>((resolve) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', 'examples/mcp/demo.ts'],
        { cwd: root, timeout: 60_000 },
        (error, out) => resolve({ code: error === null ? 0 : 1, stdout: out }),
      );
    });
    expect(code).toBe(0);
    expect(stdout).toMatch(/→ tools\/list: searchDocs, fetchPage, slowReport, chargeCard, wait/);
    expect(stdout).toMatch(/upstream\.exited/);
    expect(stdout).toMatch(/dispatch\.success tool=fetchPage .*attempts=2/);
    expect(stdout).toMatch(/← ✓ \{"url":"https:\/\/example\.com","bytes":1024\}/);
    expect(stdout).toMatch(/← ✗ error \(timeout, after 1 attempt\)/);
    expect(stdout).toMatch(/slowReport cancelled \(DispatchError: "slowReport" timed out after 500 ms/);
    expect(stdout.match(/"chargesSoFar":1/g)).toHaveLength(2);
    expect(stdout).toMatch(/← cancelled: .*user pressed stop/);
    expect(stdout).toMatch(/\ndone\n$/);
  });
});
