// Every relative link in the README and the shipped guides points at a file the tarball ships,
// so the links work in node_modules as they do in the repository.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');

function packedFiles(): Set<string> {
  // --ignore-scripts: the list is what `files` selects; no build is needed to read it.
  const json = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const [pack] = JSON.parse(json) as [{ files: { path: string }[] }];
  return new Set(pack.files.map((file) => file.path));
}

function relativeLinks(markdown: string): string[] {
  return [...markdown.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((match) => (match[1] as string).split('#')[0] as string)
    .filter((target) => target !== '' && !/^[a-z]+:/i.test(target));
}

describe('the packed package', () => {
  it('ships every file the README and its guides link to', () => {
    const files = packedFiles();
    const guides = [...files].filter((path) => path === 'README.md' || /^docs\/.*\.md$/.test(path));
    expect(guides).toContain('docs/error-envelope.md');
    const dead: string[] = [];
    for (const guide of guides) {
      for (const target of relativeLinks(readFileSync(join(root, guide), 'utf8'))) {
        const path = normalize(join(dirname(guide), target)).replace(/\/$/, '');
        const shipped = files.has(path) || [...files].some((file) => file.startsWith(`${path}/`));
        if (!shipped) dead.push(`${guide} → ${target}`);
      }
    }
    expect(dead).toEqual([]);
  });
});
