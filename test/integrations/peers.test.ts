// integrations/peers.ts and the subpaths' entry.ts files: a missing optional peer is one line
// naming it and its install command, and each entry exports what its index.ts does.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { importBesidePeers, installCommand, missingPeers, packageVersion } from '../../integrations/peers.js';

const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
  peerDependencies: Record<string, string>;
  exports: Record<string, { types: string; default: string }>;
};
const absent = 'tool-dispatcher-test-absent-package';
const linkFailure = () => Promise.reject(new Error('Cannot find package while linking'));

describe('importBesidePeers', () => {
  it('throws one line naming the missing peer and its install command, with no frames to print', async () => {
    const error = await importBesidePeers('tool-dispatcher/x', ['zod', absent], linkFailure).catch(
      (thrown: unknown) => thrown as Error & { code?: string },
    );
    const line = `tool-dispatcher/x needs the package "${absent}": npm install ${absent}`;
    expect(error.message).toBe(line);
    expect(error.stack).toBe(`Error: ${line}`);
    expect(error.code).toBe('ERR_MODULE_NOT_FOUND');
    expect(Object.keys(error)).toEqual([]);
    expect(error.cause).toBeUndefined();
  });

  it('names every missing peer and installs each within the range package.json accepts', async () => {
    const error = await importBesidePeers('tool-dispatcher/x', [absent, `${absent}-too`], linkFailure).catch(
      (thrown: unknown) => thrown as Error,
    );
    expect(error.message).toBe(
      `tool-dispatcher/x needs the packages "${absent}" and "${absent}-too": npm install ${absent} ${absent}-too`,
    );
    const { ai, '@openai/agents': agents } = manifest.peerDependencies;
    expect(installCommand(['ai', '@openai/agents'])).toBe(
      `npm install "ai@${ai}" "@openai/agents@${agents}"`,
    );
  });

  it('rethrows a failure that is not a missing peer as it came', async () => {
    const failure = new SyntaxError('broken module');
    await expect(importBesidePeers('tool-dispatcher/x', ['zod'], () => Promise.reject(failure))).rejects.toBe(
      failure,
    );
    expect(missingPeers(['zod', '@modelcontextprotocol/sdk', absent])).toEqual([absent]);
  });

  it("reads the package's own version", () => {
    expect(packageVersion()).toBe(manifest.version);
  });
});

describe("the subpaths' run-time entries", () => {
  const gated = Object.entries(manifest.exports).filter(([, target]) =>
    target.default?.endsWith('/entry.js'),
  );

  it('are the run-time face of every subpath whose code loads a peer', () => {
    expect(gated.map(([subpath]) => subpath).sort()).toEqual([
      './ai-sdk',
      './dbos',
      './langchain',
      './mcp',
      './openai-agents',
      './otel',
      './restate',
    ]);
  });

  it.each(gated)('%s exports the same values as its index.ts', async (_subpath, target) => {
    const source = (file: string) =>
      `../../${file.replace(/^\.\/dist\//, '').replace(/\.(d\.ts|js)$/, '.ts')}`;
    expect(source(target.types)).toBe(source(target.default).replace(/entry\.ts$/, 'index.ts'));
    const entry = (await import(source(target.default))) as Record<string, unknown>;
    const index = (await import(source(target.types))) as Record<string, unknown>;
    expect(Object.keys(entry).sort()).toEqual(Object.keys(index).sort());
    for (const name of Object.keys(index)) expect(entry[name]).toBe(index[name]);
  });
});
