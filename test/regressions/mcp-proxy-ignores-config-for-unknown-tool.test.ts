// Regression (issue 19, item 9): a `tools` entry of the proxy's config that names no upstream tool
// (a typo: `get_sum` for `get-sum`) was ignored without a word, so the timeout it set was lost.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { createMcpProxy } from '../../integrations/mcp/proxy.js';
import { serveHttp } from '../integrations/mcp/fixtures/http-upstream.js';
import { buildOddServer } from '../integrations/mcp/fixtures/odd-upstream.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

it('stops at start naming the unknown tools and the upstream’s own', async () => {
  const upstream = await serveHttp(() => buildOddServer());
  try {
    await expect(
      createMcpProxy({
        upstream: { url: upstream.url },
        config: { tools: { get_sum: { timeoutMs: 50 }, echo: { timeoutMs: 50 } } },
        logLevel: 'silent',
      }),
    ).rejects.toThrow(
      new TypeError(
        'config.tools names a tool the upstream does not have: "get_sum"; its tools are "get-sum", "echo", "deepResult"',
      ),
    );
  } finally {
    await upstream.close();
  }
});

it('says so on the command line (exit 2), not that the upstream did not start', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-proxy-unknown-tool-'));
  try {
    const config = join(dir, 'proxy.json');
    writeFileSync(config, JSON.stringify({ tools: { get_sum: { timeoutMs: 50 } } }));
    const fixture = fileURLToPath(new URL('../integrations/mcp/fixtures/odd-upstream.ts', import.meta.url));
    const run = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        join(root, 'integrations/mcp/cli.ts'),
        'mcp-proxy',
        '--config',
        config,
        '--',
        process.execPath,
        '--import',
        'tsx',
        fixture,
      ],
      { cwd: root, encoding: 'utf8' },
    );
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      /^tool-dispatcher: config\.tools names a tool the upstream does not have: "get_sum"; its tools are "get-sum"/,
    );
    expect(run.stderr).not.toMatch(/did not start/);
    expect(run.status).toBe(2);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
