/**
 * @module The host SDK version the integration tests load: under `npm run test:matrix` the newest
 * release from node_modules/.matrix (vitest.matrix.config.ts redirects the host's imports), else
 * the locked devDependency. Proves the redirect reaches the modules our bridges import.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// The installed devDependency's version, read from disk (not through the resolver under test).
function lockedVersion(packageName: string): string {
  const manifest = new URL(`../../node_modules/${packageName}/package.json`, import.meta.url);
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}

function expectedVersion(packageName: string): string {
  return process.env.TD_MATRIX_PACKAGE === packageName
    ? (process.env.TD_MATRIX_VERSION as string)
    : lockedVersion(packageName);
}

describe('host SDK versions under test', () => {
  it('loads the ai version this run tests', async () => {
    const manifest = await import('ai/package.json', { with: { type: 'json' } });
    expect(manifest.default.version).toBe(expectedVersion('ai'));
  });

  it('loads the openai version this run tests', async () => {
    const { VERSION } = await import('openai/version');
    expect(VERSION).toBe(expectedVersion('openai'));
  });

  it('loads the @anthropic-ai/sdk version this run tests', async () => {
    const { VERSION } = await import('@anthropic-ai/sdk/version');
    expect(VERSION).toBe(expectedVersion('@anthropic-ai/sdk'));
  });

  it('loads the cockatiel version this run tests (the bench stack)', async () => {
    const manifest = await import('cockatiel/package.json', { with: { type: 'json' } });
    expect(manifest.default.version).toBe(expectedVersion('cockatiel'));
  });
});
