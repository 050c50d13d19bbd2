// The `tool-dispatcher` command itself, from the sources: --version, and what it says when the
// MCP SDK (an optional peer that `npx tool-dispatcher` alone never installs) is not there.

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const cli = fileURLToPath(new URL('../../../integrations/mcp/cli.ts', import.meta.url));
const hider = fileURLToPath(new URL('../../helpers/hidden-packages.ts', import.meta.url));
const { version } = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

function run(args: string[], hidden: string[] = []) {
  return spawnSync(process.execPath, ['--import', 'tsx', '--import', hider, cli, ...args], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, HIDDEN_PACKAGES: hidden.join(',') },
  });
}

describe('tool-dispatcher --version', () => {
  it.each(['--version', '-v', 'mcp-proxy --version', 'mcp-proxy -v -- node server.js'])(
    'prints the version of package.json for `%s`',
    (line) => {
      const answer = run(line.split(' '));
      expect(answer.stdout).toBe(`${version}\n`);
      expect(answer.stderr).toBe('');
      expect(answer.status).toBe(0);
    },
  );
});

describe('tool-dispatcher --help', () => {
  // Regression (issue 33, item 9): the help text went to stderr, so `--help | less` showed nothing.
  it.each(['--help', '-h', 'mcp-proxy --help', 'mcp-proxy -h -- node server.js'])(
    'prints the usage to stdout and exits 0 for `%s`',
    (line) => {
      const answer = run(line.split(' '));
      expect(answer.stdout).toMatch(/^Usage: tool-dispatcher mcp-proxy/);
      expect(answer.stderr).toBe('');
      expect(answer.status).toBe(0);
    },
  );

  it('prints the usage to stderr and exits 2 for a bare `tool-dispatcher`', () => {
    const answer = run([]);
    expect(answer).toMatchObject({ status: 2, stdout: '' });
    expect(answer.stderr).toMatch(/^Usage: tool-dispatcher mcp-proxy/);
  });
});

describe('tool-dispatcher without @modelcontextprotocol/sdk', () => {
  const sdk = ['@modelcontextprotocol/sdk'];

  // Regression (issue 19, item 1): `npx tool-dispatcher mcp-proxy` died with Node's raw
  // ERR_MODULE_NOT_FOUND stack, since npx does not install optional peers. Issue 23 made the v2
  // MCP packages dependencies, so the command now runs without the v1 SDK at all: it gets as far
  // as starting the upstream, and says that it did not start.
  it('runs mcp-proxy without the v1 SDK, failing only on the upstream, with no line about the SDK', () => {
    const answer = run(['mcp-proxy', '--', process.execPath, 'server.js'], sdk);
    expect(answer.status).toBe(1);
    expect(answer.stdout).toBe('');
    expect(answer.stderr).not.toMatch(/needs @modelcontextprotocol\/sdk/);
    expect(answer.stderr).toMatch(
      /^tool-dispatcher: The upstream MCP server \(.*server\.js\) did not start/m,
    );
  });

  it('still answers --version, --help and a bad command line', () => {
    expect(run(['--version'], sdk)).toMatchObject({ status: 0, stdout: `${version}\n` });
    const help = run(['mcp-proxy', '--help'], sdk);
    expect(help).toMatchObject({ status: 0, stderr: '' });
    expect(help.stdout).toMatch(/^Usage: tool-dispatcher mcp-proxy/);
    const bad = run(['mcp-proxy', '--timeout-ms', 'soon', '--', 'node'], sdk);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/^tool-dispatcher: --timeout-ms must be a number/);
  });
});
