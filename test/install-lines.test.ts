// A user finds an install line for the package and for each host: in the README's Install section
// and at the top of each integration guide, naming the peer that subpath needs.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const peers = Object.keys(JSON.parse(read('package.json')).peerDependencies as Record<string, string>);

const guides: Record<string, readonly string[]> = {
  'docs/integrations/openai.md': ['openai'],
  'docs/integrations/anthropic.md': ['@anthropic-ai/sdk'],
  'docs/integrations/ai-sdk.md': ['ai'],
  'docs/integrations/langchain.md': ['langchain', '@langchain/core'],
  'docs/integrations/openai-agents.md': ['@openai/agents'],
  'docs/integrations/mcp.md': ['@modelcontextprotocol/sdk'],
  'docs/integrations/otel.md': ['@opentelemetry/api'],
  'docs/scale-out.md': ['redis', 'ioredis'],
  'docs/integrations/postgres.md': ['pg'],
  'docs/integrations/restate.md': ['@restatedev/restate-sdk'],
  'docs/integrations/dbos.md': ['@dbos-inc/dbos-sdk'],
};

describe('install lines', () => {
  it('gives the README an install line for the package and one for every peer', () => {
    const readme = read('README.md');
    expect(readme).toMatch(/^npm install tool-dispatcher zod$/m);
    const installed = new Set(
      [...readme.matchAll(/npm install tool-dispatcher ([^`\n]+)/g)].flatMap((match) =>
        (match[1] as string).trim().split(/\s+/),
      ),
    );
    const missing = peers.filter((peer) => !installed.has(peer));
    expect(missing).toEqual([]);
  });

  it.each(Object.entries(guides))('opens %s with its install line', (path, needs) => {
    const opening = read(path).split('\n').slice(0, 6).join('\n');
    const line = /^npm install tool-dispatcher .*$/m.exec(opening)?.[0] ?? '';
    for (const peer of needs) expect(line).toContain(peer);
  });

  it("names every runtime dependency in the README's Install section, the MCP SDK packages too", () => {
    const readme = read('README.md');
    const install = readme.slice(
      readme.indexOf('## Install'),
      readme.indexOf('\n## ', readme.indexOf('## Install') + 1),
    );
    const dependencies = Object.keys(JSON.parse(read('package.json')).dependencies as Record<string, string>);
    expect(dependencies).toContain('@modelcontextprotocol/server');
    expect(
      dependencies.filter((name) => !install.includes(`\`${name}\``) && !install.includes(` ${name} `)),
    ).toEqual([]);
    expect(install).not.toMatch(/one runtime dependency/i);
  });

  it('covers every peer in some guide', () => {
    const covered = new Set(Object.values(guides).flat());
    expect(peers.filter((peer) => !covered.has(peer))).toEqual([]);
  });
});

describe('the Node version', () => {
  it('is one minimum in package.json, the lockfile and the README', () => {
    const engines = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;
    const locked = (
      JSON.parse(read('package-lock.json')) as { packages: Record<string, { engines?: { node?: string } }> }
    ).packages['']?.engines?.node;
    expect(engines).toBe('>=20.19');
    expect(locked).toBe(engines);
    expect(read('README.md')).toContain('Node 20.19 or later');
  });
});
