// Every link in the README, the CHANGELOG and docs/**/*.md resolves: a relative link names a file
// or folder of the repository, and a `#fragment` names a heading (GitHub's anchor for it) or an
// explicit anchor of the file it points into. test/packed-links.test.ts checks the same links
// against the tarball's file list.

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');

/** The guides checked: README.md, CHANGELOG.md and every .md under docs/ but the generated API. */
function guides(): string[] {
  const found = ['README.md', 'CHANGELOG.md'];
  const walk = (folder: string) => {
    for (const name of readdirSync(join(root, folder))) {
      const path = `${folder}/${name}`;
      if (path === 'docs/api') continue;
      if (statSync(join(root, path)).isDirectory()) walk(path);
      else if (name.endsWith('.md')) found.push(path);
    }
  };
  walk('docs');
  return found;
}

/** The markdown with fenced code blocks and inline code spans blanked, so neither is read. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '``');
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, each space a hyphen. */
function slugOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/<[^>]*>/g, '')
    .replace(/[^\p{L}\p{N}\p{M}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a file offers: its headings' slugs (repeats numbered as GitHub does) and ids. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const withoutFences = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const [, heading] of withoutFences.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const slug = slugOf(heading as string);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  for (const [, id] of markdown.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(id as string);
  return anchors;
}

/** The targets of a file's inline links, `[text](target)`, outside code. */
function linksOf(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((match) => match[1] as string);
}

describe('the docs’ links', () => {
  it('reads headings as GitHub anchors them', () => {
    expect(slugOf("The gate's rules")).toBe('the-gates-rules');
    expect(slugOf('idempotency({ ttlMs = 60_000, store })')).toBe('idempotency-ttlms--60_000-store-');
    expect(slugOf('Policy: approvalGate, outputGuard')).toBe('policy-approvalgate-outputguard');
  });

  it('resolves every relative link and every #anchor', () => {
    const checked = guides();
    expect(checked).toContain('docs/integrations/mcp.md');
    const broken: string[] = [];
    for (const guide of checked) {
      for (const link of linksOf(readFileSync(join(root, guide), 'utf8'))) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue;
        const [path = '', fragment] = link.split('#') as [string, string | undefined];
        const target = path === '' ? guide : normalize(join(dirname(guide), decodeURI(path)));
        if (relative(root, join(root, target)).startsWith('..') || !existsSync(join(root, target))) {
          broken.push(`${guide} → ${link} (no such file)`);
          continue;
        }
        if (fragment === undefined || fragment === '' || !target.endsWith('.md')) continue;
        if (!anchorsOf(readFileSync(join(root, target), 'utf8')).has(decodeURIComponent(fragment))) {
          broken.push(`${guide} → ${link} (no such anchor)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });
});
